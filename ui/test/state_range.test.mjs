// state.ts (the URL's query string ⇄ the view state) and range.ts (the
// toolbar's range arithmetic), with a fixed now. Times print in UTC (the
// runner sets TZ=UTC).
import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULTS, commonParams, isLanding, readState, writeState } from "../src/state.ts";
import { diffBase, endingNow, lastMinute, rangeLabel, spanMs, zoomedOut } from "../src/range.ts";
import { fromLocalInput, toLocalInput } from "../src/time.ts";

const NOW = Date.UTC(2026, 10, 29, 12, 0, 0);
const H = 3600e3;

test("readState: defaults, known keys, and fallbacks for values it does not know", () => {
  assert.deepEqual(readState(""), DEFAULTS);
  assert.deepEqual(readState("?foo=1"), DEFAULTS);
  const s = readState("?view=table&live=1&search=x&orient=flame&color=kind&sort=total&ksort=p95&gpu=0&selector=%7Bpid%3D%2212%22%7D");
  assert.deepEqual(s, { ...DEFAULTS, view: "table", live: true, search: "x", orient: "flame", color: "kind", sort: "total", ksort: "p95", gpu: "0", selector: '{pid="12"}' });
  assert.equal(readState("?group=thread").group, "thread");
  assert.equal(readState("?view=threads&type=off_cpu").view, "threads");
  const energy = readState("?view=energy&egroup=pod&pue=1.4&carbon=50&price=0.3");
  assert.deepEqual(energy, { ...DEFAULTS, view: "energy", egroup: "pod", pue: "1.4", carbon: "50", price: "0.3" });
  assert.equal(writeState(energy), "?view=energy&egroup=pod&pue=1.4&carbon=50&price=0.3");
  assert.equal(readState("?view=energy&egroup=rack").egroup, "node");
  const bad = readState("view=nope&orient=up&color=red&sort=x&ksort=y&live=yes&group=cpu");
  assert.deepEqual(bad, DEFAULTS);
});

test("writeState writes the view, then only what differs from the defaults, in a fixed order", () => {
  assert.equal(writeState(DEFAULTS), "?view=flame");
  assert.equal(writeState({ ...DEFAULTS, live: true, search: "a b", view: "table" }), "?view=table&search=a+b&live=1");
  assert.equal(writeState({ ...DEFAULTS, view: "insights", insight: "sync_heavy|pid=1" }), "?view=insights&insight=sync_heavy%7Cpid%3D1");
  const s = { ...DEFAULTS, view: "kernels", from: "1764417600000", to: "1764417610000", selector: '{node="a", comm=~"py.*"}', focus: "main;run", kernel: "gemm<float>" };
  assert.deepEqual(readState(writeState(s)), s);
});

test("isLanding: a URL that names no view", () => {
  assert.equal(isLanding(""), true);
  assert.equal(isLanding("?from=now-5m&selector=%7Bpid%3D%221%22%7D"), true);
  assert.equal(isLanding("?view=flame"), false);
  assert.equal(isLanding(writeState(DEFAULTS)), false);
  assert.equal(readState("?view=insights").view, "insights");
});

test("the flame graph's transforms round-trip through the URL; norec is 1 or nothing", () => {
  const s = { ...DEFAULTS, ffocus: '["f","libx.so",0]', hide: '[["a","",2],["b","app",0]]', bin: ".py", norec: "1" };
  assert.deepEqual(readState(writeState(s)), s);
  assert.equal(readState("?norec=yes").norec, "");
});

test("commonParams: the API's common parameters, no empty selector, granularity only for lines", () => {
  assert.deepEqual(commonParams(DEFAULTS), { type: "cpu", from: "now-1h", to: "now", selector: undefined, granularity: undefined });
  assert.deepEqual(commonParams({ ...DEFAULTS, type: "gpu_time", selector: "{}", lines: "1" }), {
    type: "gpu_time",
    from: "now-1h",
    to: "now",
    selector: "{}",
    granularity: "lines",
  });
  assert.equal(readState("?lines=yes").lines, "");
  assert.equal(readState("?lines=1").lines, "1");
});

