// gpu/chart_specs.ts: which charts the GPUs view draws for a node's
// metrics and with which lines (one GPU or several, the busiest processes,
// reference lines once or per GPU, charts without points left out).
import assert from "node:assert/strict";
import { test } from "node:test";
import { gpuChartSpecs, withAlpha } from "../src/gpu/chart_specs.ts";

const theme = { fg: "#000000", muted: "#888888", grid: "#dddddd", warn: "#ff0000", palette: ["#111111", "#222222", "#333333"] };
const gpuInfo = (gpu) => ({ gpu, uuid: `GPU-${gpu}`, gpu_name: "H200", pci_bus_id: "" });
const metric = (name, unit, series) => [name, { name, unit, from_ms: 0, to_ms: 3000, step_ms: 1000, series }];
const at = (v) => [[1000, v, v, v]];
const labelsOf = (spec) => spec.lines.map((l) => l.label);

const UTIL = [[1000, 10, 30, 20], [2000, 40, 60, 50]];
// 14 processes on GPU 0; pid 100 + i runs at i %.
const PROCESSES = Array.from({ length: 14 }, (_, i) => ({ labels: { gpu: "0", pid: String(100 + i), comm: `p${i}` }, points: at(i) }));
const oneGpu = new Map([
  metric("gpu_utilization", "percent", [{ labels: { gpu: "0" }, points: UTIL }]),
  metric("gpu_process_sm_utilization", "percent", PROCESSES),
  metric("gpu_memory_used", "bytes", [{ labels: { gpu: "0" }, points: at(5e9) }]),
  metric("gpu_memory_total", "bytes", [{ labels: { gpu: "0" }, points: at(8e10) }]),
  metric("gpu_power", "watts", [{ labels: { gpu: "0" }, points: [] }]),
]);

test("one GPU: utilization with its band and the busiest 12 processes, memory with its total; no chart without points", () => {
  const specs = gpuChartSpecs({ metrics: oneGpu, gpus: [gpuInfo("0")], gpu: "" }, "", theme);
  assert.deepEqual(specs.map((s) => s.metric), ["gpu_utilization", "gpu_memory_used"]);
  const [util, mem] = specs;
  assert.deepEqual(util.metrics, ["gpu_utilization", "gpu_process_sm_utilization"]);
  assert.equal(util.y, "percent");
  assert.equal(util.note, "+2 more processes");
  assert.deepEqual(util.lines[0], {
    label: "utilization",
    input: { points: UTIL, field: "avg" },
    color: "#000000",
    width: 2,
    minMax: [{ points: UTIL, field: "min" }, { points: UTIL, field: "max" }],
  });
  assert.deepEqual(labelsOf(util).slice(1), Array.from({ length: 12 }, (_, k) => `p${13 - k} (${113 - k})`));
  // A colour per process by pid order (pid 113 is the 14th: palette[13 % 3]), the same in every chart.
  assert.deepEqual(util.lines[1], { label: "p13 (113)", input: { points: at(13), field: "avg" }, color: "#222222", width: 1.25, dash: undefined, pid: "113", focused: false });
  assert.equal(mem.unit, "bytes");
  assert.equal(mem.note, undefined);
  assert.deepEqual(mem.lines.map((l) => [l.label, l.color, l.width, l.dash]), [
    ["used", "#000000", 2, undefined],
    ["total", "#888888", 1.25, [6, 4]],
  ]);
});

test("a focused process is kept even when it is not among the busiest, and the others fade", () => {
  const [util] = gpuChartSpecs({ metrics: oneGpu, gpus: [gpuInfo("0")], gpu: "" }, "100", theme);
  assert.equal(util.lines.length, 1 + 13);
  assert.equal(util.note, "+1 more process");
  const focused = util.lines.find((l) => l.pid === "100");
  assert.deepEqual([focused.color, focused.width, focused.focused], ["#111111", 2.5, true]);
  const other = util.lines.find((l) => l.pid === "113");
  assert.deepEqual([other.color, other.width, other.focused], ["#22222259", 1.25, false]);
});

