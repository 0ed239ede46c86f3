// How a profile's values read: `cpu` counts samples (each period_nanos of
// CPU time); `gpu_time`, `off_cpu`, `gpu_wait` and any other type in
// nanoseconds is time. One place so the type picker, the flame graph's
// tooltips, the top table, the sandwich, the diff, the flame chart and the
// timeline's axis agree.
import { formatNanos } from "./time";

export interface ValueUnit {
  type: string;
  unit: string; // "samples" or "nanoseconds" (docs/api.md)
  periodNanos: number;
}

export function isTimeUnit(u: ValueUnit): boolean {
  return u.unit === "nanoseconds";
}

// "1,234 (12.3 s)" for CPU samples, "4.56 ms" for nanoseconds, a plain count otherwise.
export function formatValue(v: number, u: ValueUnit): string {
  if (isTimeUnit(u)) return formatNanos(v);
  const n = Number.isInteger(v) ? v.toLocaleString("en-US") : v.toFixed(1);
  if (u.unit === "samples" && u.periodNanos > 0) return `${n} (${formatNanos(v * u.periodNanos)})`;
  return n;
}

// The types the agent sends in nanoseconds per second of its windows
// (off-CPU waits, GPU kernels, waits in CUDA synchronisation calls), as
// opposed to `cpu`'s samples stamped with their second.
const NANOSECOND_TYPES = new Set(["gpu_time", "off_cpu", "gpu_wait"]);

// gpu_time, off_cpu and gpu_wait: summed per second, so an absolute range
// that is not whole seconds asks for the seconds it touches
// (views/profile_graph.ts perSecondRange), and their unit is nanoseconds
// before /api/v1/types has said so.
export function isPerSecondType(type: string): boolean {
  return NANOSECOND_TYPES.has(type);
}

// The type picker's name of a type: "CPU time", "off-CPU time", "GPU time",
// "GPU wait"; another type by its own name.
export function typeLabel(type: string): string {
  switch (type) {
    case "cpu":
      return "CPU time";
    case "off_cpu":
      return "off-CPU time";
    case "gpu_time":
      return "GPU time";
    case "gpu_wait":
      return "GPU wait";
    default:
      return type;
  }
}

// What time of a profile type is called: "CPU time", "GPU time", "off-CPU
// time", "GPU wait time", else "time".
export function timeNoun(type: string): string {
  switch (type) {
    case "cpu":
      return "CPU time";
    case "gpu_time":
      return "GPU time";
    case "off_cpu":
      return "off-CPU time";
    case "gpu_wait":
      return "GPU wait time";
    default:
      return "time";
  }
}

// What a total is called: "samples", "GPU time", "off-CPU time", "GPU wait time".
export function valueNoun(u: ValueUnit): string {
  if (isTimeUnit(u)) return u.type === "cpu" ? "time" : timeNoun(u.type);
  return u.unit || "samples";
}

// What a stretch without boxes in a thread's flame-chart lane means.
export function blankMeaning(type: string): string {
  switch (type) {
    case "gpu_time":
      return "no kernel of the thread's running";
    case "off_cpu":
      return "not blocked";
    case "gpu_wait":
      return "not waiting on the GPU";
    default:
      return "off CPU";
  }
}

// The flame chart's lane header suffix: "12.3 s CPU", "40 ms GPU wait".
export function laneNoun(type: string): string {
  switch (type) {
    case "cpu":
      return "CPU";
    case "gpu_time":
      return "GPU";
    case "off_cpu":
      return "off-CPU";
    case "gpu_wait":
      return "GPU wait";
    default:
      return "";
  }
}
