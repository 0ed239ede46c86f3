// The energy view's words and numbers (views/energy.ts draws them): the
// request of a state, each group's name and flame-graph link, which figures
// are measured and which estimated and why, the figures as text, the
// coefficient boxes' checks, and the stacked chart's series from the
// answer's `steps`. The answer: GET /api/v1/energy (docs/api.md "Energy",
// docs/design/energy.md for the methodology).
// Pure (no DOM): the unit tests run it in Node.
import type { EnergyCoefficientsJson, EnergyFiguresJson, EnergyGroupJson, EnergyJson, EnergyStepsJson } from "../api/types";
import { selectorOf } from "../gpu/data";
import type { ViewState } from "../state";
import { apiDuration } from "../time";

// The group-by switch: the API's group_by, its button and what a row is.
export const GROUP_CHOICES: { value: string; label: string; title: string }[] = [
  { value: "node", label: "node", title: "one row per node: its GPUs' joules and its CPU's" },
  { value: "gpu", label: "GPU", title: "one row per GPU; each node's CPU joules in a row of their own" },
  {
    value: "process",
    label: "process",
    title: "one row per process: its share of its GPUs' busy joules and its CPU joules; each GPU's idle joules, and busy joules no process was seen using, stay with the GPU",
  },
  { value: "pod", label: "pod", title: "one row per Kubernetes pod (namespace, pod): its processes summed; processes outside any pod in one row" },
];

// The chart aims at this many steps at most.
export const MAX_STEPS = 240;
const NICE_STEPS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

// The chart's step for a range: the finest whole step that gives at most
// MAX_STEPS (the server rounds it up to its own grid).
export function energyStep(fromMs: number, toMs: number): string {
  const span = Math.max(1, toMs - fromMs);
  const s = NICE_STEPS_S.find((x) => span / (x * 1000) <= MAX_STEPS) ?? Math.ceil(span / MAX_STEPS / 1000);
  return apiDuration(s * 1000);
}

// The query parameters of /api/v1/energy for a state; empty coefficients
// (the server's defaults) and an empty selector are left out.
export function energyParams(s: ViewState, fromMs: number, toMs: number): Record<string, string | undefined> {
  return {
    from: s.from,
    to: s.to,
    selector: s.selector || undefined,
    group_by: s.egroup || "node",
    step: energyStep(fromMs, toMs),
    pue: s.pue || undefined,
    carbon_intensity: s.carbon || undefined,
    price_per_kwh: s.price || undefined,
  };
}

// The coefficients a user may override, as the URL keeps them (state keys)
// and the API names them, with the API's bounds.
export interface CoefficientField {
  key: "pue" | "carbon" | "price";
  param: "pue" | "carbon_intensity" | "price_per_kwh";
  label: string;
  min: number;
  max: number;
  title: string;
}

export const COEFFICIENT_FIELDS: CoefficientField[] = [
  {
    key: "pue",
    param: "pue",
    label: "PUE",
    min: 1,
    max: 10,
    title: "Power usage effectiveness: the data centre's total energy over its IT energy (about 1.1 for the large clouds, 1.5 to 1.8 for typical enterprise rooms). Applied to CO₂, not to cost.",
  },
  {
    key: "carbon",
    param: "carbon_intensity",
    label: "gCO₂e/kWh",
    min: 0,
    max: 5000,
    title: "The grid's carbon intensity where the machines run: grams of CO₂-equivalent per kWh drawn.",
  },
  {
    key: "price",
    param: "price_per_kwh",
    label: "price per kWh",
    min: 0,
    max: 1e6,
    title: "What one kWh costs, in your currency. PUE is not applied: pass a price that includes the facility's overhead if it should.",
  },
];

// A coefficient box's text: "" (the server's default), the number as the
// URL keeps it, or why it cannot be sent.
export function parseCoefficient(field: CoefficientField, text: string): { value: string } | { error: string } {
  const t = text.trim();
  if (t === "") return { value: "" };
  const v = Number(t);
  if (!/^[0-9]*\.?[0-9]+(e[+-]?[0-9]+)?$/i.test(t) || !Number.isFinite(v)) return { error: `${field.label}: expected a number, found "${t}"` };
  if (v < field.min || v > field.max) return { error: `${field.label}: expected ${field.min} to ${field.max.toLocaleString("en-US")}, found ${t}` };
  return { value: String(v) };
}

// What a row is: a node (its GPUs and CPU), a GPU, a node's CPU on its own
// (grouped by GPU), a process, a pod, a GPU's joules no process took (idle,
// and busy joules without per-process readings, grouped by process or pod),
// or labels the UI does not know.
export type GroupKind = "node" | "gpu" | "node-cpu" | "process" | "pod" | "gpu-rest" | "other";

