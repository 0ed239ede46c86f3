// Which charts the GPUs view draws for one node's metrics, and their lines:
// utilization (with a min–max band for one GPU) and the busiest processes,
// memory, clocks, power, temperature, PCIe, clock events and XIDs, and the
// GPM metrics of Hopper and later. One GPU: its lines in the foreground
// colour, processes one colour each; several: a colour per GPU, limits once
// when every GPU has the same. Drawing them: charts.ts. Pure (no DOM): the
// unit tests run it in Node.
import type { GpuInfo, MetricJson, MetricSeries } from "../api/types";
import { LineInput, meanOf, sameValues } from "./data";

const MAX_PROCESS_LINES = 12;

export interface Theme {
  fg: string;
  muted: string;
  grid: string;
  warn: string;
  palette: string[];
}

export interface LineSpec {
  label: string;
  input: LineInput;
  color: string;
  width: number;
  dash?: number[];
  pid?: string; // a process's line: its legend item focuses (or unfocuses) the process
  focused?: boolean;
  minMax?: [LineInput, LineInput]; // a faint band from min to max around the line
}

export interface LineChartSpec {
  kind: "lines";
  metric: string; // data-metric: the chart's first metric
  metrics: string[];
  title: string;
  unit: string; // the API's unit of every line
  lines: LineSpec[];
  y: "percent" | "zero" | "symmetric";
  magnitude?: boolean; // the legend shows |v| (PCIe RX, drawn downward)
  note?: string; // after the legend ("+3 more processes")
}

export interface ThrottleChartSpec {
  kind: "throttle";
  metric: string;
  metrics: string[];
  title: string;
  reasons: LineInput[]; // one per GPU, field max; OR-ed together
  xids: { label: string; input: LineInput }[];
  note?: string;
}

export type ChartSpec = LineChartSpec | ThrottleChartSpec;

