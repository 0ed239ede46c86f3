// flame/analysis.ts: search matches (a stack counted once), a function's
// sandwich over every place it occurs (recursion merged), the search
// summary and the speedscope export.
import assert from "node:assert/strict";
import { test } from "node:test";
import { functionMatches, nameMatcher, sandwich, searchMatches, searchSummary, toSpeedscope } from "../src/flame/analysis.ts";
import { fromProfile } from "../src/flame/model.ts";

// total(10) → main(10) → {spin(6, self 2) → spin(4, self 4), other(4, self 4)}
const d = fromProfile({
  version: 1,
  type: "cpu",
  unit: "samples",
  period_nanos: 10_000_000,
  total: 10,
  truncated: 0,
  names: ["total", "main", "spin", "other"],
  binaries: ["", "app", "lib.so"],
  nodes: [
    [-1, 0, 0, 3, 0, 10],
    [0, 1, 1, 0, 0, 10],
    [1, 2, 1, 0, 2, 6],
    [2, 2, 1, 0, 4, 4],
    [1, 3, 2, 0, 4, 4],
  ],
});

test("nameMatcher: a case-insensitive substring, or /a regex/ (flags: i)", () => {
  assert.equal(nameMatcher(""), null);
  assert.equal(nameMatcher("   "), null);
  assert.equal(nameMatcher("Foo")("xfoox"), true);
  assert.equal(nameMatcher("Foo")("bar"), false);
  assert.equal(nameMatcher("/^ma.n$/")("main"), true);
  assert.equal(nameMatcher("/^ma.n$/")("MAIN"), false);
  assert.equal(nameMatcher("/^ma.n$/i")("MAIN"), true);
  // An unfinished regex while typing is a substring.
  assert.equal(nameMatcher("/[/")("a/[/b"), true);
});

test("searchMatches marks every matching frame and counts each stack once", () => {
  const m = searchMatches(d, "spin");
  assert.deepEqual([...m.node], [0, 0, 1, 1, 0]);
  assert.equal(m.count, 2);
  assert.equal(m.matchedTotal, 6);
  assert.equal(searchMatches(d, ""), null);
  assert.equal(searchMatches(d, "nothing").count, 0);
});

test("functionMatches: by name, and by binary unless it is empty", () => {
  assert.equal(functionMatches(d, "spin", "app").count, 2);
  assert.equal(functionMatches(d, "spin", "lib.so").count, 0);
  assert.equal(functionMatches(d, "other", "").matchedTotal, 4);
});

test("searchSummary", () => {
  assert.equal(searchSummary(d, "spin"), "2 frames · 60.00% of total");
  assert.equal(searchSummary(d, "nothing"), "0 frames · 0.00% of total");
  assert.equal(searchSummary(d, ""), "");
  assert.equal(searchSummary(null, "spin"), "");
});

test("sandwich: callers up to the outermost frame, callees merged, recursion counted once", () => {
  const sw = sandwich(d, "spin", "");
  assert.equal(sw.self, 6);
  assert.equal(sw.total, 6);
  const names = (t) => [...t.name].map((i) => t.names[i]);
  assert.deepEqual(names(sw.callers), ["spin", "main"]);
  assert.deepEqual([...sw.callers.total], [6, 6]);
  assert.deepEqual([...sw.callers.self], [0, 6]);
  assert.deepEqual(names(sw.callees), ["spin", "spin"]);
  assert.deepEqual([...sw.callees.self], [2, 4]);
  assert.deepEqual([...sw.callees.total], [6, 4]);
  assert.equal(sw.callers.binaries[sw.callers.binary[0]], "app");
  assert.equal(sandwich(d, "missing", ""), null);
});

test("toSpeedscope: a sample per node with self time, in nanoseconds, from the zoomed node's path", () => {
  const all = toSpeedscope(d, 0, "t");
  assert.deepEqual(all.shared.frames, [
    { name: "main", file: "app" },
    { name: "spin", file: "app" },
    { name: "other", file: "lib.so" },
  ]);
  const p = all.profiles[0];
  assert.equal(p.unit, "nanoseconds");
  assert.deepEqual(p.samples, [[0, 1], [0, 1, 1], [0, 2]]);
  assert.deepEqual(p.weights, [2e7, 4e7, 4e7]);
  assert.equal(p.endValue, 1e8);
  // Zoomed into the outer spin: only its subtree, still under main.
  const zoomed = toSpeedscope(d, 2, "t").profiles[0];
  assert.deepEqual(zoomed.samples, [[0, 1], [0, 1, 1]]);
  assert.deepEqual(zoomed.weights, [2e7, 4e7]);
});
