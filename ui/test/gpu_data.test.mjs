// gpu/data.ts: /api/v1/metrics answers lined up for uPlot (merged x, gaps
// only where a line's own points are far apart), units and numbers as text,
// selectors.
import assert from "node:assert/strict";
import { test } from "node:test";
import { GPU_METRICS, align, findBreaks, formatNumber, formatValue, meanOf, sameValues, scaleFor, selectorOf } from "../src/gpu/data.ts";

test("align merges the lines' times; a line has no value where only another has a point", () => {
  const a = align(
    [
      { points: [[1000, 1, 2, 3], [3000, 1, 2, 5]], field: "avg" },
      // Out of order, drawn downward (PCIe RX).
      { points: [[2000, 0, 9, 4], [1000, 0, 8, 2]], field: "max", negate: true },
      // JSON has no NaN: a null is a missing value.
      { points: [[3000, null, null, null]], field: "min" },
    ],
    1000,
  );
  assert.deepEqual(a.xs, [1, 2, 3]);
  assert.deepEqual(a.ys, [
    [3, undefined, 5],
    [-8, -9, undefined],
    [undefined, undefined, undefined],
  ]);
  assert.deepEqual(a.counts, [2, 2, 0]);
  assert.deepEqual(a.breaks, [[], [], []]);
});

test("align of no lines, and of a line without points", () => {
  assert.deepEqual(align([], 1000), { xs: [], ys: [], breaks: [], counts: [] });
  assert.deepEqual(align([{ points: [], field: "avg" }], 1000), { xs: [], ys: [[]], breaks: [[]], counts: [0] });
});

test("align reports a line's breaks in seconds", () => {
  const pts = [0, 1000, 2000, 10000, 11000].map((t) => [t, 1, 1, 1]);
  assert.deepEqual(align([{ points: pts, field: "avg" }], 1000).breaks, [[[2, 10]]]);
});

test("findBreaks: gaps over 2.5 usual intervals (the median, at least one step)", () => {
  const pts = [0, 1000, 2000, 10000, 11000].map((t) => [t, 1, 1, 1]);
  assert.deepEqual(findBreaks(pts, 1000), [[2000, 10000]]);
  // 3 s after points 1 s apart is a break; 2.5 s is not.
  const at = (...ts) => ts.map((t) => [t, 1, 1, 1]);
  assert.deepEqual(findBreaks(at(0, 1000, 2000, 5000, 6000), 1000), [[2000, 5000]]);
  assert.deepEqual(findBreaks(at(0, 1000, 2000, 4500, 5500), 1000), []);
  // Steps of 4 s: 8 s is not 2.5 of them.
  assert.deepEqual(findBreaks(pts, 4000), []);
  assert.deepEqual(findBreaks([[0, 1, 1, 1]], 1000), []);
  assert.deepEqual(findBreaks([], 1000), []);
});

test("meanOf", () => {
  const pts = [[0, 1, 5, 2], [1, 3, 7, 4]];
  assert.equal(meanOf(pts), 3);
  assert.equal(meanOf(pts, "max"), 6);
  assert.equal(meanOf(pts, "min"), 2);
  assert.equal(meanOf([]), 0);
});

test("sameValues: one reference line when every GPU has the same values", () => {
  const s = (...avgs) => ({ labels: {}, points: avgs.map((v, i) => [i, 0, 0, v]) });
  assert.equal(sameValues([]), true);
  assert.equal(sameValues([s(300)]), true);
  assert.equal(sameValues([s(300, 350), s(350, 300)]), true);
  assert.equal(sameValues([s(300), s(350)]), false);
  assert.equal(sameValues([s(300, 350), s(300)]), false);
});

test("scaleFor picks the unit by the largest value", () => {
  assert.deepEqual(scaleFor("bytes", 3 * 2 ** 30), { div: 2 ** 30, suffix: "GiB" });
  assert.deepEqual(scaleFor("bytes", 5 * 2 ** 20), { div: 2 ** 20, suffix: "MiB" });
  assert.deepEqual(scaleFor("bytes", 100), { div: 1024, suffix: "KiB" });
  assert.deepEqual(scaleFor("bytes_per_second", 2e9), { div: 1e9, suffix: "GB/s" });
  assert.deepEqual(scaleFor("bytes_per_second", 2e6), { div: 1e6, suffix: "MB/s" });
  assert.deepEqual(scaleFor("bytes_per_second", 10), { div: 1e3, suffix: "kB/s" });
  assert.deepEqual(scaleFor("percent", 50), { div: 1, suffix: "%" });
  assert.deepEqual(scaleFor("mhz", 1980), { div: 1, suffix: "MHz" });
  assert.deepEqual(scaleFor("watts", 700), { div: 1, suffix: "W" });
  assert.deepEqual(scaleFor("celsius", 80), { div: 1, suffix: "°C" });
  assert.deepEqual(scaleFor("joules", 2e6), { div: 3.6e6, suffix: "kWh" });
  assert.deepEqual(scaleFor("joules", 5e5), { div: 1e3, suffix: "kJ" });
  assert.deepEqual(scaleFor("count", 3), { div: 1, suffix: "" });
  assert.deepEqual(scaleFor("widgets", 3), { div: 1, suffix: "widgets" });
});

test("formatNumber: at most 3 significant digits, no exponent, the sign kept", () => {
  assert.equal(formatNumber(0), "0");
  assert.equal(formatNumber(123.4), "123");
  assert.equal(formatNumber(-150.6), "-151");
  assert.equal(formatNumber(12.34), "12.3");
  assert.equal(formatNumber(10.04), "10");
  assert.equal(formatNumber(1.234), "1.23");
  assert.equal(formatNumber(0.01234), "0.012");
  assert.equal(formatNumber(0.5), "0.5");
  assert.equal(formatNumber(123456789), "123456789");
});

test("formatValue", () => {
  assert.equal(formatValue(50, scaleFor("percent", 50)), "50%");
  assert.equal(formatValue(1.5 * 2 ** 30, scaleFor("bytes", 2 ** 31)), "1.5 GiB");
  assert.equal(formatValue(7, scaleFor("count", 7)), "7");
});

test("selectorOf leaves out empty labels and quotes values", () => {
  assert.equal(selectorOf({ node: "a", gpu: "0" }), '{node="a", gpu="0"}');
  assert.equal(selectorOf({ node: "a", pid: "" }), '{node="a"}');
  assert.equal(selectorOf({ node: 'x"y' }), '{node="x\\"y"}');
  assert.equal(selectorOf({}), "{}");
});

test("every GPU metric is grouped by gpu first: nothing is summed across GPUs", () => {
  for (const m of GPU_METRICS) assert.equal(m.groupBy.split(",")[0], "gpu", m.name);
  assert.equal(new Set(GPU_METRICS.map((m) => m.name)).size, GPU_METRICS.length);
});
