// CPU use per process for the targets view: the cpu series grouped by node
// and pid over the whole range (one step), so the busiest processes come
// first. Pure (no DOM): the unit tests run it in Node.
import type { SeriesJson } from "../api/types";

export type CpuByProcess = Map<string, number>; // processKey → samples

export const processKey = (node: string, pid: string): string => `${node}\u0000${pid}`;

// The step that puts a range in one point: whole seconds, at least 1 s.
export function wholeRangeStep(fromMs: number, toMs: number): string {
  return `${Math.max(1, Math.ceil((toMs - fromMs) / 1000))}s`;
}

export function cpuByProcess(series: SeriesJson): CpuByProcess {
  const out: CpuByProcess = new Map();
  for (const s of series.series) {
    const key = processKey(s.labels.node ?? "", s.labels.pid ?? "");
    const sum = s.points.reduce((a, p) => a + p[1], 0);
    out.set(key, (out.get(key) ?? 0) + sum);
  }
  return out;
}

// Processes by CPU samples, most first; those without samples (GPU-metric
// processes, or outside the profile type) after, by name then pid.
export function byCpu<P extends { pid: string; comm: string }>(node: string, procs: P[], cpu: CpuByProcess): P[] {
  const v = (p: P) => cpu.get(processKey(node, p.pid)) ?? 0;
  return [...procs].sort((a, b) => v(b) - v(a) || a.comm.localeCompare(b.comm) || Number(a.pid) - Number(b.pid));
}
