// flame/transforms.ts: focus on a function, hide frames, the binary filter,
// collapsed recursion, and the cached pipeline that chains them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { TreeBuilder } from "../src/flame/model.ts";
import {
  TransformPipeline,
  binariesByTotal,
  collapseRecursion,
  filterBinary,
  focusOnFunction,
  hideFrames,
  parseFrame,
  parseFrames,
  reshapes,
  topOfTree,
  transformChart,
} from "../src/flame/transforms.ts";

// A tree from stacks: [["name@binary", …] root first, value]; kind 2 (Python) for binaries ending in .py, else 0.
function tree(stacks) {
  const t = new TreeBuilder("total", "", 3);
  for (const [frames, v] of stacks) {
    t.add(0, 0, v);
    let cur = 0;
    frames.forEach((f, i) => {
      const [name, binary = ""] = f.split("@");
      cur = t.child(cur, name, binary, binary.endsWith(".py") ? 2 : 0);
      t.add(cur, i === frames.length - 1 ? v : 0, v);
    });
  }
  return t.build("samples", 10_000_000);
}

// Every node as "path": [self, total], the path of name@binary from the root's child.
function paths(d) {
  const out = {};
  const path = [];
  for (let i = 0; i < d.n; i++) {
    path.length = d.depth[i];
    if (i > 0) path[d.depth[i] - 1] = `${d.names[d.name[i]]}@${d.binaries[d.binary[i]]}`;
    out[i === 0 ? "(root)" : path.join(";")] = [d.self[i], d.total[i]];
  }
  return out;
}

// Each node's total is its self plus its children's.
function assertConsistent(d) {
  const sum = new Float64Array(d.n);
  for (let i = d.n - 1; i > 0; i--) sum[d.parent[i]] += d.total[i];
  for (let i = 0; i < d.n; i++) assert.equal(d.total[i], d.self[i] + sum[i], `node ${i} ${d.names[d.name[i]]}`);
}

// Two subtrees (a, b) that share names: f in lib1 under both, f in lib2
// under c (another function of the same name), f calling itself under b.
const shared = () =>
  tree([
    [["main@app", "a@app", "f@lib1", "x@lib1"], 5],
    [["main@app", "b@app", "f@lib1", "y@lib1"], 3],
    [["main@app", "b@app", "f@lib1", "f@lib1", "x@lib1"], 2],
    [["main@app", "b@app"], 1],
    [["main@app", "c@app", "f@lib2"], 4],
  ]);

test("focusOnFunction: every stack through the function under one child, recursion from the outermost", () => {
  const d = focusOnFunction(shared(), ["f", "lib1", 0]);
  assertConsistent(d);
  assert.deepEqual(paths(d), {
    "(root)": [0, 10],
    "f@lib1": [0, 10],
    "f@lib1;f@lib1": [0, 2],
    "f@lib1;f@lib1;x@lib1": [2, 2],
    "f@lib1;x@lib1": [5, 5],
    "f@lib1;y@lib1": [3, 3],
  });
  // The other f (lib2) is a different function.
  assert.deepEqual(paths(focusOnFunction(shared(), ["f", "lib2", 0])), { "(root)": [0, 4], "f@lib2": [4, 4] });
  // Not in the data: an empty root.
  assert.deepEqual(paths(focusOnFunction(shared(), ["f", "lib1", 2])), { "(root)": [0, 0] });
});

test("hideFrames: the frames taken out of every stack, their callees merged into the callers", () => {
  const d = hideFrames(shared(), [["b", "app", 0]]);
  assertConsistent(d);
  assert.equal(d.total[0], 15);
  assert.deepEqual(paths(d), {
    "(root)": [0, 15],
    "main@app": [1, 15], // b's own sample
    "main@app;a@app": [0, 5],
    "main@app;a@app;f@lib1": [0, 5],
    "main@app;a@app;f@lib1;x@lib1": [5, 5],
    "main@app;c@app": [0, 4],
    "main@app;c@app;f@lib2": [4, 4],
    "main@app;f@lib1": [0, 5],
    "main@app;f@lib1;f@lib1": [0, 2],
    "main@app;f@lib1;f@lib1;x@lib1": [2, 2],
    "main@app;f@lib1;y@lib1": [3, 3],
  });
  // f of lib1 in both subtrees (and its recursion), not lib2's.
  const f = hideFrames(shared(), [["f", "lib1", 0], ["a", "app", 0]]);
  assertConsistent(f);
  assert.deepEqual(paths(f), {
    "(root)": [0, 15],
    "main@app": [0, 15],
    "main@app;b@app": [1, 6],
    "main@app;b@app;x@lib1": [2, 2],
    "main@app;b@app;y@lib1": [3, 3],
    "main@app;c@app": [0, 4],
    "main@app;c@app;f@lib2": [4, 4],
    "main@app;x@lib1": [5, 5],
  });
  // A hidden leaf's value becomes its caller's self.
  assert.deepEqual(paths(hideFrames(shared(), [["f", "lib2", 0]]))["main@app;c@app"], [4, 4]);
  const same = shared();
  assert.equal(hideFrames(same, []), same);
});