export function groupKind(labels: Record<string, string>, groupBy: string): GroupKind {
  const has = (k: string) => k in labels;
  if (has("pid")) return "process";
  if (has("pod") || has("namespace")) return "pod";
  if (has("gpu")) return groupBy === "process" || groupBy === "pod" ? "gpu-rest" : "gpu";
  if (has("node") && Object.keys(labels).length === 1) return groupBy === "node" ? "node" : "node-cpu";
  return "other";
}

// A row's name and the line under it.
export function groupTitle(labels: Record<string, string>, groupBy: string): { title: string; detail: string } {
  const l = labels;
  const node = l.node || "(no node label)";
  switch (groupKind(labels, groupBy)) {
    case "node":
      return { title: node, detail: "GPUs and CPU" };
    case "gpu":
      return { title: `${node} · GPU ${l.gpu}`, detail: "" };
    case "gpu-rest":
      return { title: `${node} · GPU ${l.gpu}`, detail: "idle, and busy time no process was seen using" };
    case "node-cpu":
      return { title: `${node} · CPU`, detail: groupBy === "gpu" ? "the node's CPU" : "CPU not attributed to a process" };
    case "process":
      return { title: `${l.comm || "?"} (pid ${l.pid})`, detail: [l.node, l.namespace && l.pod ? `${l.namespace}/${l.pod}` : ""].filter(Boolean).join(" · ") };
    case "pod":
      return l.pod || l.namespace
        ? { title: `${l.namespace || "(no namespace)"}/${l.pod || "(no pod)"}`, detail: l.node ?? "" }
        : { title: "outside any pod", detail: "processes without pod labels" };
    default:
      return { title: labelsText(labels) || "(no labels)", detail: "" };
  }
}

// {a="1", b="2"} as text, in the labels' order: a=1, b=2.
function labelsText(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}

// A row's identity (its labels, sorted), for the table and the tests.
export function groupKey(labels: Record<string, string>): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(",");
}

// The flame graph of a process's or pod's GPU energy (type gpu_energy) over
// the same range; null for other rows.
export function flameLinkOf(labels: Record<string, string>, groupBy: string): Partial<ViewState> | null {
  const kind = groupKind(labels, groupBy);
  let selector = "";
  if (kind === "process" && labels.pid) selector = selectorOf({ node: labels.node ?? "", pid: labels.pid });
  else if (kind === "pod" && labels.pod) selector = selectorOf({ namespace: labels.namespace ?? "", pod: labels.pod });
  if (!selector) return null;
  return {
    view: "flame",
    type: "gpu_energy",
    selector,
    search: "",
    focus: "",
    ffocus: "",
    hide: "",
    bin: "",
    norec: "",
    tree: "",
    group: "",
  };
}

// The figures of a row, in the table's order.
export type Figure =
  | "gpu_busy_joules"
  | "gpu_idle_joules"
  | "gpu_joules"
  | "cpu_joules"
  | "dram_joules"
  | "total_joules"
  | "kwh"
  | "co2_grams"
  | "cost";

export type FigureStatus = "measured" | "estimated" | "";

const PARTS: Figure[] = ["gpu_joules", "cpu_joules", "dram_joules"];

function valueOf(f: EnergyFiguresJson, figure: Figure): number {
  return f[figure] ?? 0;
}

// Whether a row's figure is measured or estimated: the answer's lists; the
// busy and idle joules as the GPU joules they split; joules and kWh as their
// parts (estimated when any part with joules is). "" when nothing says.
export function figureStatus(g: EnergyGroupJson, figure: Figure): FigureStatus {
  if (g.estimated?.includes(figure)) return "estimated";
  if (g.measured?.includes(figure)) return "measured";
  if (figure === "gpu_busy_joules" || figure === "gpu_idle_joules") return figureStatus(g, "gpu_joules");
  if (figure === "total_joules" || figure === "kwh") {
    const parts = PARTS.filter((p) => valueOf(g, p) > 0).map((p) => figureStatus(g, p));
    if (parts.includes("estimated")) return "estimated";
    return parts.length > 0 && parts.every((p) => p === "measured") ? "measured" : "";
  }
  return "";
}

// The total's status: estimated when any row with some of the figure has it
// estimated, measured when every such row measured it.
export function totalStatus(groups: EnergyGroupJson[], figure: Figure): FigureStatus {
  const statuses = groups.filter((g) => valueOf(g, figure) !== 0 || figure === "co2_grams" || figure === "cost").map((g) => figureStatus(g, figure));
  if (statuses.includes("estimated")) return "estimated";
  return statuses.length > 0 && statuses.every((s) => s === "measured") ? "measured" : "";
}

