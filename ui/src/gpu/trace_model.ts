// The per-stream trace (/api/v1/gpu/trace) in typed arrays: one row per
// (process, device, stream), its activities sorted by start, times relative
// to the range's start (the answer's absolute unix nanoseconds exceed a
// double's 2^53, so they are exact to ~256 ns: enough to draw), and the
// spans where the agent's trace budget dropped activities (coverage:
// complete_until_ns before the second's end), so the timeline can shade
// them instead of showing them as idle.
import type { ActivityTuple, TraceCoverage, TraceJson } from "../api/types";

const SECOND_NS = 1e9;

export interface StreamRow {
  title: string;
  labels: Record<string, string>;
  device: number;
  stream: number;
  busyNs: number;
  n: number;
  start: Float64Array; // ns from the range's start
  dur: Float64Array;
  name: Int32Array; // index into TraceModel.names
  kind: Uint8Array; // 0 kernel, 1 memcpy, 2 memset
  correlation: Float64Array;
  graph: Float64Array;
  // The launch call of each activity, or -1: the index into
  // TraceModel.threads[launchThread[i]].calls' arrays.
  launchThread: Int32Array;
  launchCall: Int32Array;
  // Where this row's trace is incomplete, in ns from the range's start.
  incomplete: IncompleteSpan[];
  // Where no traced stream of this row's GPU ran anything (ns from the
  // range's start, outside incomplete spans).
  idle: IdleSpan[];
}

// A launching thread's row: its launch calls (one per correlation id, a
// graph launch runs several kernels), sorted by start.
export interface ThreadRow {
  title: string;
  labels: Record<string, string>;
  tid: number;
  n: number;
  start: Float64Array; // ns from the range's start
  dur: Float64Array;
  api: Uint8Array; // index into TraceModel.launchApis
  correlation: Float64Array;
  kernels: Int32Array; // kernels each call launched in the trace
}

export interface IdleSpan {
  from: number;
  to: number;
}

// A launch → kernel arrow: the call's thread row and call, the kernel's
// stream row and activity.
export interface LaunchLink {
  thread: number;
  call: number;
  row: number;
  activity: number;
}

export interface IncompleteSpan {
  from: number; // the second's complete_until_ns
  to: number; // the second's end
  recorded: number; // the process's activities in that second
  sent: number; // those the trace holds
}

export interface TraceModel {
  fromNs: number;
  toNs: number;
  spanNs: number;
  names: string[];
  launchApis: string[];
  rows: StreamRow[];
  threads: ThreadRow[];
  links: LaunchLink[]; // sorted by the kernel's start
  activities: number;
  // Coverage over the range: activities that ran and that the trace holds,
  // and how many (process, second) pairs are incomplete.
  recorded: number;
  sent: number;
  incompleteSeconds: number;
}

// Every label of the coverage entry (a process's) is on the stream.
function covers(c: TraceCoverage, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(c.labels)) if (labels[k] !== v) return false;
  return true;
}

export function rowTitle(labels: Record<string, string>, device: number, stream: number, withNode: boolean): string {
  const who = labels.comm || labels.exe || "process";
  const pid = labels.pid ? ` (pid ${labels.pid})` : "";
  const node = withNode && labels.node ? `${labels.node} · ` : "";
  return `${node}${who}${pid} · device ${device} · stream ${stream}`;
}

