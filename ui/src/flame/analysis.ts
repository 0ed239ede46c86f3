// Derived views of one FlameData: search matches, a function's sandwich
// (callers and callees merged over every place it occurs) and the
// speedscope export. All are single passes over the preorder arrays.
import { FlameData, TreeBuilder } from "./model";

// A query is a case-insensitive substring, or a regex when written /like this/.
export function nameMatcher(query: string): ((name: string) => boolean) | null {
  const q = query.trim();
  if (!q) return null;
  const re = /^\/(.+)\/([a-z]*)$/.exec(q);
  if (re) {
    try {
      const r = new RegExp(re[1], re[2].includes("i") ? "i" : "");
      return (s) => r.test(s);
    } catch {
      // An unfinished regex while typing: fall back to a substring.
    }
  }
  const lower = q.toLowerCase();
  return (s) => s.toLowerCase().includes(lower);
}

// Per node: 1 when the node itself matches. `matchedTotal` counts each
// stack once (a match inside a match is not added again).
export interface Matches {
  node: Uint8Array;
  count: number;
  matchedTotal: number;
}

export function findMatches(d: FlameData, matches: (name: number, binary: number) => boolean): Matches {
  const node = new Uint8Array(d.n);
  let count = 0;
  let matchedTotal = 0;
  let insideUntil = 0;
  for (let i = 1; i < d.n; i++) {
    if (!matches(d.name[i], d.binary[i])) continue;
    node[i] = 1;
    count++;
    if (i >= insideUntil) {
      matchedTotal += d.total[i];
      insideUntil = d.end[i];
    }
  }
  return { node, count, matchedTotal };
}

export function searchMatches(d: FlameData, query: string): Matches | null {
  const m = nameMatcher(query);
  if (!m) return null;
  const byName = d.names.map(m);
  return findMatches(d, (name) => byName[name]);
}

export function functionMatches(d: FlameData, fn: string, binary: string): Matches {
  const nameIdx = d.names.indexOf(fn);
  const binIdx = d.binaries.indexOf(binary);
  return findMatches(d, (name, bin) => name === nameIdx && (binary === "" || bin === binIdx));
}

export interface Sandwich {
  callers: FlameData; // rooted at the function; children are its callers
  callees: FlameData; // rooted at the function; children are its callees
  self: number;
  total: number;
}

// Occurrences inside another occurrence (recursion) are merged into the
// outermost one, so every stack counts once in `total`.
export function sandwich(d: FlameData, fn: string, binary: string): Sandwich | null {
  const m = functionMatches(d, fn, binary);
  if (m.count === 0) return null;
  let kind = 0;
  let bin = binary;
  for (let i = 1; i < d.n; i++) {
    if (m.node[i]) {
      kind = d.kind[i];
      bin = d.binaries[d.binary[i]];
      break;
    }
  }
  const callers = new TreeBuilder(fn, bin, kind);
  const callees = new TreeBuilder(fn, bin, kind);
  const mapped = new Int32Array(d.n);
  let self = 0;
  let insideUntil = 0;
  for (let i = 1; i < d.n; i++) {
    if (m.node[i]) self += d.self[i];
    if (!m.node[i] || i < insideUntil) continue;
    insideUntil = d.end[i];
    const t = d.total[i];
    // Callers: the path from the function up to the outermost frame.
    callers.add(0, 0, t);
    let cur = 0;
    let p = d.parent[i];
    if (p <= 0) callers.add(0, t, 0);
    while (p > 0) {
      cur = callers.child(cur, d.names[d.name[p]], d.binaries[d.binary[p]], d.kind[p]);
      const outermost = d.parent[p] <= 0;
      callers.add(cur, outermost ? t : 0, t);
      p = d.parent[p];
    }
    // Callees: the subtree merged under one root.
    callees.add(0, d.self[i], t);
    mapped[i] = 0;
    for (let j = i + 1; j < d.end[i]; j++) {
      const c = callees.child(mapped[d.parent[j]], d.names[d.name[j]], d.binaries[d.binary[j]], d.kind[j]);
      callees.add(c, d.self[j], d.total[j]);
      mapped[j] = c;
    }
  }
  return {
    callers: callers.build(d.unit, d.periodNanos),
    callees: callees.build(d.unit, d.periodNanos),
    self,
    total: m.matchedTotal,
  };
}

// speedscope's file format (https://www.speedscope.app/file-format-schema.json),
// "sampled" profile: one sample per node with self value, stack from the root.
export function toSpeedscope(d: FlameData, focus: number, title: string): object {
  const frames: { name: string; file?: string }[] = [];
  const frameOf = new Map<string, number>();
  const frameIndex = new Int32Array(d.n);
  for (let i = 1; i < d.n; i++) {
    const key = `${d.name[i]}:${d.binary[i]}`;
    let f = frameOf.get(key);
    if (f === undefined) {
      f = frames.length;
      const file = d.binaries[d.binary[i]];
      frames.push(file ? { name: d.names[d.name[i]], file } : { name: d.names[d.name[i]] });
      frameOf.set(key, f);
    }
    frameIndex[i] = f;
  }
  // Samples of a known period become time; nanoseconds (gpu_time, off_cpu, gpu_wait) already are.
  const perSample = d.unit === "samples" && d.periodNanos > 0 ? d.periodNanos : d.unit === "nanoseconds" ? 1 : 0;
  const nanos = perSample > 0;
  const prefix: number[] = [];
  for (let p = focus; p > 0; p = d.parent[p]) prefix.unshift(frameIndex[p]);
  const samples: number[][] = [];
  const weights: number[] = [];
  const stack: number[] = [];
  for (let i = focus; i < d.end[focus]; i++) {
    if (i !== focus) {
      stack.length = d.depth[i] - d.depth[focus] - 1;
      stack.push(frameIndex[i]);
    }
    if (d.self[i] > 0 && i > 0) {
      samples.push(prefix.concat(stack));
      weights.push(nanos ? d.self[i] * perSample : d.self[i]);
    }
  }
  const sum = weights.reduce((a, b) => a + b, 0);
  return {
    $schema: "https://www.speedscope.app/file-format-schema.json",
    exporter: "warpscope",
    name: title,
    activeProfileIndex: 0,
    shared: { frames },
    profiles: [
      { type: "sampled", name: title, unit: nanos ? "nanoseconds" : "none", startValue: 0, endValue: sum, samples, weights },
    ],
  };
}

// The toolbar's note on a search: "12 frames · 34.56% of total", "" without a query or data.
export function searchSummary(d: FlameData | null, query: string): string {
  if (!query || !d) return "";
  const m = searchMatches(d, query);
  const share = m && d.total[0] > 0 ? (100 * m.matchedTotal) / d.total[0] : 0;
  return m ? `${m.count} frames · ${share.toFixed(2)}% of total` : "";
}
