// gpu/multiples.ts: the GPUs view's tile per GPU.
import assert from "node:assert/strict";
import { test } from "node:test";
import { gpuTiles, sparkPoints } from "../src/gpu/multiples.ts";

const series = (name, labels, values) => ({
  name,
  unit: "",
  from_ms: 0,
  to_ms: 3000,
  step_ms: 1000,
  series: [{ labels, points: values.map((v, i) => [i * 1000, v, v, v]) }],
});

test("a tile per GPU with its own numbers and its busiest process", () => {
  const metrics = new Map();
  const util = series("gpu_utilization", { gpu: "0" }, [10, 30]);
  util.series.push({ labels: { gpu: "1" }, points: [[1000, 90, 90, 90], [0, 70, 70, 70]] });
  metrics.set("gpu_utilization", util);
  metrics.set("gpu_power", series("gpu_power", { gpu: "1" }, [500, 600]));
  metrics.set("gpu_memory_used", series("gpu_memory_used", { gpu: "1" }, [2, 8]));
  const proc = series("gpu_process_sm_utilization", { gpu: "1", pid: "7", comm: "python3" }, [40, 60]);
  proc.series.push({ labels: { gpu: "1", pid: "8", comm: "other" }, points: [[0, 5, 5, 5]] });
  metrics.set("gpu_process_sm_utilization", proc);
  const tiles = gpuTiles(metrics, [{ gpu: "0", gpu_name: "NVIDIA H200" }, { gpu: "1", gpu_name: "NVIDIA H200" }, { gpu: "2" }]);
  assert.equal(tiles.length, 3);
  assert.equal(tiles[0].utilization, 20);
  assert.equal(tiles[0].power, null);
  assert.equal(tiles[0].process, null);
  assert.equal(tiles[1].utilization, 80);
  assert.equal(tiles[1].power, 550);
  assert.equal(tiles[1].memoryUsed, 8);
  assert.equal(tiles[1].process, "python3 (7)");
  assert.equal(tiles[1].processShare, 50);
  assert.deepEqual(tiles[1].spark, [[0, 70], [1000, 90]], "in time order");
  assert.equal(tiles[2].utilization, null);
  assert.deepEqual(tiles[2].spark, []);
});

test("sparkPoints spans the range and 0..100 %, clamped", () => {
  assert.equal(sparkPoints([[0, 0], [500, 50], [1000, 150]], 0, 1000, 100, 20), "0.0,20.0 50.0,10.0 100.0,0.0");
  assert.equal(sparkPoints([], 0, 1000, 100, 20), "");
});

test("a GPU far less busy than the node's median is marked", () => {
  const util = series("gpu_utilization", { gpu: "0" }, [90]);
  for (const [gpu, v] of [["1", 90], ["2", 35], ["3", 88]]) util.series.push({ labels: { gpu }, points: [[0, v, v, v]] });
  const tiles = gpuTiles(new Map([["gpu_utilization", util]]), ["0", "1", "2", "3"].map((gpu) => ({ gpu })));
  assert.deepEqual(tiles.map((t) => t.lagging), [false, false, true, false]);
});
