// views/insights_model.ts: the insights view's words, numbers, buttons, sparkline and chart marks
// from /api/v1/insights answers (shaped as query/insights.cc writes them).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  cardActions,
  checkedText,
  formatGpuSeconds,
  formatSeconds,
  formatShare,
  insightKey,
  kindInfo,
  marksOf,
  numberRows,
  onGpu,
  rangeText,
  sortInsights,
  sparkline,
  targetText,
  thresholdRows,
} from "../src/views/insights_model.ts";

const T0 = Date.UTC(2026, 11, 5, 15, 0, 0);
const answer = {
  version: 1,
  from: T0,
  to: T0 + 3600e3,
  step_ms: 5000,
  options: { starved_gpu_percent: 50, starved_thread_cores: 0.7, min_share: 0.2, min_duration_ms: 10000, sync_share: 0.2, min_wait_ms: 1000 },
};
const starved = {
  kind: "gpu_starved_by_cpu",
  target: { comm: "python3", gpu: "0", node: "n1", pid: "4747" },
  severity: "low",
  saving_gpu_seconds: 162,
  saving_share: 0.045,
  confidence: "high",
  confidence_reason: "36 of 72 observed steps of 5.0 s were starved",
  summary: "python3 (pid 4747) kept GPU 0 at 10% …",
  fix: "Take the CPU work off the thread that feeds the GPU",
  fix_reason: "The GPU idles because its next work is not ready",
  numbers: { gpu_utilization_percent: 10, busiest_thread_cores: 0.9473684, starved_seconds: 180, observed_seconds: 360 },
  ranges: [{ from: T0 + 600e3, to: T0 + 780e3 }],
  sparkline: [
    [T0, 0],
    [T0 + 5000, 90],
  ],
  evidence: { type: "cpu", selector: '{node="n1",pid="4747"}' },
  links: [
    { view: "flame", type: "cpu", selector: '{node="n1",pid="4747"}', from: T0 + 600e3, to: T0 + 780e3 },
    { view: "gpus", type: "cpu", selector: '{node="n1",pid="4747"}', from: T0 + 600e3, to: T0 + 780e3 },
  ],
  functions: [{ name: "tokenize", binary: "tokenizer.py", kind: 2, value: 1800, share: 0.5556 }],
};
const sync = {
  kind: "sync_heavy",
  target: { comm: "python3", node: "n1", pid: "4748", thread: "train_loop" },
  severity: "high",
  saving_gpu_seconds: 360,
  saving_share: 0.1,
  confidence: "high",
  confidence_reason: "241 of 720 steps",
  summary: "Thread 'train_loop' …",
  fix: "Synchronise less often",
  fix_reason: "Each wait empties the GPU's queue",
  numbers: { wait_seconds: 960, wait_share: 0.26667, wait_without_gpu_work_seconds: 360 },
  ranges: [
    { from: T0 + 300e3, to: T0 + 1500e3 },
    { from: T0 + 1600e3, to: T0 + 1700e3 },
  ],
  sparkline: [],
  links: [
    { view: "flame", type: "gpu_wait", selector: '{node="n1",pid="4748",thread="train_loop"}', from: T0 + 300e3, to: T0 + 1500e3 },
    { view: "flamechart", type: "gpu_wait", selector: '{node="n1",pid="4748",thread="train_loop"}', from: T0 + 300e3, to: T0 + 1500e3 },
  ],
  functions: [{ name: "read_loss", binary: "train.py", kind: 2, value: 6e11, share: 0.625 }],
  waited_for: [{ name: "void gemm_kernel<float>(float*, int)", binary: "[cuda kernel]", kind: 4, value: 6e11, share: 0.625 }],
};

test("kinds in plain words; an unknown kind from its own name", () => {
  assert.equal(kindInfo("gpu_starved_by_cpu").title, "GPU starved by the CPU");
  assert.equal(kindInfo("sync_heavy").short, "CUDA sync waits");
  assert.equal(kindInfo("launch_bound").title, "Bound by kernel launches");
  assert.equal(kindInfo("memory_bound").short, "memory-bound");
  assert.deepEqual(kindInfo("cache_thrash"), { title: "Cache thrash", short: "cache thrash", what: "" });
});

test("insightKey: the kind and the target's labels, in name order", () => {
  assert.equal(insightKey(starved), "gpu_starved_by_cpu|comm=python3,gpu=0,node=n1,pid=4747");
  assert.equal(insightKey({ kind: "x", target: {} }), "x|");
});

test("sortInsights: the GPU time each could save, then its share; the API's order otherwise", () => {
  const a = { ...starved, saving_gpu_seconds: 5, saving_share: 0.1 };
  const b = { ...starved, saving_gpu_seconds: 5, saving_share: 0.2 };
  assert.deepEqual(sortInsights([starved, sync, a, b]), [sync, starved, b, a]);
});

test("targetText: process, thread, GPU, other labels, node", () => {
  assert.equal(targetText(starved.target), "python3 (pid 4747) · GPU 0 · node n1");
  assert.equal(targetText(sync.target), "python3 (pid 4748) · thread train_loop · node n1");
  assert.equal(targetText({ pid: "1", stream: "7" }), "pid 1 · stream=7");
});

