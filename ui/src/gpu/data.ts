// The GPU view's data: the answers of /api/v1/metrics (docs/api.md), their
// points lined up for uPlot, and units made readable.
//
// An answer has one point per step with data ([t_ms, min, max, avg]); steps
// without data are absent. Agents sample GPUs at their own interval, which
// can be longer than a step, so a missing step is not a hole: the points of
// the lines of one chart are merged into one x array, a line has no value
// (undefined, which uPlot spans) where another has a point, and a line is
// only broken (a gap) where its own points are much further apart than usual.
import type { MetricPoint, MetricSeries } from "../api/types";

export type Field = "min" | "max" | "avg";
const FIELD_INDEX: Record<Field, 1 | 2 | 3> = { min: 1, max: 2, avg: 3 };

// What the view fetches per refresh, with the labels each answer is grouped
// by (`gpu` always: one series per GPU, nothing summed across GPUs).
export interface MetricRequest {
  name: string;
  groupBy: string;
  gpm?: boolean; // Hopper and later only: fetched when /api/v1/metric_names has it
}

export const GPU_METRICS: MetricRequest[] = [
  { name: "gpu_utilization", groupBy: "gpu" },
  { name: "gpu_process_sm_utilization", groupBy: "gpu,pid,comm" },
  { name: "gpu_memory_used", groupBy: "gpu" },
  { name: "gpu_memory_total", groupBy: "gpu" },
  { name: "gpu_process_memory_used", groupBy: "gpu,pid,comm" },
  { name: "gpu_sm_clock", groupBy: "gpu" },
  { name: "gpu_sm_clock_max", groupBy: "gpu" },
  { name: "gpu_memory_clock", groupBy: "gpu" },
  { name: "gpu_memory_clock_max", groupBy: "gpu" },
  { name: "gpu_power", groupBy: "gpu" },
  { name: "gpu_power_limit", groupBy: "gpu" },
  { name: "gpu_temperature", groupBy: "gpu" },
  { name: "gpu_temperature_slowdown", groupBy: "gpu" },
  { name: "gpu_pcie_tx", groupBy: "gpu" },
  { name: "gpu_pcie_rx", groupBy: "gpu" },
  { name: "gpu_clock_event_reasons", groupBy: "gpu" },
  { name: "gpu_xid_errors", groupBy: "gpu,xid" },
  { name: "gpu_sm_activity", groupBy: "gpu", gpm: true },
  { name: "gpu_sm_occupancy", groupBy: "gpu", gpm: true },
  { name: "gpu_tensor_activity", groupBy: "gpu", gpm: true },
  { name: "gpu_dram_bandwidth", groupBy: "gpu", gpm: true },
];

// NVML's clock event reasons (nvmlClocksEventReason*), top row first.
export interface ReasonBit {
  bit: number;
  short: string; // fits the 50 px axis
  name: string;
  color: string;
  faint?: boolean;
}
export const REASON_BITS: ReasonBit[] = [
  { bit: 0x80, short: "brake", name: "HW power brake", color: "#b03a2e" },
  { bit: 0x40, short: "HW thrm", name: "HW thermal slowdown", color: "#e74c3c" },
  { bit: 0x20, short: "SW thrm", name: "SW thermal slowdown", color: "#e67e22" },
  { bit: 0x8, short: "HW slow", name: "HW slowdown", color: "#d4ac0d" },
  { bit: 0x4, short: "SW pwr", name: "SW power cap", color: "#8e44ad" },
  { bit: 0x10, short: "sync", name: "sync boost", color: "#2e86c1" },
  { bit: 0x2, short: "app clk", name: "applications clocks setting", color: "#17a589" },
  { bit: 0x100, short: "display", name: "display clock setting", color: "#7f8c8d" },
  { bit: 0x1, short: "idle", name: "GPU idle", color: "", faint: true },
];

export interface LineInput {
  points: MetricPoint[];
  field: Field;
  negate?: boolean;
}

export interface Aligned {
  xs: number[]; // seconds (uPlot's time scale)
  ys: (number | undefined)[][]; // one array per line
  breaks: [number, number][][]; // per line: [from, to] in seconds where the line is broken
  counts: number[]; // per line: points plotted
}

