// views/energy_model.ts: the energy view's request, rows, measured and
// estimated figures, texts, coefficient boxes and chart series, from
// /api/v1/energy answers as docs/api.md ("Energy") shows them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULTS } from "../src/state.ts";
import {
  COEFFICIENT_FIELDS,
  energyChart,
  energyParams,
  energyStep,
  figureStatus,
  figureWhy,
  filterGroups,
  flameLinkOf,
  formatCo2,
  formatCost,
  formatKwh,
  formatWatts,
  groupKey,
  groupKind,
  groupTitle,
  hasDram,
  parseCoefficient,
  sourcesOf,
  totalStatus,
} from "../src/views/energy_model.ts";

const C = { pue: 1.2, carbon_intensity: 379, price_per_kwh: 0.15, cpu_watts_per_core: 7, idle_utilization_percent: 1 };
const figures = (gpu, idle, cpu) => {
  const total = gpu + cpu;
  const kwh = total / 3.6e6;
  return { gpu_joules: gpu, gpu_busy_joules: gpu - idle, gpu_idle_joules: idle, cpu_joules: cpu, dram_joules: 0, total_joules: total, kwh, co2_grams: kwh * 1.2 * 379, cost: kwh * 0.15 };
};
// group_by=process: two processes (GPU joules apportioned), a GPU's idle rest.
const trainer = {
  labels: { node: "n1", pid: "7", comm: "python3" },
  ...figures(67_500, 0, 2100),
  gpu_source: "energy_counter",
  cpu_source: "coefficient",
  gpu_apportioned_by: "sm_utilization",
  measured: [],
  estimated: ["gpu_joules", "cpu_joules", "co2_grams", "cost"],
};
const gpuRest = {
  labels: { node: "n1", gpu: "1" },
  ...figures(18_000, 18_000, 0),
  gpu_source: "energy_counter",
  cpu_source: null,
  gpu_apportioned_by: null,
  measured: ["gpu_joules"],
  estimated: ["co2_grams", "cost"],
};
const loader = {
  labels: { node: "n1", pid: "8", comm: "loader" },
  ...figures(0, 0, 700),
  gpu_source: null,
  cpu_source: "coefficient",
  measured: [],
  estimated: ["cpu_joules", "co2_grams", "cost"],
};

test("energyStep: the finest whole step giving at most 240 points; energyParams leaves out what the server defaults", () => {
  assert.equal(energyStep(0, 60_000), "1s");
  assert.equal(energyStep(0, 300_000), "2s");
  assert.equal(energyStep(0, 3_600_000), "15s");
  assert.equal(energyStep(0, 86_400_000), "10m");
  assert.equal(energyStep(0, 31 * 86_400_000), "6h");
  assert.equal(energyStep(0, 400 * 86_400_000), "1d16h");
  const s = { ...DEFAULTS, view: "energy", from: "now-1h", to: "now", egroup: "pod", pue: "1.4" };
  assert.deepEqual(energyParams(s, 0, 3_600_000), {
    from: "now-1h",
    to: "now",
    selector: undefined,
    group_by: "pod",
    step: "15s",
    pue: "1.4",
    carbon_intensity: undefined,
    price_per_kwh: undefined,
  });
  assert.equal(energyParams({ ...s, selector: '{node="a"}', carbon: "50", price: "0.3" }, 0, 60_000).selector, '{node="a"}');
});

test("parseCoefficient: empty is the server's default; a number within the API's bounds; else why", () => {
  const [pue, carbon, price] = COEFFICIENT_FIELDS;
  assert.deepEqual(COEFFICIENT_FIELDS.map((f) => [f.key, f.param]), [["pue", "pue"], ["carbon", "carbon_intensity"], ["price", "price_per_kwh"]]);
  assert.deepEqual(parseCoefficient(pue, " "), { value: "" });
  assert.deepEqual(parseCoefficient(pue, "1.35"), { value: "1.35" });
  assert.deepEqual(parseCoefficient(carbon, "0"), { value: "0" });
  assert.deepEqual(parseCoefficient(price, ".25"), { value: "0.25" });
  assert.deepEqual(parseCoefficient(pue, "0.9"), { error: "PUE: expected 1 to 10, found 0.9" });
  assert.deepEqual(parseCoefficient(carbon, "6000"), { error: "gCO₂e/kWh: expected 0 to 5,000, found 6000" });
  assert.deepEqual(parseCoefficient(price, "-1"), { error: 'price per kWh: expected a number, found "-1"' });
  assert.deepEqual(parseCoefficient(price, "1,5"), { error: 'price per kWh: expected a number, found "1,5"' });
});