test("savings, shares, durations and ranges as text", () => {
  assert.equal(formatGpuSeconds(0.44), "0.4 GPU-s");
  assert.equal(formatGpuSeconds(162), "162 GPU-s");
  assert.equal(formatGpuSeconds(1000), "16.7 GPU-min");
  assert.equal(formatGpuSeconds(9000), "2.5 GPU-h");
  assert.equal(formatShare(0.045), "4.5%");
  assert.equal(formatShare(0.26667), "27%");
  assert.equal(formatShare(0.0004), "<0.1%");
  assert.equal(formatShare(0), "0%");
  assert.equal(formatSeconds(0.25), "250 ms");
  assert.equal(formatSeconds(0.0125), "12.5 ms");
  assert.equal(formatSeconds(0), "0 ms");
  assert.equal(formatSeconds(180), "180 s");
  assert.equal(rangeText({ from: T0 + 600e3, to: T0 + 780e3 }), "2026-12-05 15:10:00 – 15:13:00 (3m)");
  assert.equal(rangeText({ from: T0, to: T0 + 86400e3 }), "2026-12-05 15:00:00 – 2026-12-06 15:00:00 (1d)");
});

test("numberRows: known figures by name, others by their suffix", () => {
  assert.deepEqual(numberRows(starved.numbers), [
    ["GPU utilization while starved", "10%"],
    ["busiest thread", "0.95 of a core"],
    ["starved", "180 s"],
    ["seen on the GPU", "360 s"],
  ]);
  assert.deepEqual(numberRows({ launch_rate_share: 0.5, kernels: 1234, median_kernel_ms: 0.02, odd: NaN }), [
    ["launch rate", "50%"],
    ["kernels", "1,234"],
    ["median kernel", "20 µs"],
  ]);
});

test("thresholdRows and checkedText: the answer's options explained", () => {
  // The server writes them in name order; they read in the order of the sentence they make, unknown ones last.
  const sorted = Object.fromEntries(Object.entries({ ...answer.options, launch_gap_us: 12.5 }).sort());
  const rows = thresholdRows(sorted);
  assert.deepEqual(
    rows.map((r) => r.param),
    ["starved_gpu_percent", "starved_thread_cores", "min_share", "min_duration_ms", "sync_share", "min_wait_ms", "launch_gap_us"],
  );
  assert.deepEqual(rows[0], { param: "starved_gpu_percent", group: "GPU starved by the CPU", value: "50%", meaning: "the process's GPU utilization is below" });
  assert.equal(rows[3].value, "10 s");
  assert.deepEqual([rows[5].group, rows[5].value], ["Blocked in CUDA synchronisation", "1 s"]);
  assert.deepEqual(rows[6], { param: "launch_gap_us", group: "Other kinds", value: "12.5", meaning: "launch gap us" });
  const text = checkedText(answer);
  assert.match(text, /^Checked 1h in steps of 5s for a GPU below 50% while its process's busiest thread ran at least 0\.7 of a core/);
  assert.match(text, /a thread blocked in CUDA synchronisation for 20% of the range or more \([^)]*\)\.$/);
  assert.match(checkedText({ ...answer, options: { ...answer.options, cache_share: 0.2 } }), /; the other kinds whose thresholds are listed below\.$/);
  assert.equal(checkedText({ ...answer, options: {} }), "Checked 1h in steps of 5s for every kind the server knows.");
  assert.match(
    checkedText({ ...answer, options: { ...answer.options, min_launch_rate: 1000, throttle_share: 0.2, memory_bound_dram_percent: 60 } }),
    /; the kinds from the agent's GPU activity analyses and NVML: bound by kernel launches, GPU clocks held down, bound by memory bandwidth\.$/,
  );
  const launch = thresholdRows({ min_launch_rate: 1000, launch_idle_share: 0.3, short_kernel_share: 0.5 });
  assert.deepEqual(
    launch.map((r) => [r.param, r.group, r.value]),
    [
      ["short_kernel_share", "Bound by kernel launches", "50%"],
      ["min_launch_rate", "Bound by kernel launches", "1,000/s"],
      ["launch_idle_share", "Bound by kernel launches", "30%"],
    ],
  );
});