// The sources behind some rows, each listed once: "energy_counter+power_integration".
function joined(values: (string | null | undefined)[]): string {
  const parts = new Set<string>();
  for (const v of values) for (const p of (v ?? "").split("+")) if (p) parts.add(p);
  return [...parts].join("+");
}

export interface Sources {
  gpu_source: string;
  cpu_source: string;
  gpu_apportioned_by: string;
}

export function sourcesOf(groups: EnergyGroupJson[]): Sources {
  return {
    gpu_source: joined(groups.map((g) => g.gpu_source)),
    cpu_source: joined(groups.map((g) => g.cpu_source)),
    gpu_apportioned_by: joined(groups.map((g) => g.gpu_apportioned_by)),
  };
}

const num = (v: number) => Number(v.toPrecision(4)).toLocaleString("en-US");

// Why a figure is what it is: where it was measured, or how it was
// estimated and with which coefficient (the figure's tooltip).
export function figureWhy(figure: Figure, status: FigureStatus, src: Sources, c: EnergyCoefficientsJson): string {
  const gpu = src.gpu_source.split("+");
  const cpu = src.cpu_source.split("+");
  const by = src.gpu_apportioned_by.split("+");
  const watts = `${num(c.cpu_watts_per_core)} W per core`;
  const idle = `${num(c.idle_utilization_percent ?? 1)} %`;
  switch (figure) {
    case "gpu_joules": {
      if (status === "estimated") {
        if (by.includes("gpu_time") && by.includes("sm_utilization")) {
          return "Estimated: the GPU's measured joules apportioned by kernel time where the injection library recorded the kernels, else by SM utilization (NVML's per-process utilization).";
        }
        if (by.includes("gpu_time")) return "Estimated: the GPU's measured joules apportioned by the share of the GPU's kernel time (the CUDA kernels the injection library recorded).";
        return "Estimated: the GPU's measured joules apportioned by utilization (each process's share of the GPU's SM utilization, NVML's per-process reading).";
      }
      if (status !== "measured") return "";
      if (gpu.includes("energy_counter") && gpu.includes("power_integration")) {
        return "Measured: NVML's energy counter, and NVML's power readings integrated over time where the counter has no readings.";
      }
      if (gpu.includes("power_integration")) return "Measured: NVML's power readings integrated over time (no energy counter readings here).";
      return "Measured: NVML's energy counter (joules since the driver loaded), spread over time by the power readings.";
    }
    case "gpu_busy_joules":
    case "gpu_idle_joules": {
      const rule =
        figure === "gpu_idle_joules"
          ? `Idle: the steps where the GPU's utilization averaged below ${idle}, so no kernel ran and the GPU drew its idle power for nothing.`
          : `Busy: the steps where the GPU's utilization averaged ${idle} or more, or was not read.`;
      const why = figureWhy("gpu_joules", status, src, c);
      return why ? `${rule} ${why}` : rule;
    }
    case "cpu_joules":
    case "dram_joules": {
      const what = figure === "dram_joules" ? "DRAM" : "CPU";
      if (status === "measured") return figure === "dram_joules" ? "Measured: RAPL's DRAM energy counter." : "Measured: the CPU packages' RAPL energy counters.";
      if (status !== "estimated") return "";
      if (cpu.includes("rapl") && cpu.includes("coefficient")) {
        return `Estimated: the node's RAPL joules split by CPU samples where the node exposes RAPL, else CPU time × ${watts} (a coefficient).`;
      }
      if (cpu.includes("rapl")) return `Estimated: the node's measured RAPL ${what} joules, split by the share of the node's CPU samples.`;
      return `Estimated: CPU time (samples × sampling period) × ${watts}, a coefficient, not a measurement.`;
    }
    case "total_joules":
    case "kwh": {
      const sum = figure === "kwh" ? "GPU + CPU joules ÷ 3.6 MJ per kWh." : "GPU + CPU joules.";
      if (status === "estimated") return `${sum} Estimated, because part of it is (see the parts).`;
      return status === "measured" ? `${sum} All of it measured.` : sum;
    }
    case "co2_grams":
      return `Estimated: kWh × PUE ${num(c.pue)} × ${num(c.carbon_intensity)} gCO₂e/kWh (the grid's carbon intensity, a coefficient).`;
    case "cost":
      return `Estimated: kWh × ${num(c.price_per_kwh)} per kWh (PUE not applied).`;
  }
}

