// The threads view's numbers: per thread (node, pid, comm, thread name) its
// on-CPU time (cpu samples × their period), off-CPU time (off_cpu
// nanoseconds, by wait_reason) and GPU-wait time (gpu_wait nanoseconds: time
// inside CUDA synchronisation calls, which is part of the on- or off-CPU
// time, not added to it), from one whole-range step of /api/v1/series per
// type. Pure (no DOM): the unit tests run it in Node.
import type { SeriesJson, TypesJson } from "../api/types";

// The labels a thread is told apart by. The server keeps no thread id:
// threads of one process with one name are one row (as in the flame chart).
export const THREAD_LABELS = ["node", "pid", "comm", "thread"] as const;
export const THREAD_GROUP_BY = THREAD_LABELS.join(",");

// The wait reasons the agent names (docs/design/off_cpu.md), in the bars'
// order; "" is an off-CPU wait whose kernel stack named none.
export const WAIT_REASONS = ["futex", "poll", "pipe", "socket", "disk_io", "sleep", ""];

export interface ThreadRow {
  key: string;
  node: string;
  pid: string;
  comm: string;
  thread: string;
  onNs: number;
  offNs: number;
  // Off-CPU nanoseconds per wait_reason ("" for none), in WAIT_REASONS order
  // (unknown reasons after, by name); only reasons with time.
  offByReason: [string, number][];
  wallNs: number; // onNs + offNs
  // Nanoseconds inside CUDA synchronisation calls (gpu_wait): CUDA spins or
  // sleeps there, so this time is already in onNs or offNs, not in addition.
  gpuWaitNs: number;
}

type Labels = Record<string, string>;

export function threadKey(labels: Labels): string {
  return THREAD_LABELS.map((l) => labels[l] ?? "").join("\u0000");
}

function seriesSum(points: [number, number][]): number {
  return points.reduce((a, p) => a + p[1], 0);
}

function reasonOrder(a: string, b: string): number {
  const ia = WAIT_REASONS.indexOf(a);
  const ib = WAIT_REASONS.indexOf(b);
  if (ia >= 0 && ib >= 0) return ia - ib;
  if (ia >= 0 || ib >= 0) return ia >= 0 ? -1 : 1;
  return a.localeCompare(b);
}

// The rows of the two answers, busiest wall time first (then comm, pid,
// thread). `cpuNsPerValue`: what one value of the cpu answer is in
// nanoseconds (its period for samples, 1 for nanoseconds; cpuNanosPerValue).
// `off` may be grouped by wait_reason or not; `gpuWait` (grouped by the
// thread's labels) only sets gpuWaitNs: a thread with GPU-wait time but no
// on- or off-CPU time keeps a row (wall time 0, last), so no wait is lost.
export function threadRows(
  cpu: SeriesJson | null,
  cpuNsPerValue: number,
  off: SeriesJson | null,
  gpuWait: SeriesJson | null = null,
): ThreadRow[] {
  const rows = new Map<string, ThreadRow & { reasons: Map<string, number> }>();
  const row = (labels: Labels) => {
    const key = threadKey(labels);
    let r = rows.get(key);
    if (!r) {
      r = {
        key,
        node: labels.node ?? "",
        pid: labels.pid ?? "",
        comm: labels.comm ?? "",
        thread: labels.thread ?? "",
        onNs: 0,
        offNs: 0,
        offByReason: [],
        wallNs: 0,
        gpuWaitNs: 0,
        reasons: new Map(),
      };
      rows.set(key, r);
    }
    return r;
  };
  for (const s of cpu?.series ?? []) row(s.labels).onNs += seriesSum(s.points) * cpuNsPerValue;
  for (const s of off?.series ?? []) {
    const r = row(s.labels);
    const ns = seriesSum(s.points);
    r.offNs += ns;
    const reason = s.labels.wait_reason ?? "";
    r.reasons.set(reason, (r.reasons.get(reason) ?? 0) + ns);
  }
  for (const s of gpuWait?.series ?? []) row(s.labels).gpuWaitNs += seriesSum(s.points);
  const out: ThreadRow[] = [];
  for (const { reasons, ...r } of rows.values()) {
    r.wallNs = r.onNs + r.offNs;
    if (r.wallNs <= 0 && r.gpuWaitNs <= 0) continue;
    r.offByReason = [...reasons].filter(([, ns]) => ns > 0).sort((a, b) => reasonOrder(a[0], b[0]));
    out.push(r);
  }
  return out.sort(
    (a, b) =>
      b.wallNs - a.wallNs || b.gpuWaitNs - a.gpuWaitNs || a.comm.localeCompare(b.comm) || Number(a.pid) - Number(b.pid) || a.thread.localeCompare(b.thread),
  );
}