export function buildTrace(json: TraceJson): TraceModel {
  const fromNs = json.from_ns;
  const toNs = json.to_ns;
  const spanNs = Math.max(toNs - fromNs, 1);
  const nodes = new Set(json.streams.map((s) => s.labels.node ?? ""));
  const gaps = json.coverage.filter((c) => c.complete_until_ns < c.second_ns + SECOND_NS && c.sent < c.recorded);
  let activities = 0;
  const launchesOf: ActivityTuple[][] = []; // per stream, in row order
  const rows: StreamRow[] = json.streams.map((s) => {
    const order = s.activities.map((_, i) => i).sort((a, b) => s.activities[a][0] - s.activities[b][0]);
    const n = order.length;
    const row: StreamRow = {
      title: rowTitle(s.labels, s.device, s.stream, nodes.size > 1),
      labels: s.labels,
      device: s.device,
      stream: s.stream,
      busyNs: s.busy_ns,
      n,
      start: new Float64Array(n),
      dur: new Float64Array(n),
      name: new Int32Array(n),
      kind: new Uint8Array(n),
      correlation: new Float64Array(n),
      graph: new Float64Array(n),
      launchThread: new Int32Array(n).fill(-1),
      launchCall: new Int32Array(n).fill(-1),
      incomplete: [],
      idle: [],
    };
    order.forEach((src, i) => {
      const a = s.activities[src];
      row.start[i] = a[0] - fromNs;
      row.dur[i] = Math.max(0, a[1]);
      row.name[i] = a[2];
      row.kind[i] = a[3];
      row.correlation[i] = a[4] ?? 0;
      row.graph[i] = a[5] ?? 0;
    });
    launchesOf.push(order.map((src) => s.activities[src]));
    activities += n;
    for (const c of gaps) {
      if (!covers(c, s.labels)) continue;
      const a = Math.max(c.complete_until_ns, fromNs) - fromNs;
      const b = Math.min(c.second_ns + SECOND_NS, toNs) - fromNs;
      if (b > a) row.incomplete.push({ from: a, to: b, recorded: c.recorded, sent: c.sent });
    }
    row.incomplete.sort((x, y) => x.from - y.from);
    return row;
  });
  const order = rows.map((_, i) => i);
  order.sort((a, b) => compareRows(rows[a], rows[b]));
  const sortedRows = order.map((i) => rows[i]);
  const { threads, links } = buildLaunches(sortedRows, order.map((i) => launchesOf[i]), fromNs, nodes.size > 1);
  markIdle(sortedRows, spanNs);
  let recorded = 0;
  let sent = 0;
  for (const c of json.coverage) {
    recorded += c.recorded;
    sent += c.sent;
  }
  return {
    fromNs,
    toNs,
    spanNs,
    names: json.names,
    launchApis: json.launch_apis ?? [],
    rows: sortedRows,
    threads,
    links,
    activities,
    recorded,
    sent,
    incompleteSeconds: gaps.length,
  };
}

function compareRows(a: StreamRow, b: StreamRow): number {
  return a.title.localeCompare(b.title, "en", { numeric: true }) || a.device - b.device || a.stream - b.stream;
}

export function threadTitle(labels: Record<string, string>, tid: number, withNode: boolean): string {
  const who = labels.comm || labels.exe || "process";
  const pid = labels.pid ? ` (pid ${labels.pid})` : "";
  const node = withNode && labels.node ? `${labels.node} · ` : "";
  return `${node}${who}${pid} · thread ${tid} · CPU`;
}

function labelsKey(labels: Record<string, string>): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(",");
}

// The launching threads' rows and the links from their calls to the
// kernels, from the activities' launch fields (rows: in their final order;
// tuples: each row's activities in the row's order).
function buildLaunches(
  rows: StreamRow[],
  tuples: ActivityTuple[][],
  fromNs: number,
  withNode: boolean,
): { threads: ThreadRow[]; links: LaunchLink[] } {
  interface Call {
    start: number;
    dur: number;
    api: number;
    correlation: number;
    kernels: number;
  }
  interface Building {
    labels: Record<string, string>;
    tid: number;
    calls: Map<number, Call>; // by correlation id
  }
  const byThread = new Map<string, Building>();
  const pending: { thread: string; correlation: number; row: number; activity: number }[] = [];
  rows.forEach((row, r) => {
    const lk = labelsKey(row.labels);
    tuples[r].forEach((a, i) => {
      const launch = a[6] ?? 0;
      if (!launch || a[3] !== 0) return;
      const tid = a[8] ?? 0;
      const key = `${lk}|${tid}`;
      let t = byThread.get(key);
      if (!t) byThread.set(key, (t = { labels: row.labels, tid, calls: new Map() }));
      const correlation = a[4] ?? 0;
      let call = t.calls.get(correlation);
      if (!call) {
        call = { start: launch - fromNs, dur: Math.max(0, a[7] ?? 0), api: a[9] ?? 0, correlation, kernels: 0 };
        t.calls.set(correlation, call);
      }
      call.kernels++;
      pending.push({ thread: key, correlation, row: r, activity: i });
    });
  });
  const keys = [...byThread.keys()];
  const threads: ThreadRow[] = [];
  const threadIndex = new Map<string, number>();
  const callIndex = new Map<string, Map<number, number>>();
  const titled = keys.map((k) => ({ k, title: threadTitle(byThread.get(k)!.labels, byThread.get(k)!.tid, withNode) }));
  titled.sort((a, b) => a.title.localeCompare(b.title, "en", { numeric: true }));
  for (const { k, title } of titled) {
    const t = byThread.get(k)!;
    const calls = [...t.calls.values()].sort((a, b) => a.start - b.start);
    const n = calls.length;
    const row: ThreadRow = {
      title,
      labels: t.labels,
      tid: t.tid,
      n,
      start: Float64Array.from(calls, (c) => c.start),
      dur: Float64Array.from(calls, (c) => c.dur),
      api: Uint8Array.from(calls, (c) => c.api),
      correlation: Float64Array.from(calls, (c) => c.correlation),
      kernels: Int32Array.from(calls, (c) => c.kernels),
    };
    threadIndex.set(k, threads.length);
    callIndex.set(k, new Map(calls.map((c, i) => [c.correlation, i])));
    threads.push(row);
  }
  const links: LaunchLink[] = pending.map((p) => {
    const thread = threadIndex.get(p.thread)!;
    const call = callIndex.get(p.thread)!.get(p.correlation)!;
    rows[p.row].launchThread[p.activity] = thread;
    rows[p.row].launchCall[p.activity] = call;
    return { thread, call, row: p.row, activity: p.activity };
  });
  links.sort((a, b) => rows[a.row].start[a.activity] - rows[b.row].start[b.activity]);
  return { threads, links };
}

