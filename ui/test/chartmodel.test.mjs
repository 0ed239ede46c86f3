// flame/chartmodel.ts: the flame chart's answer into merged boxes per lane
// (bucket inference, stack order within a bucket, squeezing, merging),
// hit-testing and a box's time range.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_BUCKET_MS, boxAt, buildChart, inferBucketMs, laneTitle, spanRange, bucketSpan } from "../src/flame/chartmodel.ts";

// A cpu answer at 10 ms a sample; `stacks` of frame indexes into `names` (one frame per name).
function answer(names, stacks, lanes, extra = {}) {
  return {
    version: 1,
    type: "cpu",
    unit: "samples",
    period_nanos: 10_000_000,
    from_ms: 0,
    to_ms: 5000,
    total: lanes.reduce((a, l) => a + l.total, 0),
    names,
    binaries: [""],
    frames: names.map((_, i) => [i, 0, 0]),
    stacks,
    lanes,
    truncated_lanes: 0,
    ...extra,
  };
}
const lane = (points, labels = { pid: "1", comm: "app", thread: "app" }) => ({ labels, total: points.reduce((a, p) => a + p[2], 0), points });
const boxes = (l) =>
  Array.from({ length: l.n }, (_, k) => ({ x0: l.x0[k], x1: l.x1[k], depth: l.depth[k], frame: l.frame[k], value: l.value[k] }));

test("one stack over touching buckets is one box per depth", () => {
  // 100 samples × 10 ms fill each 1 s bucket; the last has 50 (half a bucket).
  const d = buildChart(answer(["main", "work"], [[0, 1]], [lane([[1000, 0, 100], [2000, 0, 100], [3000, 0, 50]])]));
  assert.equal(d.bucketMs, 1000);
  assert.equal(d.originMs, 1000);
  assert.equal(d.nsPerValue, 10_000_000);
  const l = d.lanes[0];
  assert.equal(l.rows, 2);
  assert.deepEqual(boxes(l), [
    { x0: 1000, x1: 3500, depth: 0, frame: 0, value: 250 },
    { x0: 1000, x1: 3500, depth: 1, frame: 1, value: 250 },
  ]);
  assert.deepEqual([...l.depthStart], [0, 1, 2]);
  assert.equal(d.boxes, 2);
});

test("time off CPU between buckets keeps the boxes apart", () => {
  const d = buildChart(answer(["main", "work"], [[0, 1]], [lane([[1000, 0, 50], [2000, 0, 50]])]));
  assert.deepEqual(boxes(d.lanes[0]), [
    { x0: 1000, x1: 1500, depth: 0, frame: 0, value: 50 },
    { x0: 2000, x1: 2500, depth: 0, frame: 0, value: 50 },
    { x0: 1000, x1: 1500, depth: 1, frame: 1, value: 50 },
    { x0: 2000, x1: 2500, depth: 1, frame: 1, value: 50 },
  ]);
  assert.deepEqual([...d.lanes[0].depthStart], [0, 2, 4]);
});

test("within a bucket stacks go in frame-name order and a shared prefix is one box", () => {
  // main;b is listed first, but main;a sorts before it.
  const d = buildChart(answer(["main", "b", "a"], [[0, 1], [0, 2]], [lane([[1000, 0, 30], [1000, 1, 20]])]));
  assert.deepEqual(boxes(d.lanes[0]), [
    { x0: 1000, x1: 1500, depth: 0, frame: 0, value: 50 },
    { x0: 1000, x1: 1200, depth: 1, frame: 2, value: 20 },
    { x0: 1200, x1: 1500, depth: 1, frame: 1, value: 30 },
  ]);
});

test("a bucket holding more CPU time than its length is squeezed to fit", () => {
  // 150 samples of 10 ms in a 1 s bucket (threads of one name).
  const d = buildChart(answer(["main", "a", "b"], [[0, 1], [0, 2]], [lane([[1000, 0, 100], [1000, 1, 50]])]));
  const [main, a, b] = boxes(d.lanes[0]);
  assert.equal(main.x0, 1000);
  assert.ok(Math.abs(main.x1 - 2000) < 1e-9, String(main.x1));
  assert.ok(Math.abs(a.x1 - (1000 + 2000 / 3)) < 1e-9, String(a.x1));
  assert.equal(b.x0, a.x1);
  assert.equal(main.value, 150);
});

test("values that are not times fill their bucket in proportion", () => {
  const d = buildChart(answer(["main", "a", "b"], [[0, 1], [0, 2]], [lane([[1000, 0, 1], [1000, 1, 3]])], { unit: "count", period_nanos: 0 }));
  assert.equal(d.nsPerValue, 0);
  assert.deepEqual(
    boxes(d.lanes[0]).map((b) => [b.x0, b.x1]),
    [[1000, 2000], [1000, 1250], [1250, 2000]],
  );
});