test("groupKind and groupTitle: what each row of each grouping is", () => {
  assert.equal(groupKind({ node: "n1" }, "node"), "node");
  assert.equal(groupKind({ node: "n1" }, "gpu"), "node-cpu");
  assert.equal(groupKind({ node: "n1", gpu: "0" }, "gpu"), "gpu");
  assert.equal(groupKind({ node: "n1", gpu: "0" }, "process"), "gpu-rest");
  assert.equal(groupKind({ node: "n1", gpu: "0" }, "pod"), "gpu-rest");
  assert.equal(groupKind(trainer.labels, "process"), "process");
  assert.equal(groupKind({ namespace: "ml", pod: "train-0" }, "pod"), "pod");
  assert.equal(groupKind({ namespace: "", pod: "" }, "pod"), "pod");
  assert.equal(groupKind({ rack: "r1" }, "node"), "other");
  assert.deepEqual(groupTitle({ node: "n1" }, "node"), { title: "n1", detail: "GPUs and CPU" });
  assert.deepEqual(groupTitle({ node: "n1" }, "gpu"), { title: "n1 · CPU", detail: "the node's CPU" });
  assert.deepEqual(groupTitle({ node: "n1", gpu: "0" }, "gpu"), { title: "n1 · GPU 0", detail: "" });
  assert.deepEqual(groupTitle(gpuRest.labels, "process"), { title: "n1 · GPU 1", detail: "idle, and busy time no process was seen using" });
  assert.deepEqual(groupTitle(trainer.labels, "process"), { title: "python3 (pid 7)", detail: "n1" });
  assert.deepEqual(groupTitle({ ...trainer.labels, namespace: "ml", pod: "train-0" }, "process"), { title: "python3 (pid 7)", detail: "n1 · ml/train-0" });
  assert.deepEqual(groupTitle({ namespace: "ml", pod: "train-0" }, "pod"), { title: "ml/train-0", detail: "" });
  assert.deepEqual(groupTitle({ namespace: "", pod: "" }, "pod"), { title: "outside any pod", detail: "processes without pod labels" });
  assert.deepEqual(groupTitle({ rack: "r1", row: "2" }, "node"), { title: "rack=r1, row=2", detail: "" });
  assert.equal(groupKey({ pid: "7", node: "n1", comm: "python3" }), "comm=python3,node=n1,pid=7");
});

test("flameLinkOf: a process's or pod's gpu_energy flame graph; none for nodes, GPUs and the pod-less rest", () => {
  const link = flameLinkOf(trainer.labels, "process");
  assert.equal(link.view, "flame");
  assert.equal(link.type, "gpu_energy");
  assert.equal(link.selector, '{node="n1", pid="7"}');
  assert.equal(link.focus, "");
  assert.equal(link.ffocus, "");
  assert.equal(flameLinkOf({ namespace: "ml", pod: 'a"b' }, "pod").selector, '{namespace="ml", pod="a\\"b"}');
  assert.equal(flameLinkOf({ namespace: "", pod: "" }, "pod"), null);
  assert.equal(flameLinkOf({ node: "n1" }, "node"), null);
  assert.equal(flameLinkOf(gpuRest.labels, "process"), null);
});

