// The GPU activity endpoints' answers (docs/api.md, "GET /api/v1/gpu/..."):
// the kernel table (/api/v1/gpu/kernels), the per-stream trace
// (/api/v1/gpu/trace, ranges up to 10 s) and its Chrome/Perfetto download
// (/api/v1/gpu/trace.json). All three take from, to and selector.

// The trace is only served (and the timeline only drawn) for ranges up to this.
export const MAX_TRACE_MS = 10_000;

export type ActivityKindName = "kernel" | "memcpy" | "memset";
// The trace's numeric kinds, in this order: 0 kernel, 1 memcpy, 2 memset.
export const ACTIVITY_KINDS: ActivityKindName[] = ["kernel", "memcpy", "memset"];

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

// [start_ns (absolute unix), duration_ns, name index, kind, correlation_id, graph_id]
export type ActivityTuple = [number, number, number, number, number, number];

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
  streams: TraceStream[];
  coverage: TraceCoverage[];
}

// "7 × 1 × 1" (trailing ones kept: grid and block read as three numbers).
export function formatDim(d: readonly number[] | undefined): string {
  return d && d.length === 3 ? d.join("×") : "–";
}