// Three significant figures with thousands separators: 0.0333, 12.3, 12,300.
function sig3(v: number): string {
  return v.toLocaleString("en-US", { maximumSignificantDigits: 3 });
}

// Energy as kWh, Wh below one kWh and MWh from a thousand: "33.3 Wh", "1.45 kWh", "12.3 MWh".
export function formatKwh(kwh: number): string {
  const a = Math.abs(kwh);
  if (a === 0) return "0 kWh";
  if (a < 1) return `${sig3(kwh * 1000)} Wh`;
  if (a < 1000) return `${sig3(kwh)} kWh`;
  return `${sig3(kwh / 1000)} MWh`;
}

// CO₂-equivalent: "850 g", "3.4 kg", "1.2 t".
export function formatCo2(grams: number): string {
  const a = Math.abs(grams);
  if (a < 1000) return `${sig3(grams)} g`;
  if (a < 1e6) return `${sig3(grams / 1000)} kg`;
  return `${sig3(grams / 1e6)} t`;
}

// Money in the price's currency (no symbol: the answer does not say which):
// "1,234", "12.50", "0.0005".
export function formatCost(cost: number): string {
  const a = Math.abs(cost);
  if (a === 0) return "0";
  if (a >= 1000) return Math.round(cost).toLocaleString("en-US");
  if (a >= 1) return cost.toFixed(2);
  return String(Number(cost.toPrecision(2)));
}

// Watts: "610 W", "1.2 kW".
export function formatWatts(w: number): string {
  const a = Math.abs(w);
  if (a >= 1e6) return `${sig3(w / 1e6)} MW`;
  if (a >= 1000) return `${sig3(w / 1000)} kW`;
  return `${sig3(w)} W`;
}

// The rows the search box leaves: those whose name, detail or labels contain it.
export function filterGroups(groups: EnergyGroupJson[], search: string, groupBy: string): EnergyGroupJson[] {
  const f = search.trim().toLowerCase();
  if (!f) return groups;
  return groups.filter((g) => {
    const t = groupTitle(g.labels, groupBy);
    return `${t.title}\n${t.detail}\n${labelsText(g.labels)}`.toLowerCase().includes(f);
  });
}

// Whether any row has DRAM joules (the table's DRAM column).
export function hasDram(a: EnergyJson): boolean {
  return (a.total.dram_joules ?? 0) > 0 || a.groups.some((g) => (g.dram_joules ?? 0) > 0);
}

// The stacked chart: per step, GPU busy, GPU idle and CPU joules, and as
// average power (joules over the step's length in the range), stacked in
// that order from the bottom.
export interface EnergyLayer {
  key: "gpu_busy" | "gpu_idle" | "cpu";
  label: string;
  joules: number[];
  watts: number[];
  top: number[]; // the stack's height at this layer's top, W
}

export interface EnergyChartData {
  xs: number[]; // each step's start, seconds (uPlot's time scale)
  stepMs: number;
  layers: EnergyLayer[];
}

export function energyChart(steps: EnergyStepsJson | undefined, toMs: number): EnergyChartData | null {
  if (!steps || !steps.t?.length || !(steps.step_ms > 0)) return null;
  const n = steps.t.length;
  const at = (xs: number[] | undefined, i: number) => xs?.[i] ?? 0;
  const idle = steps.t.map((_, i) => at(steps.gpu_idle_joules, i));
  const busy = steps.t.map((_, i) =>
    steps.gpu_busy_joules ? at(steps.gpu_busy_joules, i) : Math.max(0, at(steps.gpu_joules, i) - at(steps.gpu_idle_joules, i)),
  );
  const cpu = steps.t.map((_, i) => at(steps.cpu_joules, i));
  // The last step may end at the range's end, before a whole step.
  const seconds = steps.t.map((t) => {
    const ms = Math.min(steps.step_ms, toMs - t);
    return (ms > 0 ? ms : steps.step_ms) / 1000;
  });
  const layers: EnergyLayer[] = [];
  let below = new Array<number>(n).fill(0);
  for (const [key, label, joules] of [
    ["gpu_busy", "GPU busy", busy],
    ["gpu_idle", "GPU idle", idle],
    ["cpu", "CPU", cpu],
  ] as const) {
    const watts = joules.map((j, i) => j / seconds[i]);
    const top = watts.map((w, i) => below[i] + w);
    layers.push({ key, label, joules, watts, top });
    below = top;
  }
  return { xs: steps.t.map((t) => t / 1000), stepMs: steps.step_ms, layers };
}
