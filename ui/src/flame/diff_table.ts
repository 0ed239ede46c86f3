// The diff view's table: each function's self share in the base and in the
// target and the change between them, largest change first. Self values sum
// exactly over a function's nodes (a stack's leaf is counted once), so the
// shares are of each side's whole. Pure (no DOM): the unit tests run it in Node.
import type { FlameData } from "./model";

export interface DiffRow {
  name: string;
  binary: string;
  kind: number;
  base: number; // self share of the base, 0..1
  target: number; // self share of the target, 0..1
  change: number; // target - base
}

export function diffTable(d: FlameData, limit = 50): DiffRow[] {
  const diff = d.diff;
  if (!diff) return [];
  const B = diff.baseSum || 1;
  const T = diff.targetSum || 1;
  const rows = new Map<string, DiffRow>();
  for (let i = 1; i < d.n; i++) {
    if (d.kind[i] === 3 || (diff.baseSelf[i] === 0 && diff.targetSelf[i] === 0)) continue; // "other", or no self
    const key = `${d.name[i]}\u0000${d.binary[i]}\u0000${d.kind[i]}`;
    let r = rows.get(key);
    if (!r) {
      r = { name: d.names[d.name[i]], binary: d.binaries[d.binary[i]] ?? "", kind: d.kind[i], base: 0, target: 0, change: 0 };
      rows.set(key, r);
    }
    r.base += diff.baseSelf[i] / B;
    r.target += diff.targetSelf[i] / T;
  }
  const out = [...rows.values()];
  for (const r of out) r.change = r.target - r.base;
  out.sort((a, b) => Math.abs(b.change) - Math.abs(a.change) || a.name.localeCompare(b.name));
  return out.slice(0, limit);
}
