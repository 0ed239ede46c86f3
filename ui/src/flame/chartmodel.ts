// The flame chart's data (/api/v1/flamechart): per thread (lane), its samples
// in time order, laid out once per answer into merged boxes.
//
// Within one time bucket of one lane the stacks are sorted by their path of
// frame names (root first) and laid out one after another from the bucket's
// start, each as wide as the CPU time it stands for (squeezed to fill the
// bucket exactly when they add up to more: several threads of one name).
// Blank space is time off CPU. Boxes at the same depth that touch and share
// their whole root-first prefix are then merged: a function that stays on
// the stack reads as one long box.
import type { FlameChartJson, FlameChartLaneJson } from "../api/types";

export interface ChartLane {
  title: string;
  total: number;
  rows: number; // the deepest stack
  // Merged boxes, sorted by depth and then by time; depth d's boxes are
  // [depthStart[d], depthStart[d + 1]). Times in ms since the epoch.
  n: number;
  x0: Float64Array;
  x1: Float64Array;
  depth: Uint16Array;
  frame: Int32Array;
  value: Float64Array; // the samples (or ns) the box holds
  depthStart: Int32Array;
  // The answer's points, for search shares: stack and value.
  pointStack: Int32Array;
  pointValue: Float64Array;
}

export interface ChartData {
  type: string;
  unit: string;
  periodNanos: number;
  nsPerValue: number; // 0: values are not times (boxes fill their bucket)
  fromMs: number;
  toMs: number;
  bucketMs: number;
  originMs: number; // a bucket's start: buckets are [originMs + k * bucketMs, + bucketMs)
  total: number;
  truncatedLanes: number;
  truncatedTotal: number; // 0 when not sent
  names: string[];
  binaries: string[];
  frameName: Int32Array;
  frameBinary: Int32Array;
  frameKind: Uint8Array;
  stacks: number[][];
  lanes: ChartLane[];
  boxes: number; // all lanes' merged boxes
}

export const DEFAULT_BUCKET_MS = 1000;
const MIN_BUCKET_MS = 10;
const MAX_BUCKET_MS = 60_000;

// The agent's time bucket: the smallest positive gap between two points'
// times of one lane (lanes of agents whose buckets are not aligned would
// otherwise give a gap shorter than any bucket); across lanes only when no
// lane has two distinct times.
export function inferBucketMs(lanes: FlameChartLaneJson[]): number {
  let best = Infinity;
  const all: number[] = [];
  for (const lane of lanes) {
    let prev = NaN;
    for (const p of lane.points) {
      const t = p[0];
      const gap = t - prev;
      if (gap > 0 && gap < best) best = gap;
      if (t !== prev) all.push(t);
      prev = t;
    }
  }
  if (!Number.isFinite(best)) {
    all.sort((a, b) => a - b);
    for (let i = 1; i < all.length; i++) {
      const gap = all[i] - all[i - 1];
      if (gap > 0 && gap < best) best = gap;
    }
  }
  if (!Number.isFinite(best)) return DEFAULT_BUCKET_MS;
  return Math.min(MAX_BUCKET_MS, Math.max(MIN_BUCKET_MS, best));
}

// "python3 (pid 12) · worker", and any other labels as key=value.
export function laneTitle(labels: Record<string, string>): string {
  const { pid, comm, thread } = labels;
  const parts: string[] = [];
  if (comm && pid) parts.push(`${comm} (pid ${pid})`);
  else if (comm) parts.push(comm);
  else if (pid) parts.push(`pid ${pid}`);
  if (thread && (thread !== comm || parts.length === 0)) parts.push(thread);
  for (const [k, v] of Object.entries(labels)) {
    if (k !== "pid" && k !== "comm" && k !== "thread") parts.push(`${k}=${v}`);
  }
  return parts.length ? parts.join(" · ") : "all";
}

