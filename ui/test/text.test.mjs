// The small pure modules: time.ts (the API's time syntax, durations),
// units.ts (a profile's values as text), base/dom.ts's text helpers.
import assert from "node:assert/strict";
import { test } from "node:test";
import { apiDuration, compactNanos, formatDuration, formatNanos, formatTime, isRelative, parseDurationMs, resolveTime, wholeSeconds } from "../src/time.ts";
import {
  blankMeaning,
  compactMicrojoules,
  formatJoules,
  formatMicrojoules,
  formatValue,
  isEnergyUnit,
  isPerSecondType,
  isTimeUnit,
  laneNoun,
  quantityNoun,
  timeNoun,
  typeLabel,
  unitOfType,
  valueNoun,
} from "../src/units.ts";
import { errorText, escapeHtml } from "../src/base/dom.ts";

test("parseDurationMs: units ms s m h d w, concatenated, nothing else", () => {
  assert.equal(parseDurationMs("1h30m"), 5_400_000);
  assert.equal(parseDurationMs("90s"), 90_000);
  assert.equal(parseDurationMs("250ms"), 250);
  assert.equal(parseDurationMs("1w"), 604_800_000);
  for (const bad of ["", "h", "1x", "1h 30m", "1.5h", "-1h"]) assert.equal(parseDurationMs(bad), null, bad);
});

test("resolveTime: now, now-<duration>, unix ms, RFC 3339", () => {
  const now = 1_764_417_600_000;
  assert.equal(resolveTime("now", now), now);
  assert.equal(resolveTime(" now-5m ", now), now - 300_000);
  assert.equal(resolveTime("now-soon", now), null);
  assert.equal(resolveTime("1764417000000", now), 1_764_417_000_000);
  assert.equal(resolveTime("2026-11-29T12:00:00Z", now), Date.UTC(2026, 10, 29, 12));
  assert.equal(resolveTime("2026-11-29T14:00:00.25+02:00", now), Date.UTC(2026, 10, 29, 12, 0, 0, 250));
  assert.equal(resolveTime("yesterday", now), null);
  assert.equal(isRelative("now-1h"), true);
  assert.equal(isRelative("1764417000000"), false);
});

test("formatDuration and formatTime", () => {
  assert.equal(formatDuration(86_400e3), "1d");
  assert.equal(formatDuration(36 * 3600e3), "1.5d");
  assert.equal(formatDuration(5_400e3), "1.5h");
  assert.equal(formatDuration(90e3), "1.5m");
  assert.equal(formatDuration(5e3), "5s");
  assert.equal(formatDuration(1500), "1.5s");
  assert.equal(formatTime(Date.UTC(2026, 0, 2, 3, 4, 5)), "2026-01-02 03:04:05");
});

test("apiDuration: exact, and parseDurationMs reads it back as the same length", () => {
  assert.equal(apiDuration(5_400e3), "1h30m");
  assert.equal(apiDuration(198e3), "3m18s");
  assert.equal(apiDuration(1500), "1s500ms");
  assert.equal(apiDuration(86_400e3), "1d");
  assert.equal(apiDuration(0), "0s");
  for (const ms of [1, 999, 1500, 90e3, 2_700e3, 5_400e3, 36 * 3600e3, 200e3 + 7]) {
    assert.equal(parseDurationMs(apiDuration(ms)), ms, String(ms));
  }
});

test("compactNanos: axis labels of at most 5 characters", () => {
  assert.equal(compactNanos(0), "0");
  assert.equal(compactNanos(200e6), "0.2s");
  assert.equal(compactNanos(1.5e9), "1.5s");
  assert.equal(compactNanos(12e9), "12s");
  assert.equal(compactNanos(40e6), "40ms");
  assert.equal(compactNanos(5e6), "5ms");
  assert.equal(compactNanos(800e3), "800µs");
  for (const v of [1, 999, 5e4, 3e5, 7e6, 9.9e7, 2.5e8, 4e10]) assert.ok(compactNanos(v).length <= 5, `${v}: ${compactNanos(v)}`);
});

test("wholeSeconds: a sub-second range widens to the seconds it touches", () => {
  assert.deepEqual(wholeSeconds(1_700_000_000_200, 1_700_000_000_700), [1_700_000_000_000, 1_700_000_001_000]);
  assert.deepEqual(wholeSeconds(1_700_000_000_000, 1_700_000_003_000), [1_700_000_000_000, 1_700_000_003_000]);
});

test("formatNanos: three significant digits at a readable scale", () => {
  assert.equal(formatNanos(850), "850 ns");
  assert.equal(formatNanos(12_345), "12.3 µs");
  assert.equal(formatNanos(4.56e6), "4.56 ms");
  assert.equal(formatNanos(123e6), "123 ms");
  assert.equal(formatNanos(1.234e9), "1.23 s");
  assert.equal(formatNanos(-2500), "-2.50 µs");
});