// Nanoseconds per value of a cpu answer, from the stored types: the period
// when every stored cpu type counts samples of one period; 1 when it is in
// nanoseconds; null when cpu types of several periods are stored (the
// answer is then in samples or nanoseconds depending on which rows the
// range holds: ask an answer that says its unit, /api/v1/top).
export function cpuNanosPerValue(types: TypesJson): number | null {
  const cpu = types.types.filter((t) => t.name === "cpu");
  if (cpu.length === 0) return 0;
  if (cpu.length > 1) return null;
  return unitNanos(cpu[0].unit, cpu[0].period_nanos);
}

// Nanoseconds per value of an answer in `unit` (0: not time).
export function unitNanos(unit: string, periodNanos: number): number {
  if (unit === "nanoseconds") return 1;
  return unit === "samples" && periodNanos > 0 ? periodNanos : 0;
}

// A selector that narrows to one thread row: every label it was grouped
// by, "" where the series lack it (a matcher `x=""` selects those).
// `extra` adds matchers (wait_reason="futex").
export function threadSelector(row: Pick<ThreadRow, "node" | "pid" | "comm" | "thread">, extra: Labels = {}): string {
  const q = JSON.stringify;
  const parts = [
    `node=${q(row.node)}`,
    `pid=${q(row.pid)}`,
    `comm=${q(row.comm)}`,
    `thread=${q(row.thread)}`,
    ...Object.entries(extra).map(([k, v]) => `${k}=${q(v)}`),
  ];
  return `{${parts.join(", ")}}`;
}

// The search box's filter over the rows: a substring of the thread, the
// process, its pid or the node (case-insensitive); "" keeps all.
export function filterRows(rows: ThreadRow[], search: string): ThreadRow[] {
  const f = search.trim().toLowerCase();
  if (!f) return rows;
  return rows.filter((r) => [r.thread, r.comm, r.pid, r.node].some((x) => x.toLowerCase().includes(f)));
}

export interface ThreadTotals {
  onNs: number;
  offNs: number;
  gpuWaitNs: number; // part of onNs + offNs, not in addition
  byReason: [string, number][]; // WAIT_REASONS order, only those with time
}

export function totalsOf(rows: ThreadRow[]): ThreadTotals {
  const reasons = new Map<string, number>();
  let onNs = 0;
  let offNs = 0;
  let gpuWaitNs = 0;
  for (const r of rows) {
    onNs += r.onNs;
    offNs += r.offNs;
    gpuWaitNs += r.gpuWaitNs;
    for (const [reason, ns] of r.offByReason) reasons.set(reason, (reasons.get(reason) ?? 0) + ns);
  }
  return { onNs, offNs, gpuWaitNs, byReason: [...reasons].sort((a, b) => reasonOrder(a[0], b[0])) };
}

// The GPU wait's share of the thread's wall time (normally 0–1), for the
// tooltip of the thin line under its bar; null without wall time. Over 1
// when the waits were not all seen as on- or off-CPU time (an agent without
// --off-cpu, whose wall time is on-CPU time only); the line is then as long
// as the bar.
export function gpuWaitShare(r: Pick<ThreadRow, "gpuWaitNs" | "wallNs">): number | null {
  return r.wallNs > 0 ? r.gpuWaitNs / r.wallNs : null;
}
