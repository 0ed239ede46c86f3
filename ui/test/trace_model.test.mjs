// gpu/trace_model.ts: the per-stream trace into rows (sorted activities,
// times from the range's start), the spans the trace budget left out, and
// hit-testing.
import assert from "node:assert/strict";
import { test } from "node:test";
import { activityAt, buildTrace, rowTitle, busyAlpha } from "../src/gpu/trace_model.ts";

const FROM = 5e9;
const train = { pid: "10", comm: "train", node: "n1" };
const loader = { pid: "9", comm: "loader", node: "n1" };
const trace = {
  from_ns: FROM,
  to_ns: FROM + 2e9,
  names: ["gemm", "copy"],
  streams: [
    {
      labels: train,
      device: 0,
      stream: 7,
      busy_ns: 300_000,
      // Out of order; [start, duration, name, kind, correlation, graph]
      activities: [
        [FROM + 1e6, 2e5, 0, 0, 11, 0],
        [FROM + 5e5, 1e5, 1, 1, 10, 3],
      ],
    },
    { labels: train, device: 0, stream: 13, busy_ns: 0, activities: [] },
    { labels: loader, device: 1, stream: 2, busy_ns: 0, activities: [[FROM, -5, 0, 2, 1]] },
  ],
  coverage: [
    // The trainer's second second: 2 of 4 kept, complete until 1.5 s.
    { labels: { pid: "10", node: "n1" }, second_ns: FROM + 1e9, recorded: 4, sent: 2, complete_until_ns: FROM + 1.5e9 },
    // The loader's: complete.
    { labels: { pid: "9", node: "n1" }, second_ns: FROM + 1e9, recorded: 5, sent: 5, complete_until_ns: FROM + 2e9 },
    // The trainer's first second: 6 of 10 kept, complete until 0.4 s.
    { labels: { pid: "10", node: "n1" }, second_ns: FROM, recorded: 10, sent: 6, complete_until_ns: FROM + 4e8 },
  ],
};

test("rows sorted by title (numerically), activities by start, times from the range's start", () => {
  const m = buildTrace(trace);
  assert.equal(m.spanNs, 2e9);
  assert.deepEqual(
    m.rows.map((r) => r.title),
    ["loader (pid 9) · device 1 · stream 2", "train (pid 10) · device 0 · stream 7", "train (pid 10) · device 0 · stream 13"],
  );
  const r = m.rows[1];
  assert.equal(r.n, 2);
  assert.deepEqual([...r.start], [5e5, 1e6]);
  assert.deepEqual([...r.dur], [1e5, 2e5]);
  assert.deepEqual([...r.name], [1, 0]);
  assert.deepEqual([...r.kind], [1, 0]);
  assert.deepEqual([...r.correlation], [10, 11]);
  assert.deepEqual([...r.graph], [3, 0]);
  assert.equal(r.busyNs, 300_000);
  // A negative duration is drawn as none; a missing graph id is 0.
  const l = m.rows[0];
  assert.deepEqual([...l.dur], [0]);
  assert.deepEqual([...l.graph], [0]);
  assert.equal(m.activities, 3);
});

test("coverage: each process's incomplete seconds on each of its streams, in time order", () => {
  const m = buildTrace(trace);
  const gaps = [
    { from: 4e8, to: 1e9, recorded: 10, sent: 6 },
    { from: 1.5e9, to: 2e9, recorded: 4, sent: 2 },
  ];
  assert.deepEqual(m.rows[1].incomplete, gaps);
  assert.deepEqual(m.rows[2].incomplete, gaps);
  assert.deepEqual(m.rows[0].incomplete, []);
  assert.equal(m.recorded, 19);
  assert.equal(m.sent, 13);
  assert.equal(m.incompleteSeconds, 2);
});

test("an incomplete second that starts before the range is clipped to it", () => {
  const m = buildTrace({
    ...trace,
    from_ns: FROM + 5e8,
    coverage: [{ labels: { pid: "10" }, second_ns: FROM, recorded: 3, sent: 1, complete_until_ns: FROM + 2e8 }],
  });
  assert.deepEqual(m.rows.find((r) => r.stream === 7).incomplete, [{ from: 0, to: 5e8, recorded: 3, sent: 1 }]);
});

test("an empty trace", () => {
  const m = buildTrace({ from_ns: FROM, to_ns: FROM, names: [], streams: [], coverage: [] });
  assert.deepEqual(m.rows, []);
  assert.equal(m.spanNs, 1);
  assert.equal(m.activities, 0);
  assert.equal(m.incompleteSeconds, 0);
});

test("unix nanoseconds past 2^53 stay within 256 ns of their offset", () => {
  const from = 1_764_417_600_000_000_000;
  const m = buildTrace({
    from_ns: from,
    to_ns: from + 1e9,
    names: ["k"],
    streams: [{ labels: {}, device: 0, stream: 0, busy_ns: 0, activities: [[from + 123_456_789, 1000, 0, 0, 0, 0]] }],
    coverage: [],
  });
  assert.ok(Math.abs(m.rows[0].start[0] - 123_456_789) <= 256, String(m.rows[0].start[0]));
});

test("rowTitle names the node only when asked, and falls back to the executable", () => {
  assert.equal(rowTitle({ node: "n1", exe: "/bin/x" }, 0, 1, true), "n1 · /bin/x · device 0 · stream 1");
  assert.equal(rowTitle({ node: "n1", comm: "t", pid: "4" }, 2, 3, false), "t (pid 4) · device 2 · stream 3");
  assert.equal(rowTitle({}, 0, 0, false), "process · device 0 · stream 0");
  const twoNodes = buildTrace({ ...trace, streams: [trace.streams[0], { ...trace.streams[2], labels: { ...loader, node: "n2" } }] });
  assert.deepEqual(twoNodes.rows.map((r) => r.title), ["n1 · train (pid 10) · device 0 · stream 7", "n2 · loader (pid 9) · device 1 · stream 2"]);
});

