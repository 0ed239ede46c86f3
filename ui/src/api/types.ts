// The answers of warpscope-server's API as the UI reads them, one interface
// per answer (or part of one). docs/api.md is their contract: a field is
// added, renamed or dropped there first, then here. Only what the UI uses is
// declared; the server may send more (e.g. `incomplete`).
// Types only: this module has no code.

// Every error: {"error": {"code": <HTTP status>, "message": "..."}}.
export interface ErrorJson {
  error?: { code?: number; message?: string };
}

// GET /api/v1/types: the profile types stored.
export interface TypesJson {
  types: { name: string; unit: string; period_nanos: number }[];
}

// GET /api/v1/profile (format=json): a call tree in depth-first preorder,
// each node [parent, name, binary, kind, self, total].
export interface ProfileJson {
  version: number;
  type: string;
  unit: string;
  period_nanos: number;
  total: number;
  truncated: number;
  names: string[];
  binaries: string[];
  nodes: number[][];
}

// GET /api/v1/diff: one tree of two ranges, each node
// [parent, name, binary, kind, base_self, base_total, target_self, target_total].
export interface DiffJson {
  version: number;
  type: string;
  unit: string;
  period_nanos: number;
  base_total: number;
  target_total: number;
  truncated: number;
  names: string[];
  binaries: string[];
  nodes: number[][];
}

// GET /api/v1/top
export interface TopJson {
  unit: string; // "samples" (period_nanos each) or "nanoseconds"
  total: number;
  function_count: number;
  period_nanos: number;
  functions: { name: string; binary: string; kind: number; self: number; total: number }[];
}

// GET /api/v1/series: a point [t_ms, value] sums [t, t + step); empty steps are left out.
export interface SeriesJson {
  from_ms: number;
  to_ms: number;
  step_ms: number;
  series: { labels: Record<string, string>; points: [number, number][] }[];
}

// GET /api/v1/flamechart
export interface FlameChartLaneJson {
  labels: Record<string, string>;
  total: number;
  points: [number, number, number][]; // [t_ms, stack, value], ascending t_ms
}

export interface FlameChartJson {
  version: number;
  type: string;
  unit: string; // "samples" (period_nanos each) or "nanoseconds"
  period_nanos: number;
  from_ms: number;
  to_ms: number;
  total: number; // all lanes, the truncated ones included
  names: string[];
  binaries: string[];
  frames: [number, number, number][]; // [name, binary, kind]
  stacks: number[][]; // frame indexes, root first
  lanes: FlameChartLaneJson[];
  truncated_lanes: number;
  truncated_total?: number; // the left-out lanes' values (the server sends it; not in the first contract)
}

// GET /api/v1/targets
export interface GpuInfo {
  gpu: string; // NVML's index on the node
  uuid: string;
  gpu_name: string;
  pci_bus_id: string;
}

export interface TargetsJson {
  nodes: {
    node: string;
    series: number;
    processes: { pid: string; comm: string; exe: string; container_id?: string }[];
    gpus?: GpuInfo[]; // nodes whose agent sends GPU metrics
  }[];
}

// GET /api/v1/metrics: one point per step with data ([t_ms, min, max, avg]);
// steps without data are absent.
export type MetricPoint = [t: number, min: number, max: number, avg: number];

export interface MetricSeries {
  labels: Record<string, string>;
  points: MetricPoint[];
}

export interface MetricJson {
  name: string;
  unit: string;
  from_ms: number;
  to_ms: number;
  step_ms: number;
  series: MetricSeries[];
}

// GET /api/v1/metric_names
export interface MetricNamesJson {
  metrics: { name: string; unit: string }[];
}

// GET /api/v1/gpu/kernels
export type ActivityKindName = "kernel" | "memcpy" | "memset";

export interface KernelRow {
  kind: ActivityKindName;
  name: string; // demangled
  system_name: string; // mangled
  launches: number;
  total_ns: number;
  mean_ns: number;
  p50_ns: number;
  p95_ns: number;
  max_ns: number;
  grid: [number, number, number];
  block: [number, number, number];
  configs: number; // distinct launch configurations; grid/block are the most common one
  share: number; // of total_ns over all rows, 0..1
}

export interface KernelsJson {
  from_ns: number;
  to_ns: number;
  activities: number;
  recorded: number; // activities that ran (coverage)
  sent: number; // activities the agents kept in the trace: the rows are based on these
  total_ns: number;
  kernels: KernelRow[]; // by total_ns, largest first
}

// GET /api/v1/gpu/kernel_source (gpu_pc: inside one kernel)
export interface StallReason {
  name: string; // plain words
  cupti_name: string;
  class: string; // memory, compute, sync, issuing, other
  value: number;
}
export interface SourceInstruction {
  offset: number;
  text: string; // SASS; "" without nvdisasm on the agent's host
  value: number;
  stalls: [number, number][]; // [index into stalls, cycles]
}
export interface SourceLine {
  file: string; // "" without line information
  line: number;
  function: string; // the inlined function, "" for the kernel's own code
  value: number;
  instructions: SourceInstruction[];
}
export interface KernelCubin {
  hash: string; // XXH3-128 of the cubin, 32 hex digits
  stored: boolean; // the server's cubin store holds it: GET /api/v1/gpu/cubins/<hash>
  bytes: number; // 0 when not stored
}
export interface KernelSourceJson {
  kernel: string;
  system_name: string;
  total: number;
  sass: boolean;
  stalls: StallReason[];
  lines: SourceLine[];
  shares: Record<string, number>;
  cubins?: KernelCubin[]; // the cubins its instructions came from
}

