// How a profile's values read: `cpu` counts samples (each period_nanos of
// CPU time), `gpu_time`, `off_cpu` and any other type in nanoseconds is time. One place
// so the flame graph's tooltips, the top table, the sandwich, the diff and
// the timeline's axis agree.
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

// What time of a profile type is called: "CPU time", "GPU time", "off-CPU
// time", else "time".
export function timeNoun(type: string): string {
  return type === "cpu" ? "CPU time" : type === "gpu_time" ? "GPU time" : type === "off_cpu" ? "off-CPU time" : "time";
}

// What a total is called: "samples", "GPU time", "off-CPU time".
export function valueNoun(u: ValueUnit): string {
  if (isTimeUnit(u)) return u.type === "cpu" ? "time" : timeNoun(u.type);
  return u.unit || "samples";
}