test("cardActions: the API's links as view states, the GPU charts around the range, the kernel table for kernels", () => {
  const a = cardActions(starved, answer);
  assert.deepEqual(
    a.map((x) => x.action),
    ["flame", "gpu"],
  );
  assert.equal(a[0].label, "CPU flame graph");
  assert.deepEqual(
    { view: a[0].patch.view, type: a[0].patch.type, selector: a[0].patch.selector, from: a[0].patch.from, to: a[0].patch.to, search: a[0].patch.search, focus: a[0].patch.focus, live: a[0].patch.live },
    { view: "flame", type: "cpu", selector: '{node="n1",pid="4747"}', from: String(T0 + 600e3), to: String(T0 + 780e3), search: "tokenize", focus: "", live: false },
  );
  // 3 min with half of it on each side, inside the answer's range.
  assert.deepEqual(
    { view: a[1].patch.view, gpunode: a[1].patch.gpunode, gpu: a[1].patch.gpu, gpupid: a[1].patch.gpupid, from: a[1].patch.from, to: a[1].patch.to },
    { view: "gpu", gpunode: "n1", gpu: "0", gpupid: "4747", from: String(T0 + 510e3), to: String(T0 + 870e3) },
  );
  const b = cardActions(sync, answer);
  assert.deepEqual(
    b.map((x) => x.action),
    ["flame", "flamechart", "gpu", "kernels"],
  );
  assert.equal(b[0].label, "GPU-wait flame graph");
  assert.equal(b[0].patch.type, "gpu_wait");
  // The flame chart shows at most 15 minutes: the first 15 of the 20.
  assert.equal(b[1].patch.to, String(T0 + 300e3 + 900e3));
  assert.match(b[1].title, /first 15 minutes/);
  // No GPU in the target: all of the node's GPUs; the context is cut at the answer's start.
  assert.equal(b[2].patch.gpu, "");
  assert.equal(b[2].patch.from, String(T0));
  assert.deepEqual(
    { selector: b[3].patch.selector, kernel: b[3].patch.kernel, from: b[3].patch.from },
    { selector: '{node="n1", pid="4748"}', kernel: "void gemm_kernel<float>(float*, int)", from: String(T0 + 300e3) },
  );
  // launch_bound's second link is the kernel table, its top kernel marked.
  const launchBound = {
    ...starved,
    kind: "launch_bound",
    links: [{ ...starved.links[0], type: "gpu_time" }, { view: "kernels", type: "gpu_time", selector: '{node="n1",pid="4747"}', from: T0, to: T0 + 60e3 }],
    kernels: [{ name: "tiny_kernel", binary: "[cuda kernel]", kind: 4, value: 5, share: 1 }],
  };
  const c = cardActions(launchBound, answer);
  assert.deepEqual(
    c.map((x) => [x.action, x.label]),
    [
      ["flame", "GPU-time flame graph"],
      ["kernels", "Kernel table"],
      ["gpu", "GPU charts"],
    ],
  );
  assert.deepEqual([c[1].patch.view, c[1].patch.selector, c[1].patch.kernel, c[1].patch.to], ["kernels", '{node="n1",pid="4747"}', "tiny_kernel", String(T0 + 60e3)]);
  // An unknown kind with a link to another view and none to the GPU charts, no node: that view only.
  const other = { kind: "new_kind", target: { pid: "1" }, ranges: [], links: [{ view: "threads", from: T0, to: T0 + 1000 }, { view: "elsewhere", from: T0, to: T0 + 1 }] };
  assert.deepEqual(
    cardActions(other, answer).map((x) => [x.action, x.label, x.patch.view]),
    [["threads", "Threads", "threads"]],
  );
});

test("sparkline: steps as an area against its scale (shares, percentages, else the largest), the ranges as bands", () => {
  const s = sparkline(
    [
      [0, 0],
      [10, 50],
      [20, 100],
    ],
    [{ from: 10, to: 30 }],
    0,
    40,
    10,
    100,
    20,
  );
  assert.equal(s.top, 100);
  assert.equal(s.area, "M0 20L0 20L25 20L25 10L50 10L50 0L75 0L75 20Z");
  assert.deepEqual(s.bands, [[25, 75]]);
  assert.equal(sparkline([[0, 0]], [], 0, 40, 10, 100, 20).area, "");
  // A share of 0.5: half the height; a count of 400: the largest at the top.
  assert.equal(sparkline([[0, 0.5]], [], 0, 10, 10, 100, 20).area, "M0 20L0 10L100 10L100 20Z");
  assert.equal(sparkline([[0, 400]], [], 0, 10, 10, 100, 20).top, 400);
});

test("marksOf: one mark per range, named and keyed; onGpu keeps the node's (and the GPU's) insights", () => {
  const marks = marksOf([starved, sync]);
  assert.equal(marks.length, 3);
  assert.deepEqual(
    { key: marks[0].key, from: marks[0].fromMs, to: marks[0].toMs, label: marks[0].label, severity: marks[0].severity },
    { key: insightKey(starved), from: T0 + 600e3, to: T0 + 780e3, label: "GPU starved by CPU", severity: "low" },
  );
  assert.equal(
    marks[0].tip,
    "GPU starved by the CPU\npython3 (pid 4747) · GPU 0 · node n1\n2026-12-05 15:10:00 – 15:13:00 (3m)\n162 GPU-s could be saved\nClick to open its card",
  );
  assert.equal(marksOf([starved, sync], onGpu("n1", "1")).length, 2); // the sync insight names no GPU
  assert.equal(marksOf([starved, sync], onGpu("n1", "0")).length, 3);
  assert.equal(marksOf([starved, sync], onGpu("n2", "")).length, 0);
  assert.match(marksOf([{ ...starved, kind: "memory_bound", saving_gpu_seconds: 0 }])[0].tip, /\na hint: its saving is not estimated\n/);
});