// GET /api/v1/gpu/trace
// [start_ns (absolute unix), duration_ns, name index, kind, correlation_id, graph_id,
//  launch_start_ns (absolute; 0 unknown), launch_duration_ns, launch_tid, launch_api (index into launch_apis)]
export type ActivityTuple = [number, number, number, number, number, number, number?, number?, number?, number?];

export interface TraceStream {
  labels: Record<string, string>;
  device: number;
  stream: number;
  busy_ns: number;
  activities: ActivityTuple[];
}

export interface TraceCoverage {
  labels: Record<string, string>;
  second_ns: number;
  recorded: number;
  sent: number;
  complete_until_ns: number; // the second's end when nothing was dropped
}

export interface TraceJson {
  from_ns: number;
  to_ns: number;
  names: string[];
  launch_apis?: string[];
  streams: TraceStream[];
  coverage: TraceCoverage[];
}

// GET /api/v1/insights: answers with evidence (docs/design/insights.md),
// sorted by the GPU time each could save, largest first. Every kind has this
// shape; kinds the UI does not know are shown from these fields alone.
export interface InsightFunctionJson {
  name: string;
  binary: string;
  kind: number; // as a flame graph node's: 0 native, 1 kernel, 2 Python, 4 CUDA kernel
  value: number; // in the evidence profile's unit
  share: number; // of the evidence, 0..1
}

// A view of exactly the evidence: `view` is the API's name ("flame",
// "flamechart", "gpus", ...), over [from, to) ms with `selector` and `type`.
export interface InsightLinkJson {
  view: string;
  type?: string;
  selector?: string;
  from: number;
  to: number;
}

export interface InsightJson {
  kind: string; // gpu_starved_by_cpu, sync_heavy, ...
  target: Record<string, string>; // node, pid, comm, and gpu or thread
  severity: string; // high, medium, low
  saving_gpu_seconds: number;
  saving_share: number; // the saving over the range's length, 0..1
  confidence: string; // high, medium, low
  confidence_reason: string;
  summary: string;
  fix: string;
  fix_reason: string;
  numbers?: Record<string, number>;
  ranges: { from: number; to: number }[]; // ms, longest first
  sparkline: [number, number][]; // per step [t_ms, value]
  evidence?: { type: string; selector: string };
  links: InsightLinkJson[];
  functions?: InsightFunctionJson[];
  waited_for?: InsightFunctionJson[]; // the kernels the waits waited for
  kernels?: InsightFunctionJson[]; // launch_bound, fusion_candidate: the evidence's kernels
  sequence?: string[]; // fusion_candidate: the kernels in launch order
}

export interface InsightsJson {
  version: number;
  from: number;
  to: number;
  step_ms: number;
  options: Record<string, number>; // the thresholds the finders used
  insights: InsightJson[];
}

// GET /api/v1/energy: joules, kWh, CO₂ and cost over the range per group
// (docs/api.md "Energy", docs/design/energy.md). With `step`, each group and
// the total carry `steps`: joules per step for the chart.
export interface EnergyStepsJson {
  step_ms: number;
  t: number[]; // each step's start, ms
  gpu_joules: number[];
  gpu_busy_joules?: number[]; // else gpu_joules − gpu_idle_joules
  gpu_idle_joules: number[];
  cpu_joules: number[];
}

export interface EnergyFiguresJson {
  gpu_joules: number;
  gpu_busy_joules: number;
  gpu_idle_joules: number;
  cpu_joules: number;
  dram_joules?: number; // RAPL's DRAM zone, where a node exposes it
  total_joules: number;
  kwh: number;
  co2_grams: number;
  cost: number;
  steps?: EnergyStepsJson;
}

export interface EnergyGroupJson extends EnergyFiguresJson {
  labels: Record<string, string>; // {node}, {node, gpu}, {node, pid, comm}, {namespace, pod}
  gpu_source: string | null; // energy_counter, power_integration, both joined by "+", null: no GPU joules
  cpu_source?: string | null; // rapl, coefficient, both joined by "+"
  gpu_apportioned_by?: string | null; // gpu_time, sm_utilization, both joined by "+"
  measured: string[]; // the figures measured (field names)
  estimated: string[]; // and those estimated
}

export interface EnergyCoefficientsJson {
  pue: number;
  carbon_intensity: number; // gCO₂e per kWh
  price_per_kwh: number;
  cpu_watts_per_core: number;
  idle_utilization_percent?: number;
}

export interface EnergyJson {
  from: number;
  to: number;
  coefficients: EnergyCoefficientsJson;
  total: EnergyFiguresJson;
  groups: EnergyGroupJson[]; // largest total_joules first
}