test("figureStatus: the answer's lists; busy and idle as GPU joules; total and kWh as their parts", () => {
  assert.equal(figureStatus(trainer, "gpu_joules"), "estimated");
  assert.equal(figureStatus(trainer, "gpu_busy_joules"), "estimated");
  assert.equal(figureStatus(trainer, "cpu_joules"), "estimated");
  assert.equal(figureStatus(trainer, "kwh"), "estimated");
  assert.equal(figureStatus(trainer, "cost"), "estimated");
  assert.equal(figureStatus(gpuRest, "gpu_joules"), "measured");
  assert.equal(figureStatus(gpuRest, "gpu_idle_joules"), "measured");
  assert.equal(figureStatus(gpuRest, "total_joules"), "measured");
  assert.equal(figureStatus(gpuRest, "kwh"), "measured");
  assert.equal(figureStatus(gpuRest, "co2_grams"), "estimated");
  assert.equal(figureStatus(gpuRest, "cpu_joules"), "");
  assert.equal(figureStatus(loader, "gpu_joules"), "");
  assert.equal(figureStatus({ ...loader, cpu_joules: 0, total_joules: 0 }, "kwh"), "");
  // The total: estimated where any row with some of it is, measured where all are.
  assert.equal(totalStatus([trainer, gpuRest, loader], "gpu_joules"), "estimated");
  assert.equal(totalStatus([gpuRest], "gpu_joules"), "measured");
  assert.equal(totalStatus([gpuRest, loader], "gpu_joules"), "measured");
  assert.equal(totalStatus([gpuRest, loader], "kwh"), "estimated");
  assert.equal(totalStatus([gpuRest], "cpu_joules"), "");
  assert.equal(totalStatus([gpuRest], "co2_grams"), "estimated");
  assert.equal(totalStatus([], "cost"), "");
});