// Merges the lines' points into one x array (see the top of the file).
export function align(lines: LineInput[], stepMs: number): Aligned {
  const times = new Set<number>();
  for (const l of lines) for (const p of l.points) times.add(p[0]);
  const xsMs = Array.from(times).sort((a, b) => a - b);
  const index = new Map<number, number>();
  xsMs.forEach((t, i) => index.set(t, i));
  const ys: (number | undefined)[][] = [];
  const breaks: [number, number][][] = [];
  const counts: number[] = [];
  for (const l of lines) {
    const y = new Array<number | undefined>(xsMs.length).fill(undefined);
    const k = FIELD_INDEX[l.field];
    const sorted = l.points.length > 1 && !isSorted(l.points) ? [...l.points].sort((a, b) => a[0] - b[0]) : l.points;
    for (const p of sorted) {
      const v = p[k];
      if (typeof v === "number" && Number.isFinite(v)) y[index.get(p[0])!] = l.negate ? -v : v;
    }
    ys.push(y);
    counts.push(y.reduce<number>((n, v) => (v === undefined ? n : n + 1), 0));
    breaks.push(findBreaks(sorted, stepMs).map(([a, b]) => [a / 1000, b / 1000]));
  }
  return { xs: xsMs.map((t) => t / 1000), ys, breaks, counts };
}

function isSorted(points: MetricPoint[]): boolean {
  for (let i = 1; i < points.length; i++) if (points[i][0] < points[i - 1][0]) return false;
  return true;
}

// Where consecutive points are more than 2.5 usual intervals apart (the
// usual interval: the median, at least one step): the agent or the GPU was
// away, and the line should not bridge that.
export function findBreaks(points: MetricPoint[], stepMs: number): [number, number][] {
  if (points.length < 2) return [];
  const dts: number[] = [];
  for (let i = 1; i < points.length; i++) dts.push(points[i][0] - points[i - 1][0]);
  const sortedDts = [...dts].sort((a, b) => a - b);
  const median = sortedDts[sortedDts.length >> 1];
  const limit = 2.5 * Math.max(median, stepMs, 1);
  const out: [number, number][] = [];
  for (let i = 0; i < dts.length; i++) if (dts[i] > limit) out.push([points[i][0], points[i + 1][0]]);
  return out;
}

export function meanOf(points: MetricPoint[], field: Field = "avg"): number {
  if (points.length === 0) return 0;
  const k = FIELD_INDEX[field];
  let s = 0;
  for (const p of points) s += p[k];
  return s / points.length;
}

// Reference lines (memory total, power limit, max clocks, slowdown
// temperature) are usually the same on every GPU of a node: one line then.
export function sameValues(series: MetricSeries[]): boolean {
  if (series.length < 2) return true;
  const values = (s: MetricSeries) => new Set(s.points.map((p) => p[3]));
  const first = values(series[0]);
  return series.every((s) => {
    const v = values(s);
    return v.size === first.size && [...v].every((x) => first.has(x));
  });
}

// Units: values are shown divided by `div`, with `suffix` (the chart's
// title names the suffix; the axis shows bare numbers so it fits 50 px).
export interface Scale {
  div: number;
  suffix: string;
}

export function scaleFor(unit: string, maxAbs: number): Scale {
  switch (unit) {
    case "percent":
      return { div: 1, suffix: "%" };
    case "bytes":
      if (maxAbs >= 2 ** 30) return { div: 2 ** 30, suffix: "GiB" };
      if (maxAbs >= 2 ** 20) return { div: 2 ** 20, suffix: "MiB" };
      return { div: 2 ** 10, suffix: "KiB" };
    case "bytes_per_second":
      if (maxAbs >= 1e9) return { div: 1e9, suffix: "GB/s" };
      if (maxAbs >= 1e6) return { div: 1e6, suffix: "MB/s" };
      return { div: 1e3, suffix: "kB/s" };
    case "mhz":
      return { div: 1, suffix: "MHz" };
    case "watts":
      return { div: 1, suffix: "W" };
    case "celsius":
      return { div: 1, suffix: "°C" };
    case "joules":
      return maxAbs >= 1e6 ? { div: 3.6e6, suffix: "kWh" } : { div: 1e3, suffix: "kJ" };
    default:
      return { div: 1, suffix: unit === "count" ? "" : unit };
  }
}

// A number for an axis or a legend: 3 significant digits at most, no
// exponent. Negative values are kept (the PCIe chart's RX side shows as
// its magnitude where the caller asks for it).
export function formatNumber(v: number): string {
  const a = Math.abs(v);
  if (a === 0) return "0";
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return Number(v.toFixed(1)).toString();
  if (a >= 1) return Number(v.toFixed(2)).toString();
  return Number(v.toPrecision(2)).toString();
}

export function formatValue(v: number, scale: Scale): string {
  const n = formatNumber(v / scale.div);
  if (!scale.suffix) return n;
  return scale.suffix === "%" ? `${n}%` : `${n} ${scale.suffix}`;
}

// The labels' Prometheus-style selector: {node="a", gpu="0"}.
export function selectorOf(labels: Record<string, string>): string {
  const parts = Object.entries(labels)
    .filter(([, v]) => v !== "")
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return `{${parts.join(", ")}}`;
}