test("formatValue and valueNoun per unit", () => {
  const cpu = { type: "cpu", unit: "samples", periodNanos: 10_000_000 };
  const gpu = { type: "gpu_time", unit: "nanoseconds", periodNanos: 0 };
  assert.equal(formatValue(1234, cpu), "1,234 (12.3 s)");
  assert.equal(formatValue(4.56e6, gpu), "4.56 ms");
  assert.equal(formatValue(2.5, { ...cpu, periodNanos: 0 }), "2.5");
  assert.equal(formatValue(7, { type: "x", unit: "count", periodNanos: 0 }), "7");
  assert.equal(isTimeUnit(gpu), true);
  assert.equal(valueNoun(gpu), "GPU time");
  assert.equal(valueNoun({ ...gpu, type: "cpu" }), "time");
  assert.equal(valueNoun(cpu), "samples");
  assert.equal(valueNoun({ ...cpu, unit: "" }), "samples");
});

test("every stored type has a plain name; gpu_wait is time per second like off_cpu", () => {
  assert.deepEqual(["cpu", "off_cpu", "gpu_time", "gpu_wait", "heap"].map(typeLabel), ["CPU time", "off-CPU time", "GPU time", "GPU wait", "heap"]);
  assert.deepEqual(["cpu", "off_cpu", "gpu_time", "gpu_wait", "heap"].map(timeNoun), ["CPU time", "off-CPU time", "GPU time", "GPU wait time", "time"]);
  assert.deepEqual(["cpu", "off_cpu", "gpu_time", "gpu_wait"].map(isPerSecondType), [false, true, true, true]);
  assert.equal(valueNoun({ type: "gpu_wait", unit: "nanoseconds", periodNanos: 0 }), "GPU wait time");
  assert.equal(formatValue(2.5e9, { type: "gpu_wait", unit: "nanoseconds", periodNanos: 0 }), "2.50 s");
  assert.equal(blankMeaning("gpu_wait"), "not waiting on the GPU");
  assert.equal(blankMeaning("off_cpu"), "not blocked");
  assert.equal(blankMeaning("cpu"), "off CPU");
  assert.deepEqual(["cpu", "off_cpu", "gpu_time", "gpu_wait", "heap"].map(laneNoun), ["CPU", "off-CPU", "GPU", "GPU wait", ""]);
});

test("gpu_energy: labelled GPU energy, per second like gpu_time, microjoules read as J / kJ / MJ / mJ", () => {
  const energy = { type: "gpu_energy", unit: "microjoules", periodNanos: 0 };
  assert.equal(typeLabel("gpu_energy"), "GPU energy");
  assert.equal(isPerSecondType("gpu_energy"), true);
  assert.deepEqual(["gpu_energy", "gpu_time", "off_cpu", "cpu", "heap"].map(unitOfType), ["microjoules", "nanoseconds", "nanoseconds", "samples", "samples"]);
  assert.equal(isEnergyUnit(energy), true);
  assert.equal(isTimeUnit(energy), false);
  // What the flame graph's tooltips, the top table, the sandwich and the diff show (formatValue).
  assert.equal(formatValue(12.3e6, energy), "12.3 J");
  assert.equal(formatValue(1.45e9, energy), "1.45 kJ");
  assert.equal(formatValue(3.6e12, energy), "3.60 MJ");
  assert.equal(formatValue(4200, energy), "4.20 mJ");
  assert.equal(formatValue(850, energy), "850 µJ");
  assert.equal(formatValue(0, energy), "0 J");
  assert.equal(formatValue(999.7e6, energy), "1.00 kJ");
  assert.equal(formatValue(-2.5e6, energy), "-2.50 J");
  assert.equal(formatMicrojoules(123.4e6), "123 J");
  assert.equal(formatJoules(90_000), "90.0 kJ");
  assert.equal(formatJoules(1.2e9), "1.20 GJ");
  // The timeline's axis (50 px).
  assert.deepEqual([0, 850, 40e3, 850e6, 12e9, 1.5e12].map(compactMicrojoules), ["0", "850µJ", "40mJ", "850J", "12kJ", "1.5MJ"]);
  assert.equal(valueNoun(energy), "GPU energy");
  assert.equal(valueNoun({ ...energy, type: "other" }), "energy");
  assert.equal(quantityNoun("gpu_energy"), "GPU energy");
  assert.equal(quantityNoun("gpu_time"), "GPU time");
  assert.equal(blankMeaning("gpu_energy"), "no kernel of the thread's running");
  assert.equal(laneNoun("gpu_energy"), "");
});

test("escapeHtml and errorText", () => {
  assert.equal(escapeHtml(`<a href="x">'&`), "&#60;a href=&#34;x&#34;&#62;&#39;&#38;");
  assert.equal(escapeHtml(undefined), "");
  assert.equal(escapeHtml("plain"), "plain");
  assert.equal(errorText(new Error("boom")), "boom");
  assert.equal(errorText(42), "42");
});