test("rangeLabel", () => {
  assert.equal(rangeLabel({ from: "now-1h", to: "now" }, NOW), "last 1h");
  assert.equal(rangeLabel({ from: String(NOW - 1.5 * H), to: String(NOW) }, NOW), "2026-11-29 10:30:00 – 2026-11-29 12:00:00 (1.5h)");
  assert.equal(rangeLabel({ from: "now-2h", to: "now-1h" }, NOW), "2026-11-29 10:00:00 – 2026-11-29 11:00:00 (1h)");
  assert.equal(rangeLabel({ from: "yesterday", to: "now" }, NOW), "yesterday – now");
});

test("zoomedOut: a range that follows now doubles; another doubles around its middle, never past now", () => {
  assert.deepEqual(zoomedOut({ from: "now-1h", to: "now" }, NOW), { from: "now-2h" });
  assert.deepEqual(zoomedOut({ from: "now-12h", to: "now" }, NOW), { from: "now-1d" });
  // 45 minutes doubled: a length the API reads, not "now-1.5h".
  assert.deepEqual(zoomedOut({ from: "now-45m", to: "now" }, NOW), { from: "now-1h30m" });
  assert.deepEqual(zoomedOut({ from: String(NOW - 2 * H), to: String(NOW - H) }, NOW), { from: String(NOW - 2.5 * H), to: String(NOW - 0.5 * H) });
  // Ending 10 minutes ago: the new range ends now and starts twice the length before.
  assert.deepEqual(zoomedOut({ from: String(NOW - 70 * 60e3), to: String(NOW - 10 * 60e3) }, NOW), { from: String(NOW - 2 * H), to: String(NOW) });
});

test("lastMinute keeps following now, or takes the range's last minute", () => {
  assert.deepEqual(lastMinute({ from: "now-1h", to: "now" }, NOW), { from: "now-1m", to: "now" });
  assert.deepEqual(lastMinute({ from: String(NOW - H), to: String(NOW - 60e3) }, NOW), { from: String(NOW - 120e3), to: String(NOW - 60e3), live: false });
});

test("endingNow and spanMs", () => {
  assert.deepEqual(endingNow({ from: String(NOW - 3 * H), to: String(NOW - H) }, NOW), { from: "now-2h", to: "now" });
  assert.equal(spanMs({ from: "now-5m", to: "now" }, NOW), 300e3);
  // An unreadable end counts as the default's (now-1h, now).
  assert.equal(spanMs({ from: "soon", to: "now" }, NOW), H);
});

test("diffBase: the URL's base, or the range of the same length just before", () => {
  const s = { from: "now-1h", to: "now", base_from: "", base_to: "" };
  assert.deepEqual(diffBase(s, NOW), [String(NOW - 2 * H), String(NOW - H)]);
  assert.deepEqual(diffBase({ ...s, base_from: "now-1d", base_to: "now-23h" }, NOW), ["now-1d", "now-23h"]);
  // Two label sets: the same range, unless a base range is given too.
  assert.deepEqual(diffBase({ ...s, base_selector: '{pod="old"}' }, NOW), ["now-1h", "now"]);
  assert.deepEqual(diffBase({ ...s, base_selector: '{pod="old"}', base_from: "now-1d", base_to: "now-23h" }, NOW), ["now-1d", "now-23h"]);
  assert.deepEqual(diffBase({ ...s, from: String(NOW - 10e3), to: String(NOW - 4e3) }, NOW), [String(NOW - 16e3), String(NOW - 10e3)]);
});

test("toLocalInput / fromLocalInput: a datetime-local field's text, local time to the second", () => {
  const t = Date.UTC(2026, 10, 29, 12, 0, 5); // the tests run with TZ=UTC
  assert.equal(toLocalInput(t), "2026-11-29T12:00:05");
  assert.equal(fromLocalInput("2026-11-29T12:00:05"), t);
  assert.equal(fromLocalInput("2026-11-29T12:00"), t - 5000);
  assert.equal(fromLocalInput("2026-11-29T12:00:05.250"), t + 250);
  assert.equal(fromLocalInput(""), null);
  assert.equal(fromLocalInput("2026-02-30T00:00"), null);
  assert.equal(fromLocalInput("now-1h"), null);
});