test("activityAt: the activity under t, else the nearest within the slack", () => {
  const row = buildTrace(trace).rows[1]; // [5e5, 6e5) and [1e6, 1.2e6)
  assert.equal(activityAt(row, 5.5e5, 0), 0);
  assert.equal(activityAt(row, 1.1e6, 0), 1);
  assert.equal(activityAt(row, 8e5, 0), -1);
  assert.equal(activityAt(row, 7e5, 3e5), 0);
  assert.equal(activityAt(row, 9.5e5, 1e5), 1);
  assert.equal(activityAt(row, 2e6, 1e5), -1);
  assert.equal(activityAt(buildTrace(trace).rows[2], 0, 1e9), -1);
});

test("busyAlpha: a run of bars is as opaque as its kernels cover it, never invisible", () => {
  assert.equal(busyAlpha(1), 1);
  assert.equal(busyAlpha(2), 1);
  assert.equal(busyAlpha(0), 0.15);
  // 1% busy against 15% busy: clearly lighter.
  assert.ok(busyAlpha(0.01) < 0.2 && busyAlpha(0.15) > 0.25);
});

// Launch calls: [.., launch_start, launch_duration, launch_tid, launch_api].
const launched = {
  from_ns: FROM,
  to_ns: FROM + 1e7, // 10 ms
  names: ["gemm", "relu"],
  launch_apis: ["", "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cudaGraphLaunch"],
  streams: [
    {
      labels: train,
      device: 0,
      stream: 7,
      busy_ns: 0,
      activities: [
        [FROM + 2e6, 1e6, 0, 0, 5, 0, FROM + 1e6, 2e4, 4242, 1],
        // A graph launch: two kernels under one correlation id.
        [FROM + 6e6, 5e5, 1, 0, 6, 9, FROM + 5e6, 3e4, 4242, 4],
        [FROM + 7e6, 5e5, 1, 0, 6, 9, FROM + 5e6, 3e4, 4242, 4],
        // Launched before recording began: no call known.
        [FROM + 9e6, 1e5, 0, 0, 7, 0, 0, 0, 0, 0],
        // A copy is never linked.
        [FROM + 4e6, 1e5, 0, 1, 8, 0, FROM + 3e6, 1e3, 4242, 1],
      ],
    },
    { labels: loader, device: 0, stream: 3, busy_ns: 0, activities: [[FROM + 3e6, 2e6, 0, 0, 1, 0, FROM + 2.5e6, 1e4, 77, 1]] },
  ],
  coverage: [],
};

test("launch calls become thread rows, one call per correlation id, linked to each kernel", () => {
  const m = buildTrace(launched);
  assert.deepEqual(
    m.threads.map((t) => t.title),
    ["loader (pid 9) · thread 77 · CPU", "train (pid 10) · thread 4242 · CPU"],
  );
  const t = m.threads[1];
  assert.equal(t.n, 2);
  assert.deepEqual([...t.start], [1e6, 5e6]);
  assert.deepEqual([...t.dur], [2e4, 3e4]);
  assert.deepEqual([...t.api].map((a) => m.launchApis[a]), ["cudaLaunchKernel", "cudaGraphLaunch"]);
  assert.deepEqual([...t.kernels], [1, 2]);
  assert.equal(m.links.length, 4, "three of the trainer's kernels and the loader's");
  const train7 = m.rows.findIndex((r) => r.stream === 7);
  const r = m.rows[train7];
  assert.deepEqual([...r.launchThread], [1, -1, 1, 1, -1]); // by start: gemm, copy, relu, relu, unknown
  assert.deepEqual([...r.launchCall], [0, -1, 1, 1, -1]);
  const starts = m.links.map((l) => m.rows[l.row].start[l.activity]);
  assert.deepEqual(starts, [2e6, 3e6, 6e6, 7e6], "links by kernel start");
});

test("a GPU is idle where no traced stream of it runs, and not where its trace is incomplete", () => {
  const m = buildTrace(launched);
  // Device 0 of n1 (both processes): busy 2-3 ms (gemm), 3-5 ms (the
  // loader), 4-4.1 ms (copy), 6-6.5, 7-7.5, 9-9.1 ms.
  const idle = m.rows[0].idle.map((g) => [g.from / 1e6, g.to / 1e6]);
  assert.deepEqual(idle, [[0, 2], [5, 6], [6.5, 7], [7.5, 9], [9.1, 10]]);
  assert.equal(m.rows[1].idle, m.rows[0].idle, "one GPU, one set of gaps");
  const gapped = buildTrace({
    ...launched,
    coverage: [{ labels: { pid: "10", node: "n1" }, second_ns: FROM, recorded: 10, sent: 5, complete_until_ns: FROM + 8e6 }],
  });
  const after = gapped.rows[0].idle.map((g) => [g.from / 1e6, g.to / 1e6]);
  assert.deepEqual(after, [[0, 2], [5, 6], [6.5, 7], [7.5, 8]], "unknown after 8 ms, not idle");
});

test("a trace without launch fields has no thread rows", () => {
  const m = buildTrace(trace);
  assert.equal(m.threads.length, 0);
  assert.equal(m.links.length, 0);
  assert.deepEqual(m.launchApis, []);
});