export function buildChart(json: FlameChartJson): ChartData {
  const names = json.names ?? [];
  const binaries = json.binaries ?? [];
  const frames = json.frames ?? [];
  const stacks = json.stacks ?? [];
  const lanesJson = json.lanes ?? [];
  const F = frames.length;
  const frameName = new Int32Array(F);
  const frameBinary = new Int32Array(F);
  const frameKind = new Uint8Array(F);
  for (let f = 0; f < F; f++) {
    frameName[f] = frames[f][0];
    frameBinary[f] = frames[f][1];
    frameKind[f] = frames[f][2];
  }
  const periodNanos = json.period_nanos ?? 0;
  const nsPerValue = json.unit === "nanoseconds" ? 1 : json.unit === "samples" && periodNanos > 0 ? periodNanos : 0;
  const bucketMs = inferBucketMs(lanesJson);

  // Stacks in frame-name order, root first, level by level (a frame index
  // breaks ties between equal names, so one prefix stays contiguous; a
  // prefix comes before its extensions).
  const sortedNames = names.map((_, i) => i).sort((a, b) => (names[a] < names[b] ? -1 : names[a] > names[b] ? 1 : a - b));
  const nameRank = new Int32Array(names.length);
  sortedNames.forEach((name, r) => (nameRank[name] = r));
  const S = stacks.length;
  const valid = new Uint8Array(S);
  for (let s = 0; s < S; s++) valid[s] = stacks[s].length > 0 && stacks[s].every((f) => f >= 0 && f < F) ? 1 : 0;
  const order = Array.from({ length: S }, (_, i) => i).sort((a, b) => {
    const sa = stacks[a];
    const sb = stacks[b];
    const n = Math.min(sa.length, sb.length);
    for (let d = 0; d < n; d++) {
      const fa = sa[d];
      const fb = sb[d];
      if (fa === fb) continue;
      const byName = (nameRank[frameName[fa]] ?? 0) - (nameRank[frameName[fb]] ?? 0);
      return byName !== 0 ? byName : fa - fb;
    }
    return sa.length - sb.length || a - b;
  });
  const rank = new Int32Array(S);
  order.forEach((s, r) => (rank[s] = r));

  // Prefix ids: a trie over frames, so "same prefix up to depth d" is one
  // integer comparison.
  const prefix: Int32Array[] = new Array(S);
  const trie = new Map<number, number>();
  let nextNode = 1;
  for (let s = 0; s < S; s++) {
    const st = stacks[s];
    const ids = new Int32Array(valid[s] ? st.length : 0);
    let node = 0;
    for (let d = 0; d < ids.length; d++) {
      const key = node * (F + 1) + st[d];
      let id = trie.get(key);
      if (id === undefined) {
        id = nextNode++;
        trie.set(key, id);
      }
      ids[d] = id;
      node = id;
    }
    prefix[s] = ids;
  }

  const lanes = lanesJson.map((l) => layoutLane(l, stacks, valid, rank, prefix, nsPerValue, bucketMs));
  return {
    type: json.type,
    unit: json.unit,
    periodNanos,
    nsPerValue,
    fromMs: json.from_ms,
    toMs: json.to_ms,
    bucketMs,
    originMs: lanesJson.find((l) => l.points?.length > 0)?.points[0][0] ?? json.from_ms,
    total: json.total ?? 0,
    truncatedLanes: json.truncated_lanes ?? 0,
    truncatedTotal: json.truncated_total ?? 0,
    names,
    binaries,
    frameName,
    frameBinary,
    frameKind,
    stacks,
    lanes,
    boxes: lanes.reduce((a, l) => a + l.n, 0),
  };
}