test("filterBinary: only the matching binaries' frames, every stack's value kept", () => {
  const d = filterBinary(shared(), "lib1");
  assertConsistent(d);
  assert.deepEqual(paths(d), {
    "(root)": [5, 15], // main;b (1) and c;f@lib2 (4) have no lib1 frame
    "f@lib1": [0, 10],
    "f@lib1;f@lib1": [0, 2],
    "f@lib1;f@lib1;x@lib1": [2, 2],
    "f@lib1;x@lib1": [5, 5],
    "f@lib1;y@lib1": [3, 3],
  });
  // The search box's syntax: a substring of any case, or /a regex/.
  const py = tree([
    [["python3@python3", "<module>@train.py", "step@train.py", "gemm@libtorch.so"], 6],
    [["python3@python3", "<module>@other.py", "setup@other.py"], 2],
  ]);
  assert.deepEqual(Object.keys(paths(filterBinary(py, ".PY"))).sort(), [
    "(root)",
    "<module>@other.py",
    "<module>@other.py;setup@other.py",
    "<module>@train.py",
    "<module>@train.py;step@train.py",
  ]);
  assert.deepEqual(paths(filterBinary(py, "/^lib/")), { "(root)": [2, 8], "gemm@libtorch.so": [6, 6] });
  assert.equal(filterBinary(py, "  "), py);
});

test("collapseRecursion: consecutive repeats of one frame merged, others kept", () => {
  const d = collapseRecursion(
    tree([
      [["main@app", "f@app", "f@app", "f@app", "x@app"], 4],
      [["main@app", "f@app", "f@app"], 1],
      [["main@app", "f@app", "g@app", "f@app"], 2],
      [["main@app", "f@lib", "f@app"], 3], // another binary's f is not a repeat
    ]),
  );
  assertConsistent(d);
  assert.deepEqual(paths(d), {
    "(root)": [0, 10],
    "main@app": [0, 10],
    "main@app;f@app": [1, 7],
    "main@app;f@app;g@app": [0, 2],
    "main@app;f@app;g@app;f@app": [2, 2],
    "main@app;f@app;x@app": [4, 4],
    "main@app;f@lib": [0, 3],
    "main@app;f@lib;f@app": [3, 3],
  });
});

test("parseFrame and parseFrames read the state's JSON and skip what is not a frame", () => {
  assert.deepEqual(parseFrame('["f","lib1",0]'), ["f", "lib1", 0]);
  assert.deepEqual(parseFrame('["f"]'), ["f", "", 0]);
  assert.equal(parseFrame(""), null);
  assert.equal(parseFrame("f;g"), null);
  assert.equal(parseFrame("[1,2]"), null);
  assert.deepEqual(parseFrames('[["a","x",0],7,["b","y",2]]'), [["a", "x", 0], ["b", "y", 2]]);
  assert.deepEqual(parseFrames("nope"), []);
  assert.deepEqual(parseFrames(""), []);
});

