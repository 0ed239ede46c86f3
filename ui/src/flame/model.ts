// A flame graph's data in typed arrays, laid out once when it arrives so
// that drawing, hit-testing and search are plain loops (50k+ nodes).
//
// Nodes are in depth-first preorder (docs/api.md: a parent before its
// children), so a node's subtree is the index range [i, end[i]) and a
// subtree can be skipped in one step.
import type { DiffJson, ProfileJson } from "../api/types";

// Frame kinds (docs/api.md): 0 native, 1 kernel, 2 Python, 3 not a frame, 4 CUDA kernel,
// 5 a group's label (group by process or thread).
export const KIND_NAMES = ["native", "kernel", "Python", "", "CUDA kernel", "group label", "GPU source line", "SASS instruction", "stall reason"];
export const GROUP_LABEL = 5;

export interface DiffValues {
  baseSelf: Float64Array;
  baseTotal: Float64Array;
  targetSelf: Float64Array;
  targetTotal: Float64Array;
  baseSum: number;
  targetSum: number;
}

export interface FlameData {
  n: number;
  parent: Int32Array;
  name: Int32Array;
  binary: Int32Array;
  kind: Uint8Array;
  self: Float64Array;
  total: Float64Array;
  // Layout: depth, the end of each subtree, and the left edge in value units.
  depth: Uint16Array;
  end: Int32Array;
  x: Float64Array;
  maxDepth: number;
  names: string[];
  binaries: string[];
  unit: string;
  periodNanos: number;
  truncated: number;
  diff?: DiffValues;
}

function allocate(n: number, names: string[], binaries: string[], unit: string, periodNanos: number): FlameData {
  return {
    n,
    parent: new Int32Array(n),
    name: new Int32Array(n),
    binary: new Int32Array(n),
    kind: new Uint8Array(n),
    self: new Float64Array(n),
    total: new Float64Array(n),
    depth: new Uint16Array(n),
    end: new Int32Array(n),
    x: new Float64Array(n),
    maxDepth: 0,
    names,
    binaries,
    unit,
    periodNanos,
    truncated: 0,
  };
}

// Fills depth, x and end from parent and total.
export function layout(d: FlameData): void {
  const { n, parent, total, depth, x, end } = d;
  const cursor = new Float64Array(n);
  const stack = new Int32Array(n + 1);
  let top = 0;
  let maxDepth = 0;
  for (let i = 0; i < n; i++) {
    const p = parent[i];
    if (p >= 0) {
      depth[i] = depth[p] + 1;
      x[i] = x[p] + cursor[p];
      cursor[p] += total[i];
      if (depth[i] > maxDepth) maxDepth = depth[i];
    } else {
      depth[i] = 0;
      x[i] = 0;
    }
    while (top > 0 && depth[stack[top - 1]] >= depth[i]) end[stack[--top]] = i;
    stack[top++] = i;
  }
  while (top > 0) end[stack[--top]] = n;
  d.maxDepth = maxDepth;
}

export function fromProfile(p: ProfileJson): FlameData {
  const n = p.nodes.length;
  const d = allocate(n, p.names, p.binaries, p.unit, p.period_nanos);
  d.truncated = p.truncated;
  for (let i = 0; i < n; i++) {
    const row = p.nodes[i];
    d.parent[i] = row[0];
    d.name[i] = row[1];
    d.binary[i] = row[2];
    d.kind[i] = row[3];
    d.self[i] = row[4];
    d.total[i] = row[5];
  }
  layout(d);
  return d;
}

// Widths are the sum of both sides' shares (b/B + t/T): linear, so a node
// still equals its self plus its children, and a function that vanished or
// appeared keeps a visible box.
export function fromDiff(p: DiffJson): FlameData {
  const n = p.nodes.length;
  const d = allocate(n, p.names, p.binaries, p.unit, p.period_nanos);
  d.truncated = p.truncated;
  const B = p.base_total || 1;
  const T = p.target_total || 1;
  const diff: DiffValues = {
    baseSelf: new Float64Array(n),
    baseTotal: new Float64Array(n),
    targetSelf: new Float64Array(n),
    targetTotal: new Float64Array(n),
    baseSum: p.base_total,
    targetSum: p.target_total,
  };
  for (let i = 0; i < n; i++) {
    const row = p.nodes[i];
    d.parent[i] = row[0];
    d.name[i] = row[1];
    d.binary[i] = row[2];
    d.kind[i] = row[3];
    diff.baseSelf[i] = row[4];
    diff.baseTotal[i] = row[5];
    diff.targetSelf[i] = row[6];
    diff.targetTotal[i] = row[7];
    d.self[i] = (row[4] / B + row[6] / T) * 1e6;
    d.total[i] = (row[5] / B + row[7] / T) * 1e6;
  }
  d.diff = diff;
  layout(d);
  return d;
}

// Builds a FlameData from merged paths (the sandwich view's callers and
// callees). Children are kept sorted by name like the server's trees.
export class TreeBuilder {
  private names: string[] = [];
  private nameIndex = new Map<string, number>();
  private binaries: string[] = [];
  private binaryIndex = new Map<string, number>();
  private nodes: { name: number; binary: number; kind: number; self: number; total: number; children: Map<string, number> }[] = [];