function layoutLane(
  lane: FlameChartLaneJson,
  stacks: number[][],
  valid: Uint8Array,
  rank: Int32Array,
  prefix: Int32Array[],
  nsPerValue: number,
  bucketMs: number,
): ChartLane {
  const points = lane.points ?? [];
  const P = points.length;
  const pointStack = new Int32Array(P);
  const pointValue = new Float64Array(P);
  let rows = 0;
  let frames = 0; // boxes before merging: an upper bound
  for (let i = 0; i < P; i++) {
    const s = points[i][1];
    pointStack[i] = s >= 0 && s < stacks.length ? s : -1;
    pointValue[i] = points[i][2];
    if (pointStack[i] < 0 || !valid[s]) continue;
    const len = stacks[s].length;
    if (len > rows) rows = len;
    frames += len;
  }
  const eps = Math.max(1e-6, bucketMs * 1e-6);
  // Per depth, the box being extended and the finished boxes.
  const openNode = new Int32Array(rows).fill(-1);
  const openFrame = new Int32Array(rows);
  const openX0 = new Float64Array(rows);
  const openX1 = new Float64Array(rows);
  const openValue = new Float64Array(rows);
  // Finished boxes in the order they end, each depth's in time order.
  let cap = Math.max(1024, Math.min(frames, 2 * P));
  let n = 0;
  let bx0 = new Float64Array(cap);
  let bx1 = new Float64Array(cap);
  let bvalue = new Float64Array(cap);
  let bframe = new Int32Array(cap);
  let bdepth = new Uint16Array(cap);
  const perDepth = new Int32Array(rows + 1);
  const flush = (d: number) => {
    if (openNode[d] < 0) return;
    if (n === cap) {
      cap *= 2;
      bx0 = grow(bx0, cap);
      bx1 = grow(bx1, cap);
      bvalue = grow(bvalue, cap);
      bframe = grow(bframe, cap);
      bdepth = grow(bdepth, cap);
    }
    bx0[n] = openX0[d];
    bx1[n] = openX1[d];
    bvalue[n] = openValue[d];
    bframe[n] = openFrame[d];
    bdepth[n] = d;
    perDepth[d]++;
    n++;
    openNode[d] = -1;
  };
  const column = (s: number, x0: number, x1: number, value: number) => {
    const st = stacks[s];
    const ids = prefix[s];
    for (let d = 0; d < ids.length; d++) {
      if (openNode[d] === ids[d] && Math.abs(x0 - openX1[d]) <= eps) {
        openX1[d] = x1;
        openValue[d] += value;
      } else {
        flush(d);
        openNode[d] = ids[d];
        openFrame[d] = st[d];
        openX0[d] = x0;
        openX1[d] = x1;
        openValue[d] = value;
      }
    }
    for (let d = ids.length; d < rows; d++) flush(d);
  };

  const bucket: number[] = []; // point indexes of one bucket
  const byRank = (a: number, b: number) => rank[pointStack[a]] - rank[pointStack[b]];
  const sortBucket = () => {
    // Insertion sort for the usual handful of stacks (Array.sort allocates).
    const m = bucket.length;
    if (m > 48) {
      bucket.sort(byRank);
      return;
    }
    for (let a = 1; a < m; a++) {
      const item = bucket[a];
      const r = rank[pointStack[item]];
      let b = a - 1;
      while (b >= 0 && rank[pointStack[bucket[b]]] > r) {
        bucket[b + 1] = bucket[b];
        b--;
      }
      bucket[b + 1] = item;
    }
  };
  for (let i = 0; i < P; ) {
    const t = points[i][0];
    bucket.length = 0;
    let sum = 0;
    for (; i < P && points[i][0] === t; i++) {
      const s = pointStack[i];
      const v = pointValue[i];
      if (s >= 0 && valid[s] && v > 0) {
        bucket.push(i);
        sum += v;
      }
    }
    if (bucket.length === 0) continue;
    if (bucket.length > 1) sortBucket();
    // ms per value unit; unknown times fill the bucket in proportion.
    let msPer = nsPerValue > 0 ? nsPerValue / 1e6 : bucketMs / sum;
    if (sum * msPer > bucketMs) msPer = bucketMs / sum;
    let x = t;
    for (let k = 0; k < bucket.length; k++) {
      const s = pointStack[bucket[k]];
      let v = pointValue[bucket[k]];
      // One stack twice in a bucket: one column.
      while (k + 1 < bucket.length && pointStack[bucket[k + 1]] === s) v += pointValue[bucket[++k]];
      const x1 = x + v * msPer;
      column(s, x, x1, v);
      x = x1;
    }
  }
  for (let d = 0; d < rows; d++) flush(d);

  // By depth, keeping the time order within a depth (a counting sort).
  const x0 = new Float64Array(n);
  const x1 = new Float64Array(n);
  const depth = new Uint16Array(n);
  const frame = new Int32Array(n);
  const value = new Float64Array(n);
  const depthStart = new Int32Array(rows + 1);
  for (let d = 0, at = 0; d <= rows; d++) {
    depthStart[d] = at;
    at += perDepth[d];
  }
  const next = depthStart.slice(0, rows);
  for (let j = 0; j < n; j++) {
    const d = bdepth[j];
    const k = next[d]++;
    x0[k] = bx0[j];
    x1[k] = bx1[j];
    depth[k] = d;
    frame[k] = bframe[j];
    value[k] = bvalue[j];
  }
  return {
    title: laneTitle(lane.labels ?? {}),
    total: lane.total ?? 0,
    rows,
    n,
    x0,
    x1,
    depth,
    frame,
    value,
    depthStart,
    pointStack,
    pointValue,
  };
}

// The box of `lane` at `depth` that holds time `t`, or -1.
export function boxAt(lane: ChartLane, depth: number, t: number, slack = 0): number {
  if (depth < 0 || depth >= lane.rows) return -1;
  const first = lane.depthStart[depth];
  const end = lane.depthStart[depth + 1];
  let lo = first;
  let hi = end - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (lane.x0[mid] <= t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (found >= 0 && t < lane.x1[found] + slack) return found;
  // A box starting just after t, within the slack (narrow boxes).
  const next = found >= 0 ? found + 1 : first;
  if (next < end && lane.x0[next] - t <= slack) return next;
  return -1;
}

// A box's span as a time range to select: out to its buckets' edges, at
// least two buckets (the second after it, or before it at the range's end),
// whole ms.
export function spanRange(d: ChartData, x0: number, x1: number): [number, number] {
  const b = d.bucketMs;
  const o = d.originMs;
  let from = o + Math.floor((x0 - o) / b + 1e-6) * b;
  let to = o + Math.ceil((x1 - o) / b - 1e-6) * b;
  if (to <= from) to = from + b;
  if (to - from < 2 * b) {
    const missing = 2 * b - (to - from);
    if (to + missing <= d.toMs) to += missing;
    else from -= missing;
  }
  return [Math.floor(from), Math.ceil(to)];
}

function grow<T extends Float64Array | Int32Array | Uint16Array>(a: T, cap: number): T {
  const b = new (a.constructor as { new (n: number): T })(cap);
  b.set(a);
  return b;
}

// The whole buckets [originMs + k * bucketMs, ...) that [x0, x1) touches; the box's own ends without buckets.
export function bucketSpan(x0: number, x1: number, bucketMs: number, originMs: number): [number, number] {
  if (!(bucketMs > 0)) return [x0, x1];
  const first = originMs + Math.floor((x0 - originMs) / bucketMs) * bucketMs;
  const last = originMs + Math.ceil((x1 - originMs) / bucketMs - 1e-9) * bucketMs;
  return [first, Math.max(last, first + bucketMs)];
}
