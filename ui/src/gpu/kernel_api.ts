// What the UI knows of the GPU activity endpoints (docs/api.md, "GET
// /api/v1/gpu/...") beyond their answers' types (api/types.ts): the kernel
// table (/api/v1/gpu/kernels), the per-stream trace (/api/v1/gpu/trace,
// ranges up to 10 s) and its Chrome/Perfetto download
// (/api/v1/gpu/trace.json). All three take from, to and selector.
import type { ActivityKindName } from "../api/types";

// The trace is only served (and the timeline only drawn) for ranges up to this.
export const MAX_TRACE_MS = 10_000;

// The trace's numeric kinds, in this order: 0 kernel, 1 memcpy, 2 memset.
export const ACTIVITY_KINDS: ActivityKindName[] = ["kernel", "memcpy", "memset"];

// "7 × 1 × 1" (trailing ones kept: grid and block read as three numbers).
export function formatDim(d: readonly number[] | undefined): string {
  return d && d.length === 3 ? d.join("×") : "–";
}