// `#rrggbb` with an alpha; other colour syntaxes are left as they are.
export function withAlpha(color: string, alpha: number): string {
  if (!/^#[0-9a-f]{6}$/i.test(color)) return color;
  return color + Math.round(alpha * 255).toString(16).padStart(2, "0");
}

// What the charts are drawn from: the node's metrics by name, its GPUs, the picked one ("": all).
export interface ChartInput {
  metrics: Map<string, MetricJson>;
  gpus: GpuInfo[];
  gpu: string;
}

export const byGpuIndex = (a: string, b: string) => Number(a) - Number(b) || a.localeCompare(b);

// The charts for what the answers hold: a chart without points is left out.
export function gpuChartSpecs(d: ChartInput, focusPid: string, theme: Theme): ChartSpec[] {
  const series = (name: string): MetricSeries[] =>
    (d.metrics.get(name)?.series ?? []).filter((x) => x.points.length > 0).sort((a, b) => byGpuIndex(a.labels.gpu ?? "", b.labels.gpu ?? ""));
  const unitOf = (name: string, fallback: string) => d.metrics.get(name)?.unit || fallback;
  // The GPUs with data: one line each unless one GPU is picked (or there is only one).
  const gpuIds = new Set<string>(d.gpus.map((g) => g.gpu));
  for (const x of series("gpu_utilization")) gpuIds.add(x.labels.gpu ?? "");
  const order = [...gpuIds].sort(byGpuIndex);
  const single = d.gpu !== "" || order.length <= 1;
  const gpuColor = (x: MetricSeries) => (single ? theme.fg : theme.palette[Math.max(0, order.indexOf(x.labels.gpu ?? "")) % theme.palette.length]);
  const gpuName = (x: MetricSeries) => `GPU ${x.labels.gpu ?? "?"}`;
  const avg = (x: MetricSeries) => ({ points: x.points, field: "avg" as const });

  // The GPU's own lines: bold, the foreground colour (one GPU) or one colour per GPU.
  const main = (name: string, label: string, opts: Partial<LineSpec> = {}): LineSpec[] =>
    series(name).map((x) => ({
      label: single ? label : `${gpuName(x)}${label === "utilization" ? "" : ` ${label}`}`,
      input: avg(x),
      color: gpuColor(x),
      width: 2,
      ...opts,
    }));
  // Limits and maxima: dashed, one line when every GPU has the same.
  const ref = (name: string, label: string, color = theme.muted): LineSpec[] => {
    const xs = series(name);
    if (xs.length === 0) return [];
    if (single || sameValues(xs)) return [{ label: single ? label : `${label} (each GPU)`, input: avg(xs[0]), color, width: 1.25, dash: [6, 4] }];
    return xs.map((x) => ({ label: `${gpuName(x)} ${label}`, input: avg(x), color: gpuColor(x), width: 1.25, dash: [6, 4] }));
  };
  // Processes: thin lines, the busiest MAX_PROCESS_LINES (and the focused
  // one). One GPU: a colour per process (by pid order, the same in every
  // chart); all GPUs: the GPU's colour, dashed.
  const procKeys = new Set<string>();
  for (const name of ["gpu_process_sm_utilization", "gpu_process_memory_used"])
    for (const x of series(name)) procKeys.add(`${x.labels.pid ?? ""}/${x.labels.comm ?? ""}`);
  const procColor = new Map<string, string>();
  [...procKeys]
    .sort((a, b) => parseInt(a) - parseInt(b) || a.localeCompare(b))
    .forEach((k, i) => procColor.set(k, theme.palette[i % theme.palette.length]));
  let hidden = 0;
  const processes = (name: string): LineSpec[] => {
    const ranked = series(name)
      .map((x) => ({ x, mean: meanOf(x.points) }))
      .sort((a, b) => b.mean - a.mean);
    const kept = ranked.filter((r, i) => i < MAX_PROCESS_LINES || r.x.labels.pid === focusPid);
    hidden = ranked.length - kept.length;
    return kept.map(({ x }) => {
      const pid = x.labels.pid ?? "";
      const comm = x.labels.comm || "?";
      const focused = focusPid !== "" && pid === focusPid;
      const base = single ? procColor.get(`${pid}/${x.labels.comm ?? ""}`)! : gpuColor(x);
      return {
        label: `${comm} (${pid})${single ? "" : ` · GPU ${x.labels.gpu ?? "?"}`}`,
        input: avg(x),
        color: focusPid && !focused ? withAlpha(base, 0.35) : base,
        width: focused ? 2.5 : 1.25,
        dash: single ? undefined : [5, 3],
        pid,
        focused,
      };
    });
  };
  const more = () => (hidden > 0 ? `+${hidden} more process${hidden === 1 ? "" : "es"}` : undefined);
  const specs: ChartSpec[] = [];
  const lines = (spec: LineChartSpec) => {
    if (spec.lines.some((l) => l.input.points.length > 0)) specs.push(spec);
  };

  // Utilization, with a faint min–max band when one GPU is shown.
  const util = main("gpu_utilization", "utilization");
  if (single) {
    const x = series("gpu_utilization")[0];
    if (x && util[0]) util[0].minMax = [{ points: x.points, field: "min" }, { points: x.points, field: "max" }];
  }
  const utilProcs = processes("gpu_process_sm_utilization");
  lines({
    kind: "lines",
    metric: "gpu_utilization",
    metrics: ["gpu_utilization", "gpu_process_sm_utilization"],
    title: "Utilization",
    unit: "percent",
    lines: [...util, ...utilProcs],
    y: "percent",
    note: more(),
  });
  const memProcs = processes("gpu_process_memory_used");
  lines({
    kind: "lines",
    metric: "gpu_memory_used",
    metrics: ["gpu_memory_used", "gpu_memory_total", "gpu_process_memory_used"],
    title: "Memory",
    unit: unitOf("gpu_memory_used", "bytes"),
    lines: [...main("gpu_memory_used", "used"), ...ref("gpu_memory_total", "total"), ...memProcs],
    y: "zero",
    note: more(),
  });
  const p = theme.palette;
  lines({
    kind: "lines",
    metric: "gpu_sm_clock",
    metrics: ["gpu_sm_clock", "gpu_memory_clock", "gpu_sm_clock_max", "gpu_memory_clock_max"],
    title: "Clocks",
    unit: "mhz",
    lines: single
      ? [
          ...main("gpu_sm_clock", "SM", { color: p[0] }),
          ...main("gpu_memory_clock", "memory", { color: p[1] }),
          ...ref("gpu_sm_clock_max", "SM max", p[0]),
          ...ref("gpu_memory_clock_max", "memory max", p[1]),
        ]
      : [
          ...main("gpu_sm_clock", "SM", { width: 1.5 }),
          ...main("gpu_memory_clock", "memory", { width: 1.25, dash: [2, 3] }),
          ...ref("gpu_sm_clock_max", "SM max"),
          ...ref("gpu_memory_clock_max", "memory max"),
        ],
    y: "zero",
  });
  lines({
    kind: "lines",
    metric: "gpu_power",
    metrics: ["gpu_power", "gpu_power_limit"],
    title: "Power",
    unit: "watts",
    lines: [...main("gpu_power", "power"), ...ref("gpu_power_limit", "limit")],
    y: "zero",
  });
  lines({
    kind: "lines",
    metric: "gpu_temperature",
    metrics: ["gpu_temperature", "gpu_temperature_slowdown"],
    title: "Temperature",
    unit: "celsius",
    lines: [...main("gpu_temperature", "temperature"), ...ref("gpu_temperature_slowdown", "slowdown", theme.warn)],
    y: "zero",
  });
  lines({
    kind: "lines",
    metric: "gpu_pcie_tx",
    metrics: ["gpu_pcie_tx", "gpu_pcie_rx"],
    title: "PCIe (TX ↑, RX ↓)",
    unit: "bytes_per_second",
    lines: [
      ...main("gpu_pcie_tx", "TX", single ? { color: p[0] } : {}),
      ...series("gpu_pcie_rx").map((x) => ({
        label: single ? "RX" : `${gpuName(x)} RX`,
        input: { ...avg(x), negate: true },
        color: single ? p[1] : withAlpha(gpuColor(x), 0.7),
        width: 2,
      })),
    ],
    y: "symmetric",
    magnitude: true,
  });
  const reasons = series("gpu_clock_event_reasons");
  const xids = series("gpu_xid_errors").map((x) => ({
    label: `${single ? "" : `${gpuName(x)} `}XID ${x.labels.xid ?? "?"}`,
    input: { points: x.points, field: "max" as const },
  }));
  if (reasons.length > 0 || xids.some((x) => x.input.points.some((pt) => pt[2] > 0))) {
    specs.push({
      kind: "throttle",
      metric: "gpu_clock_event_reasons",
      metrics: ["gpu_clock_event_reasons", "gpu_xid_errors"],
      title: "Clock events",
      reasons: reasons.map((x) => ({ points: x.points, field: "max" })),
      xids,
      note: single || reasons.length < 2 ? undefined : "(any GPU)",
    });
  }
  // GPM (Hopper and later): one chart of four lines for one GPU, else one chart per metric.
  const gpm: [string, string][] = [
    ["gpu_sm_activity", "SM activity"],
    ["gpu_sm_occupancy", "SM occupancy"],
    ["gpu_tensor_activity", "tensor activity"],
    ["gpu_dram_bandwidth", "DRAM bandwidth"],
  ];
  const present = gpm.filter(([name]) => series(name).length > 0);
  if (single && present.length > 0) {
    lines({
      kind: "lines",
      metric: present[0][0],
      metrics: present.map(([name]) => name),
      title: "SM, tensor and DRAM activity",
      unit: "percent",
      lines: present.flatMap(([name, label]) => main(name, label, { color: p[gpm.findIndex(([n]) => n === name)], width: 1.5 })),
      y: "percent",
    });
  } else {
    for (const [name, label] of present) {
      lines({
        kind: "lines",
        metric: name,
        metrics: [name],
        title: label[0].toUpperCase() + label.slice(1),
        unit: "percent",
        lines: main(name, "utilization"),
        y: "percent",
      });
    }
  }
  return specs;
}
