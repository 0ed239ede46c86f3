// The per-stream trace (/api/v1/gpu/trace) in typed arrays: one row per
// (process, device, stream), its activities sorted by start, times relative
// to the range's start (the answer's absolute unix nanoseconds exceed a
// double's 2^53, so they are exact to ~256 ns: enough to draw), and the
// spans where the agent's trace budget dropped activities (coverage:
// complete_until_ns before the second's end), so the timeline can shade
// them instead of showing them as idle.
import type { TraceCoverage, TraceJson } from "../api/types";

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
  // Where this row's trace is incomplete, in ns from the range's start.
  incomplete: IncompleteSpan[];
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
  rows: StreamRow[];
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
      incomplete: [],
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
  rows.sort((a, b) => a.title.localeCompare(b.title, "en", { numeric: true }) || a.device - b.device || a.stream - b.stream);
  let recorded = 0;
  let sent = 0;
  for (const c of json.coverage) {
    recorded += c.recorded;
    sent += c.sent;
  }
  return { fromNs, toNs, spanNs, names: json.names, rows, activities, recorded, sent, incompleteSeconds: gaps.length };
}

// The activity of `row` at t (ns from the range's start), or the nearest one
// within `slackNs` (a bar a pixel wide is hard to hit); -1 when none.
export function activityAt(row: StreamRow, t: number, slackNs: number): number {
  // The last activity starting at or before t + slack.
  let lo = 0;
  let hi = row.n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (row.start[mid] <= t + slackNs) lo = mid + 1;
    else hi = mid;
  }
  let best = -1;
  let bestDist = Infinity;
  // Activities of one stream barely overlap: a few steps back find every candidate.
  for (let i = lo - 1; i >= 0 && i >= lo - 64; i--) {
    const a = row.start[i];
    const b = a + row.dur[i];
    const dist = t < a ? a - t : t > b ? t - b : 0;
    if (dist <= slackNs && dist < bestDist) {
      best = i;
      bestDist = dist;
      if (dist === 0) break;
    }
    if (b < t - slackNs && i < lo - 8) break;
  }
  return best;
}

// How opaque a merged run of bars is drawn for the share of it its kernels
// cover: a floor so that a short kernel stays visible, full at full cover.
export function busyAlpha(covered: number): number {
  return 0.15 + 0.85 * Math.min(1, Math.max(0, covered));
}
