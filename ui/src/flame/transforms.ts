// Client-side transforms of a flame graph's tree, each a pure function from
// one FlameData to a new one, and the pipeline that chains them for the
// shown graph: focus on a function (`ffocus`), hide frames (`hide`), keep
// one binary's frames (`bin`), collapse recursion (`norec`), then the
// bottom-up tree (`tree`). The state's keys hold frames as JSON
// [name, binary, kind] (model.ts PathStep), so a link reproduces the view.
//
// Totals stay exact: merging a frame into its parent keeps every stack's
// value, so the root's total is unchanged by hide, binary filter and
// collapse; a focus's root holds the function's total, each stack counted
// once (recursion is taken from the outermost occurrence).
import type { FlameChartJson } from "../api/types";
import { FlameData, GROUP_LABEL, PathStep, TreeBuilder, inverted } from "./model";
import { nameMatcher } from "./analysis";

export type Frame = PathStep;

// A parsed [name, binary, kind] as a frame; null when it is not one.
function asFrame(v: unknown): Frame | null {
  if (!Array.isArray(v) || typeof v[0] !== "string") return null;
  return [v[0], typeof v[1] === "string" ? v[1] : "", typeof v[2] === "number" ? v[2] : 0];
}

// JSON from the state, or undefined for an empty or hand-edited text.
function parseJson(json: string): unknown {
  if (!json) return undefined;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

// A frame from the state (JSON [name, binary, kind]); null when empty or not one.
export function parseFrame(json: string): Frame | null {
  return asFrame(parseJson(json));
}

// A list of frames from the state (JSON [[name, binary, kind], …]); what is not a frame is skipped.
export function parseFrames(json: string): Frame[] {
  const v = parseJson(json);
  return Array.isArray(v) ? v.map(asFrame).filter((f): f is Frame => f !== null) : [];
}

export function frameOf(d: FlameData, node: number): Frame {
  return [d.names[d.name[node]], d.binaries[d.binary[node]] ?? "", d.kind[node]];
}

// Per node: 1 when its identity is one of `frames`.
function matching(d: FlameData, frames: Frame[]): Uint8Array {
  const keys = new Set(frames.map(([n, b, k]) => `${n}\u0000${b}\u0000${k}`));
  const named = d.names.map((n) => frames.some((f) => f[0] === n));
  const out = new Uint8Array(d.n);
  for (let i = 1; i < d.n; i++) {
    if (named[d.name[i]] && keys.has(`${d.names[d.name[i]]}\u0000${d.binaries[d.binary[i]] ?? ""}\u0000${d.kind[i]}`)) out[i] = 1;
  }
  return out;
}

// The tree with every node for which `merged(i)` holds folded into its
// parent: its self goes to the nearest kept ancestor, its children become
// that ancestor's (merged with children of the same identity). The root is
// always kept. A node's total is the sum of the kept nodes mapped onto it,
// which never include one another, so every total stays exact.
export function mergeIntoParents(d: FlameData, merged: (i: number) => boolean): FlameData {
  if (d.n === 0) return d;
  const t = new TreeBuilder(d.names[d.name[0]], d.binaries[d.binary[0]] ?? "", d.kind[0]);
  const mapped = new Int32Array(d.n);
  t.add(0, d.self[0], d.total[0]);
  for (let i = 1; i < d.n; i++) {
    const up = mapped[d.parent[i]];
    if (merged(i)) {
      mapped[i] = up;
      t.add(up, d.self[i], 0);
    } else {
      const c = t.child(up, d.names[d.name[i]], d.binaries[d.binary[i]] ?? "", d.kind[i]);
      mapped[i] = c;
      t.add(c, d.self[i], d.total[i]);
    }
  }
  return finish(t, d);
}

function finish(t: TreeBuilder, d: FlameData): FlameData {
  const out = t.build(d.unit, d.periodNanos);
  out.truncated = d.truncated;
  return out;
}

// Every stack through `fn`, merged under the root with the function as its
// one child and its callees below. An occurrence inside another one
// (recursion) belongs to the outermost, so each stack counts once and the
// root's total is the function's total (/api/v1/top's). No occurrence: a
// root of 0.
export function focusOnFunction(d: FlameData, fn: Frame): FlameData {
  if (d.n === 0) return d;
  const t = new TreeBuilder(d.names[d.name[0]], d.binaries[d.binary[0]] ?? "", d.kind[0]);
  const hit = matching(d, [fn]);
  const mapped = new Int32Array(d.n);
  let node = -1;
  for (let i = 1; i < d.n; ) {
    if (!hit[i]) {
      i++;
      continue;
    }
    if (node < 0) node = t.child(0, fn[0], fn[1], fn[2]);
    t.add(0, 0, d.total[i]);
    t.add(node, d.self[i], d.total[i]);
    mapped[i] = node;
    for (let j = i + 1; j < d.end[i]; j++) {
      const c = t.child(mapped[d.parent[j]], d.names[d.name[j]], d.binaries[d.binary[j]] ?? "", d.kind[j]);
      t.add(c, d.self[j], d.total[j]);
      mapped[j] = c;
    }
    i = d.end[i];
  }
  return finish(t, d);
}

// Those frames taken out of every stack, their callees merged into their callers.
export function hideFrames(d: FlameData, frames: Frame[]): FlameData {
  if (frames.length === 0) return d;
  const hit = matching(d, frames);
  return mergeIntoParents(d, (i) => hit[i] === 1);
}

// Only the frames whose binary matches `query` (the search box's syntax: a
// case-insensitive substring, or /a regex/), the others merged into their
// callers; so "train.py" leaves a script's own frames, ".py" every Python
// file's, "libc" the C library's. This keeps every stack and its value,
// unlike a filter that would drop the stacks without such a frame: the
// root's total stays, and a stack without a matching frame becomes the
// root's self. Group label boxes (one subtree per process or thread) are
// structure, not frames: the filter keeps them.
export function filterBinary(d: FlameData, query: string): FlameData {
  const m = nameMatcher(query);
  if (!m) return d;
  const keep = d.binaries.map(m);
  return mergeIntoParents(d, (i) => d.kind[i] !== GROUP_LABEL && !keep[d.binary[i]]);
}

// Consecutive repeats of one frame (same name, binary and kind) as one node:
// a recursive call merged into its caller.
export function collapseRecursion(d: FlameData): FlameData {
  return mergeIntoParents(d, (i) => {
    const p = d.parent[i];
    return p > 0 && d.name[p] === d.name[i] && d.binary[p] === d.binary[i] && d.kind[p] === d.kind[i];
  });
}

// The state keys the pipeline reads (state.ts ViewState's).
export interface TransformKeys {
  ffocus: string;
  hide: string;
  bin: string;
  norec: string;
  tree: string;
}

// The stages in their order, each with the part of the keys it depends on.
const STAGES: [key: (k: TransformKeys) => string, apply: (d: FlameData, k: TransformKeys) => FlameData][] = [
  [(k) => k.ffocus, (d, k) => {
    const f = parseFrame(k.ffocus);
    return f ? focusOnFunction(d, f) : d;
  }],
  [(k) => k.hide, (d, k) => hideFrames(d, parseFrames(k.hide))],
  [(k) => k.bin.trim(), (d, k) => filterBinary(d, k.bin)],
  [(k) => (k.norec === "1" ? "1" : ""), (d, k) => (k.norec === "1" ? collapseRecursion(d) : d)],
  [(k) => (k.tree === "bottom-up" ? "1" : ""), (d, k) => (k.tree === "bottom-up" ? inverted(d) : d)],
];

// Whether any transform that changes the tree's content (not only its
// orientation) is on: then only the client's tree knows the numbers.
export function reshapes(k: TransformKeys): boolean {
  return !!parseFrame(k.ffocus) || parseFrames(k.hide).length > 0 || !!k.bin.trim() || k.norec === "1";
}

// The flame chart's answer under the same transforms, stack by stack: focus
// keeps the stacks through the function, from its outermost occurrence
// (the others' points are dropped, as the graph's root then holds only the
// function's total); hide takes frames out; the binary filter keeps only
// the matching binaries' frames (and group labels); collapse merges
// consecutive repeats. Points keep their values, so the lanes' totals change
// only under focus.
export function transformChart(json: FlameChartJson, k: TransformKeys): FlameChartJson {
  if (!reshapes(k)) return json;
  const { frames, names, binaries } = json;
  const keyOf = frames.map(([n, b, kind]) => `${names[n]}\u0000${binaries[b] ?? ""}\u0000${kind}`);
  const focus = parseFrame(k.ffocus);
  const focusKey = focus ? `${focus[0]}\u0000${focus[1]}\u0000${focus[2]}` : null;
  const hidden = new Set(parseFrames(k.hide).map(([n, b, kind]) => `${n}\u0000${b}\u0000${kind}`));
  const m = nameMatcher(k.bin);
  const keepBinary = m ? binaries.map(m) : null;
  const stacks: (number[] | null)[] = json.stacks.map((stack) => {
    let st = stack;
    if (focusKey) {
      const at = st.findIndex((f) => keyOf[f] === focusKey);
      if (at < 0) return null;
      st = st.slice(at);
    }
    if (hidden.size) st = st.filter((f) => !hidden.has(keyOf[f]));
    if (keepBinary) st = st.filter((f) => frames[f][2] === GROUP_LABEL || keepBinary[frames[f][1]]);
    if (k.norec === "1") st = st.filter((f, i, a) => i === 0 || keyOf[f] !== keyOf[a[i - 1]]);
    return st;
  });
  let dropped = 0;
  const lanes = json.lanes.map((lane) => {
    const points = lane.points.filter((p) => stacks[p[1]] !== null);
    const total = points.reduce((sum, p) => sum + p[2], 0);
    dropped += lane.total - total;
    return { ...lane, points, total };
  });
  return { ...json, stacks: stacks.map((st) => st ?? []), lanes, total: json.total - dropped };
}

// The top-functions table of a (transformed) tree, as /api/v1/top answers
// it: per (name, binary, kind) its self, and its total with each stack
// counted once (from the function's outermost occurrence). Not the root,
// "other" boxes (kind 3) or group labels (kind 5). On a folded tree the
// functions folded into "other" are missing and the rest exact.
export function topOfTree(d: FlameData): { total: number; functions: { name: string; binary: string; kind: number; self: number; total: number }[] } {
  const index = new Map<string, number>();
  const rows: { name: string; binary: string; kind: number; self: number; total: number }[] = [];
  const insideUntil: number[] = [];
  for (let i = 1; i < d.n; i++) {
    const kind = d.kind[i];
    if (kind === 3 || kind === GROUP_LABEL) continue;
    const key = `${d.name[i]}\u0000${d.binary[i]}\u0000${kind}`;
    let r = index.get(key);
    if (r === undefined) {
      r = rows.length;
      index.set(key, r);
      rows.push({ name: d.names[d.name[i]], binary: d.binaries[d.binary[i]] ?? "", kind, self: 0, total: 0 });
      insideUntil.push(0);
    }
    rows[r].self += d.self[i];
    if (i >= insideUntil[r]) {
      rows[r].total += d.total[i];
      insideUntil[r] = d.end[i];
    }
  }
  return { total: d.total[0] ?? 0, functions: rows };
}

// The shown tree of the server's data under the state's transforms, each
// stage cached on (its input, its keys): changing the collapse keeps the
// focus and hide already computed, new data recomputes all.
export class TransformPipeline {
  private inputs: (FlameData | null)[] = [];
  private keys: string[] = [];
  private outputs: FlameData[] = [];

  apply(data: FlameData, k: TransformKeys): FlameData {
    let d = data;
    STAGES.forEach(([key, run], s) => {
      const kk = key(k);
      if (this.inputs[s] !== d || this.keys[s] !== kk) {
        this.inputs[s] = d;
        this.keys[s] = kk;
        this.outputs[s] = run(d, k);
      }
      d = this.outputs[s];
    });
    return d;
  }
}

// The binaries of a tree by the value of the stacks through them (each
// stack once, from a binary's outermost frame), biggest first: the colour
// legend's and the binary filter's suggestions. Only frames coloured by
// their binary count, so not the "other" boxes (kind 3), CUDA kernels (4)
// and group labels (5), nor the root's empty name.
export function binariesByTotal(d: FlameData): { binary: string; total: number }[] {
  const sums = new Float64Array(d.binaries.length);
  const insideUntil = new Int32Array(d.binaries.length);
  for (let i = 1; i < d.n; i++) {
    const b = d.binary[i];
    if (d.kind[i] >= 3 || i < insideUntil[b]) continue;
    sums[b] += d.total[i];
    insideUntil[b] = d.end[i];
  }
  const out: { binary: string; total: number }[] = [];
  sums.forEach((v, b) => {
    if (v > 0 && d.binaries[b]) out.push({ binary: d.binaries[b], total: v });
  });
  return out.sort((a, b) => b.total - a.total || (a.binary < b.binary ? -1 : 1));
}
