// flame/model.ts: the API's node arrays into typed arrays and their layout,
// the diff's widths, merged trees (TreeBuilder) and focus paths.
import assert from "node:assert/strict";
import { test } from "node:test";
import { TreeBuilder, findPath, foldedAway, fromDiff, fromProfile, inverted, layout, pathOf } from "../src/flame/model.ts";

// root(10) → {a(6) → {a1(2), a2(4)}, b(4) → {b1(1), b2(3)}}: a2 starts 2
// into a, b 6 into the root, b2 7.
const profile = {
  version: 1,
  type: "cpu",
  unit: "samples",
  period_nanos: 10_000_000,
  total: 10,
  truncated: 3,
  names: ["total", "a", "a1", "a2", "b", "b1", "b2"],
  binaries: ["", "app"],
  nodes: [
    [-1, 0, 0, 3, 0, 10],
    [0, 1, 1, 0, 0, 6],
    [1, 2, 1, 0, 2, 2],
    [1, 3, 1, 2, 4, 4],
    [0, 4, 1, 1, 0, 4],
    [4, 5, 1, 0, 1, 1],
    [4, 6, 1, 0, 3, 3],
  ],
};

test("fromProfile copies the columns and lays out depth, x and subtree ends", () => {
  const d = fromProfile(profile);
  assert.equal(d.n, 7);
  assert.deepEqual([...d.parent], [-1, 0, 1, 1, 0, 4, 4]);
  assert.deepEqual([...d.kind], [3, 0, 0, 2, 1, 0, 0]);
  assert.deepEqual([...d.self], [0, 0, 2, 4, 0, 1, 3]);
  assert.deepEqual([...d.total], [10, 6, 2, 4, 4, 1, 3]);
  assert.deepEqual([...d.depth], [0, 1, 2, 2, 1, 2, 2]);
  assert.deepEqual([...d.x], [0, 0, 0, 2, 6, 6, 7]);
  // A subtree is [i, end[i]).
  assert.deepEqual([...d.end], [7, 4, 3, 4, 7, 6, 7]);
  assert.equal(d.maxDepth, 2);
  assert.equal(d.truncated, 3);
  assert.equal(d.unit, "samples");
  assert.equal(d.periodNanos, 10_000_000);
});

test("fromProfile of an answer without nodes", () => {
  const d = fromProfile({ ...profile, total: 0, names: [], binaries: [], nodes: [] });
  assert.equal(d.n, 0);
  assert.equal(d.maxDepth, 0);
  assert.equal(d.end.length, 0);
});

test("layout of a chain: each node one deeper, every subtree ends at n", () => {
  const d = fromProfile({ ...profile, nodes: [[-1, 0, 0, 3, 0, 5], [0, 1, 1, 0, 0, 5], [1, 2, 1, 0, 0, 5], [2, 3, 1, 0, 5, 5]] });
  assert.deepEqual([...d.depth], [0, 1, 2, 3]);
  assert.deepEqual([...d.end], [4, 4, 4, 4]);
  assert.equal(d.maxDepth, 3);
  // layout() again over the same arrays gives the same answer.
  layout(d);
  assert.deepEqual([...d.end], [4, 4, 4, 4]);
});

test("fromDiff: widths are the two shares summed (×1e6), the raw values kept", () => {
  const d = fromDiff({
    version: 1,
    type: "cpu",
    unit: "samples",
    period_nanos: 0,
    base_total: 100,
    target_total: 200,
    truncated: 0,
    names: ["total", "grew", "gone"],
    binaries: [""],
    nodes: [
      [-1, 0, 0, 3, 0, 100, 0, 200],
      [0, 1, 0, 0, 50, 50, 200, 200],
      [0, 2, 0, 0, 50, 50, 0, 0],
    ],
  });
  assert.deepEqual([...d.total], [2e6, 1.5e6, 0.5e6]);
  assert.deepEqual([...d.self], [0, 1.5e6, 0.5e6]);
  assert.deepEqual([...d.x], [0, 0, 1.5e6]);
  assert.deepEqual([...d.diff.targetTotal], [200, 200, 0]);
  assert.equal(d.diff.baseSum, 100);
  assert.equal(d.diff.targetSum, 200);
});

test("fromDiff with an empty base divides by 1, not 0", () => {
  const d = fromDiff({
    version: 1, type: "cpu", unit: "samples", period_nanos: 0, base_total: 0, target_total: 4, truncated: 0,
    names: ["total", "new"], binaries: [""],
    nodes: [[-1, 0, 0, 3, 0, 0, 0, 4], [0, 1, 0, 0, 0, 0, 4, 4]],
  });
  assert.deepEqual([...d.total], [1e6, 1e6]);
  assert.equal(d.diff.baseSum, 0);
});

test("TreeBuilder merges equal frames, keeps other kinds apart and sorts children by name", () => {
  const t = new TreeBuilder("fn", "app", 0);
  const zed = t.child(0, "zed", "app", 0);
  const alpha = t.child(0, "alpha", "app", 0);
  assert.equal(t.child(0, "zed", "app", 0), zed); // the same frame: the same node
  const alphaPython = t.child(0, "alpha", "app", 2); // another kind: another node
  assert.notEqual(alphaPython, alpha);
  t.add(0, 1, 10);
  t.add(zed, 4, 4);
  t.add(zed, 1, 1);
  t.add(alpha, 3, 3);
  t.add(alphaPython, 2, 2);
  const d = t.build("nanoseconds", 0);
  assert.equal(d.n, 4);
  assert.deepEqual([...d.name].map((i) => d.names[i]), ["fn", "alpha", "alpha", "zed"]);
  assert.deepEqual([...d.kind], [0, 0, 2, 0]);
  assert.deepEqual([...d.total], [10, 3, 2, 5]);
  assert.deepEqual([...d.self], [1, 3, 2, 5]);
  assert.deepEqual([...d.parent], [-1, 0, 0, 0]);
  assert.deepEqual([...d.x], [0, 0, 3, 5]);
  assert.equal(d.unit, "nanoseconds");
});