test("TransformPipeline chains the stages in order and caches each on its input and keys", () => {
  const keys = { ffocus: "", hide: "", bin: "", norec: "", tree: "" };
  const p = new TransformPipeline();
  const data = shared();
  assert.equal(p.apply(data, keys), data);
  const focused = p.apply(data, { ...keys, ffocus: '["f","lib1",0]' });
  assert.equal(focused.total[0], 10);
  assert.equal(p.apply(data, { ...keys, ffocus: '["f","lib1",0]' }), focused);
  // Focus, then collapse: f;f becomes one f.
  const both = p.apply(data, { ...keys, ffocus: '["f","lib1",0]', norec: "1" });
  assert.deepEqual(paths(both), {
    "(root)": [0, 10],
    "f@lib1": [0, 10],
    "f@lib1;x@lib1": [7, 7],
    "f@lib1;y@lib1": [3, 3],
  });
  // Hide, then bottom-up: the hidden frame is not among the callers.
  const up = p.apply(data, { ...keys, hide: '[["b","app",0]]', tree: "bottom-up" });
  assert.equal(up.total[0], 15);
  assert.ok(!Object.keys(paths(up)).some((k) => k.includes("b@app")));
  assert.equal(paths(up)["main@app"][0], 1); // b's sample is main's own now
  // New data: computed again.
  const other = shared();
  assert.notEqual(p.apply(other, keys), data);
  assert.equal(p.apply(other, keys), other);
});

test("binariesByTotal: the binaries by the stacks through them, each stack once", () => {
  assert.deepEqual(binariesByTotal(shared()), [
    { binary: "app", total: 15 },
    { binary: "lib1", total: 10 }, // f;f;x counted once, from the outer f
    { binary: "lib2", total: 4 },
  ]);
});

const NO_TRANSFORMS = { ffocus: "", hide: "", bin: "", norec: "", tree: "" };

test("topOfTree: self per function, total with each stack once (recursion from its outermost call)", () => {
  const d = tree([
    [["main@app", "f@app", "f@app", "g@libg.so"], 5],
    [["main@app", "g@libg.so"], 3],
    [["main@app"], 2],
  ]);
  const top = topOfTree(d);
  const row = (name) => top.functions.find((r) => r.name === name);
  assert.equal(top.total, 10);
  assert.deepEqual([row("main").self, row("main").total], [2, 10]);
  assert.deepEqual([row("f").self, row("f").total], [0, 5], "f under f counted once");
  assert.deepEqual([row("g").self, row("g").total], [8, 8]);
  assert.equal(top.functions.length, 3);
  assert.equal(reshapes(NO_TRANSFORMS), false);
  assert.equal(reshapes({ ...NO_TRANSFORMS, tree: "bottom-up" }), false, "inversion keeps the functions' numbers");
  assert.equal(reshapes({ ...NO_TRANSFORMS, norec: "1" }), true);
});

// A flame-chart answer: frames main@app (0), f@app (1), g@libg.so (2); one lane.
const chart = {
  version: 1, type: "cpu", unit: "samples", period_nanos: 1, from_ms: 0, to_ms: 3000, total: 10,
  names: ["main", "f", "g"], binaries: ["app", "libg.so"],
  frames: [[0, 0, 0], [1, 0, 0], [2, 1, 0]],
  stacks: [[0, 1, 1, 2], [0, 2], [0]],
  lanes: [{ labels: { comm: "app" }, total: 10, points: [[0, 0, 5], [1000, 1, 3], [2000, 2, 2]] }],
};

test("transformChart: the flame graph's transforms on the chart's stacks", () => {
  assert.equal(transformChart(chart, NO_TRANSFORMS), chart, "nothing to do: the same answer");
  const norec = transformChart(chart, { ...NO_TRANSFORMS, norec: "1" });
  assert.deepEqual(norec.stacks[0], [0, 1, 2]);
  const hidden = transformChart(chart, { ...NO_TRANSFORMS, hide: JSON.stringify([["f", "app", 0]]) });
  assert.deepEqual(hidden.stacks[0], [0, 2]);
  assert.equal(hidden.total, 10);
  const bin = transformChart(chart, { ...NO_TRANSFORMS, bin: "libg" });
  assert.deepEqual(bin.stacks, [[2], [2], []]);
  assert.equal(bin.lanes[0].total, 10, "every point kept");
  const focus = transformChart(chart, { ...NO_TRANSFORMS, ffocus: JSON.stringify(["f", "app", 0]) });
  assert.deepEqual(focus.stacks[0], [1, 1, 2], "from f's outermost call");
  assert.deepEqual(focus.lanes[0].points, [[0, 0, 5]], "the stacks without f are dropped");
  assert.equal(focus.lanes[0].total, 5);
  assert.equal(focus.total, 5);
});
