import { test } from "node:test";
import assert from "node:assert/strict";
import { byCpu, cpuByProcess, processKey, wholeRangeStep } from "../src/views/targets_model.ts";

test("cpuByProcess sums each (node, pid) over its points and series", () => {
  const cpu = cpuByProcess({
    from_ms: 0, to_ms: 1, step_ms: 1,
    series: [
      { labels: { node: "a", pid: "1" }, points: [[0, 5], [1000, 2]] },
      { labels: { node: "a", pid: "2" }, points: [[0, 40]] },
      { labels: { node: "b", pid: "1" }, points: [[0, 9]] },
    ],
  });
  assert.equal(cpu.get(processKey("a", "1")), 7);
  assert.equal(cpu.get(processKey("a", "2")), 40);
  assert.equal(cpu.get(processKey("b", "1")), 9);
});

test("byCpu: busiest first, then those without samples by name and pid", () => {
  const cpu = new Map([[processKey("a", "1"), 7], [processKey("a", "2"), 40]]);
  const procs = [{ pid: "9", comm: "zz" }, { pid: "1", comm: "x" }, { pid: "3", comm: "aa" }, { pid: "2", comm: "y" }, { pid: "10", comm: "zz" }];
  assert.deepEqual(byCpu("a", procs, cpu).map((p) => p.pid), ["2", "1", "3", "9", "10"]);
});

test("wholeRangeStep puts the range in one step of whole seconds", () => {
  assert.equal(wholeRangeStep(0, 3_600_000), "3600s");
  assert.equal(wholeRangeStep(0, 1500), "2s");
  assert.equal(wholeRangeStep(5, 5), "1s");
});