test("figureWhy: where a measured figure came from, how an estimated one was made, with the coefficients", () => {
  const own = (g) => ({ gpu_source: g.gpu_source ?? "", cpu_source: g.cpu_source ?? "", gpu_apportioned_by: g.gpu_apportioned_by ?? "" });
  assert.match(figureWhy("gpu_joules", "estimated", own(trainer), C), /apportioned by utilization/);
  assert.match(figureWhy("gpu_joules", "estimated", { ...own(trainer), gpu_apportioned_by: "gpu_time" }, C), /kernel time/);
  assert.match(figureWhy("gpu_joules", "estimated", { ...own(trainer), gpu_apportioned_by: "gpu_time+sm_utilization" }, C), /kernel time .* else by SM utilization/);
  assert.match(figureWhy("gpu_joules", "measured", own(gpuRest), C), /^Measured: NVML's energy counter/);
  assert.match(figureWhy("gpu_joules", "measured", { ...own(gpuRest), gpu_source: "power_integration" }, C), /power readings integrated/);
  assert.match(figureWhy("gpu_joules", "measured", { ...own(gpuRest), gpu_source: "energy_counter+power_integration" }, C), /counter, and NVML's power readings/);
  assert.match(figureWhy("gpu_idle_joules", "measured", own(gpuRest), C), /^Idle: .* below 1 %.* Measured: NVML's energy counter/);
  assert.equal(figureWhy("cpu_joules", "estimated", own(trainer), C), "Estimated: CPU time (samples × sampling period) × 7 W per core, a coefficient, not a measurement.");
  assert.match(figureWhy("cpu_joules", "estimated", { ...own(trainer), cpu_source: "rapl" }, C), /RAPL CPU joules, split by the share of the node's CPU samples/);
  assert.match(figureWhy("cpu_joules", "estimated", { ...own(trainer), cpu_source: "coefficient+rapl" }, C), /else CPU time × 7 W per core/);
  assert.equal(figureWhy("cpu_joules", "measured", { ...own(trainer), cpu_source: "rapl" }, C), "Measured: the CPU packages' RAPL energy counters.");
  assert.equal(figureWhy("co2_grams", "estimated", own(trainer), C), "Estimated: kWh × PUE 1.2 × 379 gCO₂e/kWh (the grid's carbon intensity, a coefficient).");
  assert.equal(figureWhy("cost", "estimated", own(trainer), { ...C, price_per_kwh: 0.3 }), "Estimated: kWh × 0.3 per kWh (PUE not applied).");
  assert.match(figureWhy("kwh", "estimated", own(trainer), C), /3\.6 MJ per kWh\. Estimated, because part of it is/);
  assert.equal(figureWhy("cpu_joules", "", own(gpuRest), C), "");
  assert.deepEqual(sourcesOf([trainer, gpuRest, loader, { ...loader, gpu_source: "power_integration+energy_counter" }]), {
    gpu_source: "energy_counter+power_integration",
    cpu_source: "coefficient",
    gpu_apportioned_by: "sm_utilization",
  });
});

test("figures as text: kWh (Wh below one), CO₂ in g / kg / t, cost, watts", () => {
  assert.equal(formatKwh(0), "0 kWh");
  assert.equal(formatKwh(0.0333), "33.3 Wh");
  assert.equal(formatKwh(0.000025), "0.025 Wh");
  assert.equal(formatKwh(1.456), "1.46 kWh");
  assert.equal(formatKwh(12_345), "12.3 MWh");
  assert.equal(formatCo2(1.516), "1.52 g");
  assert.equal(formatCo2(850), "850 g");
  assert.equal(formatCo2(3400), "3.4 kg");
  assert.equal(formatCo2(1.2e6), "1.2 t");
  assert.equal(formatCost(0), "0");
  assert.equal(formatCost(0.0005), "0.0005");
  assert.equal(formatCost(0.01234), "0.012");
  assert.equal(formatCost(12.5), "12.50");
  assert.equal(formatCost(1234.4), "1,234");
  assert.equal(formatWatts(610), "610 W");
  assert.equal(formatWatts(1234), "1.23 kW");
});

test("filterGroups and hasDram", () => {
  const groups = [trainer, gpuRest, loader];
  assert.deepEqual(filterGroups(groups, "", "process"), groups);
  assert.deepEqual(filterGroups(groups, "LOADER", "process"), [loader]);
  assert.deepEqual(filterGroups(groups, "gpu 1", "process"), [gpuRest]);
  assert.deepEqual(filterGroups(groups, "pid=7", "process"), [trainer]);
  const answer = { from: 0, to: 1, coefficients: C, total: figures(85_500, 18_000, 2800), groups };
  assert.equal(hasDram(answer), false);
  assert.equal(hasDram({ ...answer, groups: [{ ...loader, dram_joules: 12 }] }), true);
});

test("energyChart: GPU busy, GPU idle and CPU per step, stacked in that order, as watts over each step's length", () => {
  const steps = {
    step_ms: 10_000,
    t: [0, 10_000, 20_000],
    gpu_joules: [3000, 3600, 500],
    gpu_busy_joules: [3000, 3000, 0],
    gpu_idle_joules: [0, 600, 500],
    cpu_joules: [70, 70, 35],
  };
  // The range ends 5 s into the last step: its watts are over those 5 s.
  const d = energyChart(steps, 25_000);
  assert.deepEqual(d.xs, [0, 10, 20]);
  assert.equal(d.stepMs, 10_000);
  assert.deepEqual(d.layers.map((l) => l.key), ["gpu_busy", "gpu_idle", "cpu"]);
  assert.deepEqual(d.layers[0].watts, [300, 300, 0]);
  assert.deepEqual(d.layers[1].watts, [0, 60, 100]);
  assert.deepEqual(d.layers[2].watts, [7, 7, 7]);
  assert.deepEqual(d.layers[1].top, [300, 360, 100]);
  assert.deepEqual(d.layers[2].top, [307, 367, 107]);
  assert.deepEqual(d.layers[2].joules, [70, 70, 35]);
  // Without gpu_busy_joules: GPU joules less idle.
  const { gpu_busy_joules, ...older } = steps;
  assert.deepEqual(energyChart(older, 30_000).layers[0].joules, [3000, 3000, 0]);
  assert.equal(energyChart(undefined, 1), null);
  assert.equal(energyChart({ ...steps, t: [] }, 1), null);
});