  constructor(rootName: string, rootBinary: string, rootKind: number) {
    this.nodes.push({ name: this.intern(rootName, false), binary: this.intern(rootBinary, true), kind: rootKind, self: 0, total: 0, children: new Map() });
  }

  private intern(s: string, binary: boolean): number {
    const index = binary ? this.binaryIndex : this.nameIndex;
    const list = binary ? this.binaries : this.names;
    let i = index.get(s);
    if (i === undefined) {
      i = list.length;
      list.push(s);
      index.set(s, i);
    }
    return i;
  }

  // The child of `parent` for the frame, created with zero values if new.
  child(parent: number, name: string, binary: string, kind: number): number {
    const key = `${name}\u0000${binary}\u0000${kind}`;
    const children = this.nodes[parent].children;
    let c = children.get(key);
    if (c === undefined) {
      c = this.nodes.length;
      this.nodes.push({ name: this.intern(name, false), binary: this.intern(binary, true), kind, self: 0, total: 0, children: new Map() });
      children.set(key, c);
    }
    return c;
  }

  add(node: number, self: number, total: number): void {
    this.nodes[node].self += self;
    this.nodes[node].total += total;
  }

  build(unit: string, periodNanos: number): FlameData {
    const n = this.nodes.length;
    const d = allocate(n, this.names, this.binaries, unit, periodNanos);
    let out = 0;
    const visit = (node: number, parent: number) => {
      const src = this.nodes[node];
      const i = out++;
      d.parent[i] = parent;
      d.name[i] = src.name;
      d.binary[i] = src.binary;
      d.kind[i] = src.kind;
      d.self[i] = src.self;
      d.total[i] = src.total;
      const kids = [...src.children.values()].sort((a, b) => {
        const na = this.names[this.nodes[a].name];
        const nb = this.names[this.nodes[b].name];
        return na < nb ? -1 : na > nb ? 1 : 0;
      });
      for (const k of kids) visit(k, i);
    };
    visit(0, -1);
    layout(d);
    return d;
  }
}

// The bottom-up (inverted) tree: under the root, every function where
// samples were taken, and under each its callers, out to the outermost
// frame. A node's total is the samples taken in its first-row function on
// that call path; the first row's self is the function's own samples (the
// others' is 0). The root keeps the total.
export function inverted(d: FlameData): FlameData {
  const t = new TreeBuilder(d.names[d.name[0]], d.binaries[d.binary[0]] ?? "", d.kind[0]);
  t.add(0, d.self[0], d.total[0]);
  for (let i = 1; i < d.n; i++) {
    const v = d.self[i];
    if (v === 0) continue;
    let cur = 0;
    for (let p = i; p > 0; p = d.parent[p]) {
      cur = t.child(cur, d.names[d.name[p]], d.binaries[d.binary[p]] ?? "", d.kind[p]);
      t.add(cur, p === i ? v : 0, v);
    }
  }
  const out = t.build(d.unit, d.periodNanos);
  out.truncated = d.truncated;
  return out;
}

// What the server folded away to keep the answer within max_nodes: how many
// nodes, and how much of the total the grey "other" boxes (kind 3 below the
// root) hold in their place.
export function foldedAway(d: FlameData): { nodes: number; value: number } {
  let value = 0;
  for (let i = 1; i < d.n; i++) if (d.kind[i] === 3) value += d.total[i];
  return { nodes: d.truncated, value };
}

// One step of a focus path: the child of the previous step with this
// identity. Names alone are not enough: two Python files each have a
// `<module>`, two libraries may export the same symbol.
export type PathStep = [name: string, binary: string, kind: number];

// The path of node identities from the root's child down to `node`, as JSON
// (the URL's focus): "" for the root.
export function pathOf(d: FlameData, node: number): string {
  const steps: PathStep[] = [];
  for (let i = node; i > 0; i = d.parent[i]) steps.push([d.names[d.name[i]], d.binaries[d.binary[i]] ?? "", d.kind[i]]);
  return steps.length ? JSON.stringify(steps.reverse()) : "";
}

// What a focus holds: a JSON path of identities, or (links made before
// identities were kept) frame names separated by ';', which match by name.
function parseFocus(path: string): { name: string; binary?: string; kind?: number }[] {
  if (path.startsWith("[")) {
    try {
      const steps = JSON.parse(path) as unknown;
      if (Array.isArray(steps) && steps.every((s) => Array.isArray(s) && typeof s[0] === "string")) {
        return (steps as PathStep[]).map(([name, binary, kind]) => ({ name, binary, kind }));
      }
    } catch {
      // not JSON: a name that starts with '['
    }
  }
  return path.split(";").map((name) => ({ name }));
}

// The node a focus path names, or the deepest node of it found in this data
// (0, the root, when not even its first step is).
export function findPath(d: FlameData, path: string): number {
  if (!path) return 0;
  let node = 0;
  for (const step of parseFocus(path)) {
    let c = node + 1;
    let found = -1;
    while (c < d.end[node]) {
      if (
        d.names[d.name[c]] === step.name &&
        (step.binary === undefined || (d.binaries[d.binary[c]] ?? "") === step.binary) &&
        (step.kind === undefined || d.kind[c] === step.kind)
      ) {
        found = c;
        break;
      }
      c = d.end[c];
    }
    if (found < 0) return node;
    node = found;
  }
  return node;
}
