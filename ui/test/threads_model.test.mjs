// views/threads_model.ts: the threads view's rows from /api/v1/series answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { cpuNanosPerValue, filterRows, gpuWaitShare, threadKey, threadRows, threadSelector, totalsOf, unitNanos } from "../src/views/threads_model.ts";

const answer = (series) => ({ from_ms: 0, to_ms: 10_000, step_ms: 10_000, series });
const loader = { node: "n", pid: "7", comm: "train", thread: "data-loader" };
const main = { node: "n", pid: "7", comm: "train", thread: "train" };

test("threadRows: on-CPU from samples × period, off-CPU by wait reason, busiest wall time first", () => {
  const cpu = answer([
    { labels: main, points: [[0, 100]] }, // 100 samples × 10 ms = 1 s
    { labels: loader, points: [[0, 10], [5000, 10]] }, // 200 ms
  ]);
  const off = answer([
    { labels: { ...loader, wait_reason: "futex" }, points: [[0, 1.5e9]] },
    { labels: { ...loader, wait_reason: "" }, points: [[0, 1e8]] },
    { labels: { ...loader, wait_reason: "disk_io" }, points: [[0, 2e8]] },
    { labels: { ...main, wait_reason: "poll" }, points: [[0, 5e7]] },
    // a thread only seen blocked
    { labels: { node: "n", pid: "8", comm: "idle", thread: "idle", wait_reason: "sleep" }, points: [[0, 3e8]] },
  ]);
  const rows = threadRows(cpu, 10_000_000, off);
  assert.deepEqual(rows.map((r) => r.thread), ["data-loader", "train", "idle"]);
  const [l, m, i] = rows;
  assert.equal(l.onNs, 2e8);
  assert.equal(l.offNs, 1.8e9);
  assert.equal(l.wallNs, 2e9);
  assert.deepEqual(l.offByReason, [["futex", 1.5e9], ["disk_io", 2e8], ["", 1e8]]);
  assert.equal(m.onNs, 1e9);
  assert.equal(m.offNs, 5e7);
  assert.equal(i.onNs, 0);
  assert.equal(i.wallNs, 3e8);
  assert.equal(l.key, threadKey(loader));
  const t = totalsOf(rows);
  assert.equal(t.onNs, 1.2e9);
  assert.equal(t.offNs, 2.15e9);
  assert.deepEqual(t.byReason, [["futex", 1.5e9], ["poll", 5e7], ["disk_io", 2e8], ["sleep", 3e8], ["", 1e8]]);
});

test("threadRows without off-CPU data, and off-CPU not split by reason", () => {
  const cpu = answer([{ labels: main, points: [[0, 3]] }]);
  assert.deepEqual(threadRows(cpu, 1, null).map((r) => [r.thread, r.onNs, r.offNs, r.offByReason.length]), [["train", 3, 0, 0]]);
  const off = answer([{ labels: loader, points: [[0, 40]] }]);
  const rows = threadRows(cpu, 1, off);
  assert.deepEqual(rows.map((r) => [r.thread, r.wallNs]), [["data-loader", 40], ["train", 3]]);
  assert.deepEqual(rows[0].offByReason, [["", 40]]);
});

test("threadRows: GPU wait per thread, part of the on- or off-CPU time (not in the wall time), totals and shares", () => {
  const cpu = answer([
    { labels: main, points: [[0, 100]] }, // 1 s
    { labels: loader, points: [[0, 20]] }, // 200 ms
  ]);
  const off = answer([
    { labels: { ...main, wait_reason: "poll" }, points: [[0, 2e8]] },
    { labels: { ...loader, wait_reason: "futex" }, points: [[0, 3e9]] },
  ]);
  // gpu_wait grouped by the thread's labels: the series of two wait APIs of one thread add up.
  const gpu = answer([
    { labels: main, points: [[0, 3e8]] },
    { labels: { ...main }, points: [[5000, 1.8e8]] },
    // a thread seen only waiting on the GPU (no CPU samples, no off-CPU time): kept, last
    { labels: { node: "n", pid: "7", comm: "train", thread: "pin-memory" }, points: [[0, 5e7]] },
  ]);
  const rows = threadRows(cpu, 10_000_000, off, gpu);
  assert.deepEqual(
    rows.map((r) => [r.thread, r.onNs, r.offNs, r.wallNs, r.gpuWaitNs]),
    [
      ["data-loader", 2e8, 3e9, 3.2e9, 0],
      ["train", 1e9, 2e8, 1.2e9, 4.8e8],
      ["pin-memory", 0, 0, 0, 5e7],
    ],
  );
  assert.equal(gpuWaitShare(rows[1]), 0.4);
  assert.equal(gpuWaitShare(rows[0]), 0);
  assert.equal(gpuWaitShare(rows[2]), null);
  // More GPU wait than the recorded wall time (no off-CPU data): a share over 1.
  assert.equal(gpuWaitShare(threadRows(answer([{ labels: main, points: [[0, 10]] }]), 10_000_000, null, gpu)[0]), 4.8);
  const t = totalsOf(rows);
  assert.deepEqual([t.onNs, t.offNs, t.gpuWaitNs], [1.2e9, 3.2e9, 5.3e8]);
  assert.equal(totalsOf(filterRows(rows, "loader")).gpuWaitNs, 0);
  // Without a gpu_wait answer (not stored): every row 0.
  assert.deepEqual(threadRows(cpu, 10_000_000, off).map((r) => r.gpuWaitNs), [0, 0]);
  assert.deepEqual(threadRows(cpu, 10_000_000, off, answer([])).map((r) => r.gpuWaitNs), [0, 0]);
});

test("cpuNanosPerValue: the one cpu type's period, 1 for nanoseconds, null for several periods", () => {
  const t = (...types) => ({ types });
  assert.equal(cpuNanosPerValue(t({ name: "cpu", unit: "samples", period_nanos: 52631578 }, { name: "off_cpu", unit: "nanoseconds", period_nanos: 0 })), 52631578);
  assert.equal(cpuNanosPerValue(t({ name: "cpu", unit: "nanoseconds", period_nanos: 0 })), 1);
  assert.equal(cpuNanosPerValue(t({ name: "cpu", unit: "samples", period_nanos: 52631578 }, { name: "cpu", unit: "samples", period_nanos: 10101010 })), null);
  assert.equal(cpuNanosPerValue(t()), 0);
  assert.equal(unitNanos("samples", 0), 0);
});

test("threadSelector names every grouped label, quoted; filterRows matches thread, process, pid, node", () => {
  assert.equal(threadSelector(loader), '{node="n", pid="7", comm="train", thread="data-loader"}');
  assert.equal(threadSelector({ ...loader, thread: "" }, { wait_reason: "futex" }), '{node="n", pid="7", comm="train", thread="", wait_reason="futex"}');
  assert.equal(threadSelector({ ...loader, comm: 'a"b' }), '{node="n", pid="7", comm="a\\"b", thread="data-loader"}');
  const rows = threadRows(answer([{ labels: main, points: [[0, 1]] }, { labels: loader, points: [[0, 2]] }]), 1, null);
  assert.deepEqual(filterRows(rows, "LOADER").map((r) => r.thread), ["data-loader"]);
  assert.equal(filterRows(rows, "7").length, 2);
  assert.equal(filterRows(rows, " ").length, 2);
  assert.equal(filterRows(rows, "nothing").length, 0);
});