// Per GPU (node, and the process's gpu label or else its device ordinal):
// the union of every traced stream's activities; the gaps between and
// around them are idle, except where a process's trace is incomplete
// (unknown there, not idle). Each row gets its GPU's gaps.
function markIdle(rows: StreamRow[], spanNs: number): void {
  const groups = new Map<string, StreamRow[]>();
  for (const r of rows) {
    const key = `${r.labels.node ?? ""}|${r.labels.gpu ?? `device ${r.device}`}`;
    const g = groups.get(key);
    if (g) g.push(r);
    else groups.set(key, [r]);
  }
  for (const group of groups.values()) {
    const busy: [number, number][] = [];
    for (const r of group) {
      for (let i = 0; i < r.n; i++) busy.push([r.start[i], r.start[i] + r.dur[i]]);
      for (const g of r.incomplete) busy.push([g.from, g.to]);
    }
    busy.sort((a, b) => a[0] - b[0]);
    const idle: IdleSpan[] = [];
    let at = 0;
    for (const [a, b] of busy) {
      if (at >= spanNs) break;
      if (a > at) idle.push({ from: at, to: Math.min(a, spanNs) });
      at = Math.max(at, b);
    }
    if (at < spanNs) idle.push({ from: at, to: spanNs });
    for (const r of group) r.idle = idle;
  }
}
// The span (start[i], start[i] + dur[i]) at t, or the nearest one within
// `slack` (a bar a pixel wide is hard to hit); -1 when none. Spans sorted by
// start that barely overlap (a stream's activities, a thread's calls): a
// few steps back from the last start at or before t + slack find every
// candidate.
export function spanAt(start: Float64Array, dur: Float64Array, n: number, t: number, slack: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (start[mid] <= t + slack) lo = mid + 1;
    else hi = mid;
  }
  let best = -1;
  let bestDist = Infinity;
  for (let i = lo - 1; i >= 0 && i >= lo - 64; i--) {
    const a = start[i];
    const b = a + dur[i];
    const dist = t < a ? a - t : t > b ? t - b : 0;
    if (dist <= slack && dist < bestDist) {
      best = i;
      bestDist = dist;
      if (dist === 0) break;
    }
    if (b < t - slack && i < lo - 8) break;
  }
  return best;
}

// The activity of `row` at t (ns from the range's start), or the nearest one within `slackNs`.
export function activityAt(row: StreamRow, t: number, slackNs: number): number {
  return spanAt(row.start, row.dur, row.n, t, slackNs);
}

// How opaque a merged run of bars is drawn for the share of it its kernels
// cover: a floor so that a short kernel stays visible, full at full cover.
export function busyAlpha(covered: number): number {
  return 0.15 + 0.85 * Math.min(1, Math.max(0, covered));
}