test("points with unknown stacks, bad frames or no value draw nothing", () => {
  const d = buildChart(answer(["main"], [[0], [0, 99]], [lane([[1000, 5, 10], [1000, 1, 10], [1000, 0, 0]])]));
  const l = d.lanes[0];
  assert.equal(l.n, 0);
  assert.equal(l.rows, 1); // the deepest valid stack, drawn or not
  assert.deepEqual([...l.pointStack], [-1, 1, 0]);
  assert.deepEqual([...l.pointValue], [10, 10, 0]);
});

test("an empty or sparse answer", () => {
  const d = buildChart({ version: 1, type: "cpu", unit: "samples", from_ms: 5, to_ms: 10 });
  assert.equal(d.boxes, 0);
  assert.deepEqual(d.lanes, []);
  assert.equal(d.bucketMs, DEFAULT_BUCKET_MS);
  assert.equal(d.originMs, 5);
  assert.equal(d.total, 0);
  assert.equal(d.truncatedLanes, 0);
  assert.equal(d.truncatedTotal, 0);
  const cut = buildChart(answer(["main"], [[0]], [lane([[0, 0, 1]])], { truncated_lanes: 7, truncated_total: 123 }));
  assert.equal(cut.truncatedLanes, 7);
  assert.equal(cut.truncatedTotal, 123);
});

test("inferBucketMs: the smallest gap within a lane, across lanes only without one, clamped", () => {
  const l = (...ts) => ({ labels: {}, total: 0, points: ts.map((t) => [t, 0, 1]) });
  assert.equal(inferBucketMs([l(0, 500, 500, 1500)]), 500);
  // Unaligned lanes: 1000 within each, though 0 and 250 are 250 apart.
  assert.equal(inferBucketMs([l(0, 1000), l(250, 1250)]), 1000);
  assert.equal(inferBucketMs([l(1000), l(1250)]), 250);
  assert.equal(inferBucketMs([l(0, 2)]), 10);
  assert.equal(inferBucketMs([l(0, 120_000)]), 60_000);
  assert.equal(inferBucketMs([l(7), l(7)]), DEFAULT_BUCKET_MS);
  assert.equal(inferBucketMs([]), DEFAULT_BUCKET_MS);
});

test("laneTitle", () => {
  assert.equal(laneTitle({ pid: "12", comm: "python3", thread: "worker" }), "python3 (pid 12) · worker");
  assert.equal(laneTitle({ pid: "12", comm: "python3", thread: "python3" }), "python3 (pid 12)");
  assert.equal(laneTitle({ thread: "t" }), "t");
  assert.equal(laneTitle({ pid: "3", node: "a" }), "pid 3 · node=a");
  assert.equal(laneTitle({}), "all");
});

test("boxAt finds the box under a time, with slack for narrow ones", () => {
  const l = buildChart(answer(["main", "work"], [[0, 1]], [lane([[1000, 0, 50], [2000, 0, 50]])])).lanes[0];
  assert.equal(boxAt(l, 0, 1200), 0);
  assert.equal(boxAt(l, 0, 1700), -1);
  assert.equal(boxAt(l, 0, 1700, 400), 0);
  assert.equal(boxAt(l, 0, 1950, 100), 1);
  assert.equal(boxAt(l, 1, 2100), 3);
  assert.equal(boxAt(l, 0, 999), -1);
  assert.equal(boxAt(l, 2, 1200), -1);
  assert.equal(boxAt(l, -1, 1200), -1);
});

test("spanRange: out to bucket edges, at least two buckets, inside the range at its end", () => {
  const d = buildChart(answer(["main"], [[0]], [lane([[1000, 0, 1], [2000, 0, 1]])]));
  assert.deepEqual(spanRange(d, 1000, 1500), [1000, 3000]);
  assert.deepEqual(spanRange(d, 1200, 3500), [1000, 4000]);
  assert.deepEqual(spanRange(d, 4000, 4500), [3000, 5000]);
});

test("bucketSpan: the whole agent buckets a box lies in", () => {
  // 1 s buckets starting at 10 s: a box at 11.34-11.87 s is in [11, 12).
  assert.deepEqual(bucketSpan(11_340, 11_870, 1000, 10_000), [11_000, 12_000]);
  // Across a boundary: two buckets; ending exactly on one: not the next.
  assert.deepEqual(bucketSpan(11_900, 12_100, 1000, 10_000), [11_000, 13_000]);
  assert.deepEqual(bucketSpan(11_000, 12_000, 1000, 10_000), [11_000, 12_000]);
  // Buckets offset from whole seconds, and no bucket known.
  assert.deepEqual(bucketSpan(10_600, 10_700, 1000, 10_250), [10_250, 11_250]);
  assert.deepEqual(bucketSpan(5, 7, 0, 0), [5, 7]);
});
