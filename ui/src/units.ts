// How a profile's values read: `cpu` counts samples (each period_nanos of
// CPU time); `gpu_time`, `off_cpu`, `gpu_wait` and any other type in
// nanoseconds is time; `gpu_energy` (and any type in microjoules) is
// energy, read as mJ / J / kJ / MJ. One place so the type picker, the flame
// graph's tooltips, the top table, the sandwich, the diff, the flame chart
// and the timeline's axis agree.
import { formatNanos } from "./time";

export interface ValueUnit {
  type: string;
  unit: string; // "samples", "nanoseconds" or "microjoules" (docs/api.md)
  periodNanos: number;
}

export function isTimeUnit(u: ValueUnit): boolean {
  return u.unit === "nanoseconds";
}

export function isEnergyUnit(u: ValueUnit): boolean {
  return u.unit === "microjoules";
}

// Joules at a readable scale, three significant figures: "850 µJ", "4.20 mJ",
// "12.3 J", "1.45 kJ", "3.60 MJ", "0 J".
export function formatJoules(j: number): string {
  // Rounded to three figures first, so 999.7 J reads "1.00 kJ".
  const a = Math.abs(Number(j.toPrecision(3)));
  if (a === 0) return "0 J";
  const fixed = (x: number) => (Math.abs(x) < 10 ? x.toFixed(2) : Math.abs(x) < 100 ? x.toFixed(1) : x.toFixed(0));
  for (const [size, unit] of [[1e12, "TJ"], [1e9, "GJ"], [1e6, "MJ"], [1e3, "kJ"], [1, "J"], [1e-3, "mJ"]] as const) {
    if (a >= size) return `${fixed(j / size)} ${unit}`;
  }
  return `${fixed(j * 1e6)} µJ`;
}

// A gpu_energy value (microjoules) as joules: formatJoules.
export function formatMicrojoules(uj: number): string {
  return formatJoules(uj / 1e6);
}

// Microjoules in at most 5 characters, for the timeline's 50 px axis: "0",
// "40mJ", "850J", "12kJ", "1.5MJ".
export function compactMicrojoules(uj: number): string {
  const j = uj / 1e6;
  const a = Math.abs(j);
  if (a === 0) return "0";
  const trim = (x: number, unit: string) => `${+x.toFixed(x < 10 ? 1 : 0)}${unit}`;
  if (a >= 1e9) return trim(j / 1e9, "GJ");
  if (a >= 1e6) return trim(j / 1e6, "MJ");
  if (a >= 1e3) return trim(j / 1e3, "kJ");
  if (a >= 1) return trim(j, "J");
  if (a >= 1e-3) return trim(j * 1e3, "mJ");
  return `${Math.round(uj)}µJ`;
}

// "1,234 (12.3 s)" for CPU samples, "4.56 ms" for nanoseconds, "12.3 J" for
// microjoules, a plain count otherwise.
export function formatValue(v: number, u: ValueUnit): string {
  if (isTimeUnit(u)) return formatNanos(v);
  if (isEnergyUnit(u)) return formatMicrojoules(v);
  const n = Number.isInteger(v) ? v.toLocaleString("en-US") : v.toFixed(1);
  if (u.unit === "samples" && u.periodNanos > 0) return `${n} (${formatNanos(v * u.periodNanos)})`;
  return n;
}

// The types the agent sends in nanoseconds per second of its windows
// (off-CPU waits, GPU kernels, waits in CUDA synchronisation calls), as
// opposed to `cpu`'s samples stamped with their second.
const NANOSECOND_TYPES = new Set(["gpu_time", "off_cpu", "gpu_wait"]);
// gpu_energy: the server weights gpu_time's per-second stacks by the joules
// the GPU used then (docs/api.md), in microjoules.
const MICROJOULE_TYPES = new Set(["gpu_energy"]);

// gpu_time, off_cpu, gpu_wait and gpu_energy: summed per second, so an
// absolute range that is not whole seconds asks for the seconds it touches
// (views/profile_graph.ts perSecondRange).
export function isPerSecondType(type: string): boolean {
  return NANOSECOND_TYPES.has(type) || MICROJOULE_TYPES.has(type);
}

// A type's unit before /api/v1/types has said so: "microjoules" for
// gpu_energy, "nanoseconds" for the other per-second types, else "samples".
export function unitOfType(type: string): string {
  if (MICROJOULE_TYPES.has(type)) return "microjoules";
  return NANOSECOND_TYPES.has(type) ? "nanoseconds" : "samples";
}

// The type picker's name of a type: "CPU time", "off-CPU time", "GPU time",
// "GPU wait", "GPU energy"; another type by its own name.
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
    case "gpu_energy":
      return "GPU energy";
    case "gpu_pc":
      return "GPU instructions";
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

// What a per-second type's values are called: its timeNoun, "GPU energy" for gpu_energy.
export function quantityNoun(type: string): string {
  return MICROJOULE_TYPES.has(type) ? typeLabel(type) : timeNoun(type);
}

// What a total is called: "samples", "GPU time", "off-CPU time", "GPU wait
// time", "GPU energy" ("energy" for another type in microjoules).
export function valueNoun(u: ValueUnit): string {
  if (isTimeUnit(u)) return u.type === "cpu" ? "time" : timeNoun(u.type);
  if (isEnergyUnit(u)) return MICROJOULE_TYPES.has(u.type) ? typeLabel(u.type) : "energy";
  return u.unit || "samples";
}

// What a stretch without boxes in a thread's flame-chart lane means.
export function blankMeaning(type: string): string {
  switch (type) {
    case "gpu_time":
    case "gpu_energy":
      return "no kernel of the thread's running";
    case "off_cpu":
      return "not blocked";
    case "gpu_wait":
      return "not waiting on the GPU";
    default:
      return "off CPU";
  }
}

// The flame chart's lane header suffix: "12.3 s CPU", "40 ms GPU wait"
// (gpu_energy's joules need none).
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