test("pathOf and findPath: the URL's focus round-trips; an unknown step stops at the last known node", () => {
  const d = fromProfile(profile);
  assert.equal(pathOf(d, 0), "");
  const a2 = pathOf(d, 3);
  assert.deepEqual(JSON.parse(a2).map((s) => s[0]), ["a", "a2"]);
  assert.equal(findPath(d, a2), 3);
  assert.equal(findPath(d, pathOf(d, 4)), 4);
  assert.equal(findPath(d, pathOf(d, 6)), 6);
  assert.equal(findPath(d, ""), 0);
  // Links made before identities: ';'-separated names still open.
  assert.equal(findPath(d, "a;a2"), 3);
  assert.equal(findPath(d, "b;b2"), 6);
  assert.equal(findPath(d, "a;missing"), 1);
  assert.equal(findPath(d, "missing;a2"), 0);
  for (let i = 0; i < d.n; i++) assert.equal(findPath(d, pathOf(d, i)), i);
});

test("findPath: siblings with one name are told apart by binary and kind", () => {
  // Two scripts' <module> under one python3: the second holds the samples.
  const t = new TreeBuilder("total", "", 3);
  const python = t.child(0, "python3", "python3", 0);
  const other = t.child(python, "<module>", "/srv/other.py", 2);
  const train = t.child(python, "<module>", "/srv/train.py", 2);
  const step = t.child(train, "train_step", "/srv/train.py", 2);
  const native = t.child(python, "<module>", "/srv/train.py", 0);  // same name and file, native
  t.add(other, 3, 3);
  t.add(step, 78, 78);
  t.add(native, 1, 1);
  t.add(0, 0, 82);
  const d = t.build("samples", 0);
  const nodeOf = (name, binary, kind) => {
    for (let i = 0; i < d.n; i++) if (d.names[d.name[i]] === name && d.binaries[d.binary[i]] === binary && d.kind[i] === kind) return i;
    return -1;
  };
  const trainNode = nodeOf("train_step", "/srv/train.py", 2);
  assert.ok(trainNode > 0);
  const path = pathOf(d, trainNode);
  assert.equal(findPath(d, path), trainNode);
  assert.equal(d.total[findPath(d, path)], 78);
  for (const [name, binary, kind] of [["<module>", "/srv/other.py", 2], ["<module>", "/srv/train.py", 2], ["<module>", "/srv/train.py", 0]]) {
    const i = nodeOf(name, binary, kind);
    assert.equal(findPath(d, pathOf(d, i)), i, `${binary} ${kind}`);
  }
});

test("foldedAway: the server's folded node count and the value the grey other boxes hold", () => {
  const json = {
    version: 1, type: "cpu", unit: "samples", period_nanos: 0, total: 100, truncated: 4321,
    names: ["total", "main", "other"], binaries: ["", "app"],
    nodes: [[-1, 0, 0, 3, 0, 100], [0, 1, 1, 0, 10, 70], [1, 2, 0, 3, 25, 25], [0, 2, 0, 3, 30, 30]],
  };
  const d = fromProfile(json);
  assert.deepEqual(foldedAway(d), { nodes: 4321, value: 55 });
  assert.deepEqual(foldedAway(fromProfile({ ...json, truncated: 0, nodes: json.nodes.slice(0, 2) })), { nodes: 0, value: 0 });
});

test("inverted: the functions where samples were taken on top, their callers below; totals kept", () => {
  // main -> a -> leaf (5 samples), main -> b -> leaf (3), main -> b (2 in b itself), root self 1.
  const t = new TreeBuilder("total", "", 3);
  const main = t.child(0, "main", "app", 0);
  const a = t.child(main, "a", "app", 0);
  const b = t.child(main, "b", "app", 0);
  const leafA = t.child(a, "leaf", "libc", 0);
  const leafB = t.child(b, "leaf", "libc", 0);
  t.add(0, 1, 11);
  t.add(main, 0, 10);
  t.add(a, 0, 5);
  t.add(b, 2, 5);
  t.add(leafA, 5, 5);
  t.add(leafB, 3, 3);
  const up = inverted(t.build("samples", 0));
  const path = (i) => {
    const parts = [];
    for (let p = i; p > 0; p = up.parent[p]) parts.unshift(up.names[up.name[p]]);
    return parts.join(";");
  };
  const rows = {};
  for (let i = 0; i < up.n; i++) rows[path(i)] = [up.self[i], up.total[i]];
  assert.deepEqual(rows, {
    "": [1, 11],
    leaf: [8, 8],
    "leaf;a": [0, 5],
    "leaf;a;main": [0, 5],
    "leaf;b": [0, 3],
    "leaf;b;main": [0, 3],
    b: [2, 2],
    "b;main": [0, 2],
  });
  // Inverting twice is not the identity, but the total never changes.
  assert.equal(inverted(up).total[0], 11);
});