const twoGpus = new Map([
  // GPU 1 listed first: lines go by GPU index.
  metric("gpu_utilization", "percent", [{ labels: { gpu: "1" }, points: at(70) }, { labels: { gpu: "0" }, points: at(20) }]),
  metric("gpu_power", "watts", [{ labels: { gpu: "0" }, points: at(300) }, { labels: { gpu: "1" }, points: at(500) }]),
  metric("gpu_power_limit", "watts", [{ labels: { gpu: "0" }, points: at(700) }, { labels: { gpu: "1" }, points: at(700) }]),
  metric("gpu_temperature", "celsius", [{ labels: { gpu: "0" }, points: at(60) }, { labels: { gpu: "1" }, points: at(70) }]),
  metric("gpu_temperature_slowdown", "celsius", [{ labels: { gpu: "0" }, points: at(90) }, { labels: { gpu: "1" }, points: at(92) }]),
  metric("gpu_clock_event_reasons", "count", [{ labels: { gpu: "0" }, points: at(4) }, { labels: { gpu: "1" }, points: at(1) }]),
  metric("gpu_xid_errors", "count", [{ labels: { gpu: "0", xid: "79" }, points: [[1000, 0, 1, 0.5]] }]),
  metric("gpu_sm_activity", "percent", [{ labels: { gpu: "0" }, points: at(40) }]),
  metric("gpu_tensor_activity", "percent", [{ labels: { gpu: "0" }, points: at(10) }]),
]);

test("all of a node's GPUs: a colour per GPU, a shared limit once, differing limits per GPU", () => {
  const specs = gpuChartSpecs({ metrics: twoGpus, gpus: [gpuInfo("0"), gpuInfo("1")], gpu: "" }, "", theme);
  assert.deepEqual(specs.map((s) => s.title), ["Utilization", "Power", "Temperature", "Clock events", "SM activity", "Tensor activity"]);
  const [util, power, temp, events, sm] = specs;
  assert.deepEqual(util.lines.map((l) => [l.label, l.color, l.minMax]), [
    ["GPU 0", "#111111", undefined],
    ["GPU 1", "#222222", undefined],
  ]);
  assert.deepEqual(labelsOf(power), ["GPU 0 power", "GPU 1 power", "limit (each GPU)"]);
  assert.equal(power.lines[2].color, "#888888");
  assert.deepEqual(labelsOf(temp), ["GPU 0 temperature", "GPU 1 temperature", "GPU 0 slowdown", "GPU 1 slowdown"]);
  assert.deepEqual(temp.lines.slice(2).map((l) => l.color), ["#111111", "#222222"]);
  assert.equal(events.kind, "throttle");
  assert.equal(events.note, "(any GPU)");
  assert.deepEqual(events.reasons.map((r) => r.field), ["max", "max"]);
  assert.deepEqual(events.xids, [{ label: "GPU 0 XID 79", input: { points: [[1000, 0, 1, 0.5]], field: "max" } }]);
  assert.deepEqual(sm.metrics, ["gpu_sm_activity"]);
  assert.deepEqual(labelsOf(sm), ["GPU 0"]);
});

test("one GPU picked out of several: its lines in the foreground colour, GPM activity in one chart", () => {
  const specs = gpuChartSpecs({ metrics: twoGpus, gpus: [gpuInfo("0"), gpuInfo("1")], gpu: "0" }, "", theme);
  const byMetric = Object.fromEntries(specs.map((s) => [s.metric, s]));
  assert.equal(byMetric.gpu_utilization.lines[0].label, "utilization");
  assert.equal(byMetric.gpu_utilization.lines[0].color, "#000000");
  assert.deepEqual(labelsOf(byMetric.gpu_temperature).slice(-1), ["slowdown"]);
  assert.equal(byMetric.gpu_temperature.lines.at(-1).color, "#ff0000");
  const gpm = byMetric.gpu_sm_activity;
  assert.equal(gpm.title, "SM, tensor and DRAM activity");
  assert.deepEqual(gpm.metrics, ["gpu_sm_activity", "gpu_tensor_activity"]);
  assert.deepEqual(gpm.lines.map((l) => [l.label, l.color, l.width]), [
    ["SM activity", "#111111", 1.5],
    ["tensor activity", "#333333", 1.5],
  ]);
});

test("no metrics, or XIDs that never fired: no charts", () => {
  assert.deepEqual(gpuChartSpecs({ metrics: new Map(), gpus: [], gpu: "" }, "", theme), []);
  const quiet = new Map([metric("gpu_xid_errors", "count", [{ labels: { gpu: "0", xid: "13" }, points: [[1000, 0, 0, 0]] }])]);
  assert.deepEqual(gpuChartSpecs({ metrics: quiet, gpus: [gpuInfo("0")], gpu: "" }, "", theme), []);
});

test("withAlpha appends an alpha byte to #rrggbb only", () => {
  assert.equal(withAlpha("#112233", 0.5), "#11223380");
  assert.equal(withAlpha("#112233", 0), "#11223300");
  assert.equal(withAlpha("rgb(1, 2, 3)", 0.5), "rgb(1, 2, 3)");
});
