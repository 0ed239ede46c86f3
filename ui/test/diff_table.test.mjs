import assert from "node:assert/strict";
import { test } from "node:test";
import { diffTable } from "../src/flame/diff_table.ts";
import { fromDiff } from "../src/flame/model.ts";

// base 100: main → {spin self 60, io self 40}; target 200: main → {spin self 180, io self 10}, and io under spin self 10.
const d = fromDiff({
  version: 1, type: "cpu", unit: "samples", period_nanos: 0, base_total: 100, target_total: 200, truncated: 0,
  names: ["total", "main", "spin", "io"], binaries: ["", "app"],
  nodes: [
    [-1, 0, 0, 3, 0, 100, 0, 200],
    [0, 1, 1, 0, 0, 100, 0, 200],
    [1, 3, 1, 0, 40, 40, 10, 10],
    [1, 2, 1, 0, 60, 60, 180, 190],
    [3, 3, 1, 0, 0, 0, 10, 10],
  ],
});

test("diffTable: self shares per function over all its nodes, largest change first", () => {
  const rows = diffTable(d);
  assert.deepEqual(rows.map((r) => r.name), ["io", "spin"]);
  const io = rows[0];
  assert.equal(io.base, 0.4);
  assert.equal(io.target, 0.1); // 10 + 10 of 200: both of io's nodes
  assert.ok(Math.abs(io.change + 0.3) < 1e-12);
  assert.ok(Math.abs(rows[1].change - 0.3) < 1e-12);
  assert.equal(diffTable(d, 1).length, 1);
});
