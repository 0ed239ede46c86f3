// The threads view (`view=threads`): wall-clock time per thread for the
// range and selector, one row per (node, pid, comm, thread name), busiest
// first: its on-CPU time (the `cpu` samples × their period) and its off-CPU
// time (`off_cpu`, the nanoseconds it was blocked, split by wait_reason) as
// numbers and as one stacked bar; when gpu_wait is stored, a GPU-wait column
// (the time inside CUDA synchronisation calls, `gpu_wait`) and a thin line
// under the bar for its share of the wall time: that time is part of the
// on- or off-CPU time (CUDA spins or sleeps while it waits), so it is never
// added to the bar. A click on the bar's on-CPU part opens the thread's CPU
// flame graph, on an off-CPU part its off-CPU flame graph (of that wait
// reason), on the GPU-wait number or line its gpu_wait flame graph,
// anywhere else on the row the flame graph of the type picker's type; the
// selector is narrowed to the thread either way.
//
// Data: /api/v1/types (is off_cpu stored at all, is gpu_wait; cpu's
// period), and one whole-range step of /api/v1/series per type, grouped by
// the thread's labels (off_cpu also by wait_reason; gpu_wait only when the
// types list it); /api/v1/top only when cpu is stored at several periods,
// for the unit of the answer. The numbers: threads_model.ts.
//
// For the end-to-end test the panel (`.threads-panel`) carries
// data-version (each render), data-rows (rows shown), data-threads (rows
// before the search), data-off-cpu and data-gpu-wait (`shown`, `none` for
// none in the range, `absent` for never stored); each row data-node,
// data-pid, data-comm, data-thread, data-on-ns, data-off-ns, data-wall-ns,
// data-gpu-wait-ns and data-reasons (`futex=123,poll=45`).
import { ApiError, apiGet } from "../api/client";
import type { SeriesJson, TopJson, TypesJson } from "../api/types";
import { el, escapeHtml } from "../base/dom";
import { ViewState } from "../state";
import { formatDuration, formatNanos, isRelative, resolveTime, wholeSeconds } from "../time";
import { emptyMessage, noSamplesHtml } from "./empty";
import {
  THREAD_GROUP_BY,
  ThreadRow,
  cpuNanosPerValue,
  filterRows,
  gpuWaitShare,
  threadRows,
  threadSelector,
  totalsOf,
  unitNanos,
} from "./threads_model";
import { wholeRangeStep } from "./targets_model";
import { typeLabel } from "../units";
import { Shell, View } from "./view";

// Rows drawn at most (the busiest); the rest are counted under the table.
const MAX_ROWS = 500;

const REASON_NAMES: Record<string, string> = {
  futex: "futex (locks, queues)",
  poll: "poll / epoll",
  pipe: "pipe",
  socket: "socket",
  disk_io: "disk I/O",
  sleep: "sleep",
  "": "other wait",
};
const reasonName = (r: string) => REASON_NAMES[r] ?? r;
// A CSS class per reason (style.css colours the known ones; the rest are grey).
const reasonClass = (r: string) => (r in REASON_NAMES ? `r-${r || "other"}` : "r-other");

// Whether a type's data is shown: some in the range, none in it, never stored.
type Presence = "shown" | "none" | "absent";

const GPU_WAIT_MEANING =
  "GPU wait: the time the thread was inside a CUDA synchronisation call (cudaStreamSynchronize, cudaDeviceSynchronize, " +
  "a synchronous copy, tensor.item(), …). CUDA spins or sleeps while it waits, so this time is part of the on- or " +
  "off-CPU time, not added to it.";

export class ThreadsView implements View {
  private head = el("div", "threads-head");
  private note = el("div", "threads-note");
  private panel = el("div", "threads-panel");
  private rows: ThreadRow[] = [];
  private offCpu: Presence = "absent";
  private gpuWait: Presence = "absent";
  private loaded = false;
  private rangeMs = 0;
  private version = 0;
  private state: ViewState | null = null; // the last rendered, for a click's type

  constructor(
    section: HTMLElement,
    private shell: Shell,
  ) {
    section.append(this.note, this.head, this.panel);
    this.panel.addEventListener("click", (e) => this.onClick(e));
  }

  async load(s: ViewState, signal: AbortSignal): Promise<void> {
    const now = Date.now();
    let from = resolveTime(s.from, now) ?? now - 3_600_000;
    let to = resolveTime(s.to, now) ?? now;
    // Both types are kept per second: an absolute range asks for the whole
    // seconds it touches, so on- and off-CPU cover the same time.
    if (!isRelative(s.from) && !isRelative(s.to)) [from, to] = wholeSeconds(from, to);
    const range = { from: isRelative(s.from) ? s.from : String(from), to: isRelative(s.to) ? s.to : String(to) };
    const common = { ...range, selector: s.selector || undefined, step: wholeRangeStep(from, to) };
    const series = (type: string, groupBy: string) =>
      apiGet<SeriesJson>("/api/v1/series", { ...common, type, group_by: groupBy }, signal);
    const typesP = apiGet<TypesJson>("/api/v1/types", {}, signal);
    const hasType = (t: TypesJson, name: string) => t.types.some((x) => x.name === name);
    const [types, cpu, off, gpuWait] = await Promise.all([
      typesP,
      series("cpu", THREAD_GROUP_BY),
      // Split by wait_reason; a range with too many (thread, reason) pairs for one answer (400) without it.
      series("off_cpu", `${THREAD_GROUP_BY},wait_reason`).catch((e) => {
        if (e instanceof ApiError && e.status === 400) return series("off_cpu", THREAD_GROUP_BY);
        throw e;
      }),
      // Asked only of a server that stores it (after the types, beside the others).
      typesP.then((t) => (hasType(t, "gpu_wait") ? series("gpu_wait", THREAD_GROUP_BY) : null)),
    ]);
    let nsPerValue = cpuNanosPerValue(types);
    if (nsPerValue === null) {
      // cpu stored at several periods: the answer's unit depends on the rows in the range.
      const top = await apiGet<TopJson>("/api/v1/top", { ...range, selector: s.selector || undefined, type: "cpu", limit: 1 }, signal);
      nsPerValue = unitNanos(top.unit, top.period_nanos);
    }
    if (signal.aborted) return;
    this.rows = threadRows(cpu, nsPerValue, off, gpuWait);
    this.offCpu = !hasType(types, "off_cpu") ? "absent" : off.series.length === 0 ? "none" : "shown";
    this.gpuWait = gpuWait === null ? "absent" : gpuWait.series.length === 0 ? "none" : "shown";
    this.rangeMs = to - from;
    this.loaded = true;
  }

  async emptyMessage(s: ViewState, signal: AbortSignal): Promise<string> {
    if (!this.loaded || this.rows.length > 0) return "";
    return emptyMessage(noSamplesHtml(s.selector, "Try a longer range (24h)", "."), signal);
  }

  render(s: ViewState): void {
    if (!this.loaded) return;
    this.state = s;
    const shown = filterRows(this.rows, s.search);
    const drawn = shown.slice(0, MAX_ROWS);
    const totals = totalsOf(shown);
    this.renderHead(s, shown.length, totals.onNs, totals.offNs, totals.gpuWaitNs, totals.byReason);
    this.renderNote(s);
    const widest = Math.max(1, ...drawn.map((r) => r.wallNs));
    const pct = (ns: number) => ((100 * ns) / widest).toFixed(3);
    const gpuColumn = this.gpuWait !== "absent";
    const body = drawn
      .map((r) => {
        const reasons = r.offByReason.map(([reason, ns]) => `${reason}=${ns}`).join(",");
        const cpuShare = r.wallNs > 0 ? ` (${((100 * r.onNs) / r.wallNs).toFixed(0)}% of the thread's wall time)` : "";
        const segments =
          (r.onNs > 0
            ? `<span class="seg t-on" data-type="cpu" style="width:${pct(r.onNs)}%" title="${escapeHtml(`on CPU ${formatNanos(r.onNs)}: click for the thread's CPU flame graph`)}"></span>`
            : "") +
          r.offByReason
            .map(
              ([reason, ns]) =>
                `<span class="seg ${reasonClass(reason)}" data-type="off_cpu" data-reason="${escapeHtml(reason)}" style="width:${pct(ns)}%"
                  title="${escapeHtml(`off CPU, ${reasonName(reason)}: ${formatNanos(ns)}; click for the thread's off-CPU flame graph of these waits`)}"></span>`,
            )
            .join("");
        const gpuShare = gpuWaitShare(r);
        const gpuTitle =
          r.gpuWaitNs > 0
            ? `GPU wait ${formatNanos(r.gpuWaitNs)}${gpuShare === null ? "" : gpuShare <= 1 ? ` (${(100 * gpuShare).toFixed(0)}% of the thread's wall time)` : ` (more than the on- and off-CPU time recorded for the thread, as when off-CPU time is not recorded)`}. ${GPU_WAIT_MEANING} Click for the thread's GPU-wait flame graph.`
            : "";
        const gpuCell = gpuColumn
          ? r.gpuWaitNs > 0
            ? `<td class="num gpu-wait" data-type="gpu_wait" title="${escapeHtml(gpuTitle)}">${formatNanos(r.gpuWaitNs)}</td>`
            : `<td class="num gpu-wait muted" title="No GPU wait in this range">–</td>`
          : "";
        // Under the bar, from its start, on the bar's scale: the GPU wait's share of the wall time (at most all of it;
        // where in that time the waits fell is not known).
        const gpuLine =
          r.gpuWaitNs > 0 && r.wallNs > 0
            ? `<div class="gpu-wait-line t-gpu-wait" data-type="gpu_wait" style="width:${pct(Math.min(r.gpuWaitNs, r.wallNs))}%" title="${escapeHtml(gpuTitle)}"></div>`
            : "";
        return `<tr data-key="${escapeHtml(r.key)}" data-node="${escapeHtml(r.node)}" data-pid="${escapeHtml(r.pid)}" data-comm="${escapeHtml(r.comm)}"
            data-thread="${escapeHtml(r.thread)}" data-on-ns="${r.onNs}" data-off-ns="${r.offNs}" data-wall-ns="${r.wallNs}" data-gpu-wait-ns="${r.gpuWaitNs}" data-reasons="${escapeHtml(reasons)}">
          <td class="fn thread-name">${escapeHtml(r.thread || "(no thread name)")}</td>
          <td class="thread-proc"><span class="fn">${escapeHtml(r.comm)}</span> <span class="muted small">pid ${escapeHtml(r.pid)}${r.node ? ` · ${escapeHtml(r.node)}` : ""}</span></td>
          <td class="num" data-type="cpu" title="${escapeHtml(`CPU samples × their period${cpuShare}`)}">${r.onNs > 0 ? formatNanos(r.onNs) : "–"}</td>
          <td class="num" data-type="off_cpu">${r.offNs > 0 ? formatNanos(r.offNs) : this.offCpu === "shown" ? "0" : "–"}</td>
          <td class="num wall">${formatNanos(r.wallNs)}</td>${gpuCell}
          <td class="thread-bar"><div class="bar">${segments}</div>${gpuLine}</td></tr>`;
      })
      .join("");
    const more = shown.length > drawn.length ? `<p class="muted small">${(shown.length - drawn.length).toLocaleString("en-US")} more threads with less time are not listed; the search box narrows the list.</p>` : "";
    this.panel.innerHTML = shown.length
      ? `<table class="top threads">
          <thead><tr><th>Thread</th><th>Process</th><th class="num">on-CPU</th><th class="num">off-CPU</th><th class="num">wall ▾</th>${
            gpuColumn ? `<th class="num" title="${escapeHtml(GPU_WAIT_MEANING)}">GPU wait</th>` : ""
          }<th class="thread-bar">on-CPU / off-CPU${gpuColumn ? " (GPU wait under it)" : ""}</th></tr></thead>
          <tbody>${body}</tbody></table>${more}`
      : this.rows.length
        ? `<div class="empty">No thread matches “${escapeHtml(s.search)}”.</div>`
        : "";
    this.panel.dataset.version = String(++this.version);
    this.panel.dataset.rows = String(drawn.length);
    this.panel.dataset.threads = String(this.rows.length);
    this.panel.dataset.offCpu = this.offCpu;
    this.panel.dataset.gpuWait = this.gpuWait;
  }

  private renderHead(s: ViewState, threads: number, onNs: number, offNs: number, gpuWaitNs: number, byReason: [string, number][]): void {
    const swatch = (cls: string, label: string, title = "") =>
      `<span class="legend-item"${title ? ` title="${escapeHtml(title)}"` : ""}><span class="thread-sw ${cls}"></span>${escapeHtml(label)}</span>`;
    const legend =
      swatch("t-on", "on CPU") +
      (this.offCpu === "shown" ? byReason.map(([r]) => swatch(reasonClass(r), `off CPU: ${reasonName(r)}`)).join("") : "") +
      (gpuWaitNs > 0 ? swatch("t-gpu-wait", "GPU wait (the line under a bar: part of its time)", GPU_WAIT_MEANING) : "");
    const gpu =
      gpuWaitNs > 0
        ? ` Of that time, GPU wait <b class="total-gpu-wait" title="${escapeHtml(GPU_WAIT_MEANING)}">${formatNanos(gpuWaitNs)}</b>
            <span class="muted">(inside CUDA synchronisation calls)</span>.`
        : "";
    const reasons = byReason.map(([r, ns]) => `${escapeHtml(reasonName(r))} ${formatNanos(ns)}`).join(", ");
    this.head.innerHTML = `<p><b>${threads.toLocaleString("en-US")} thread${threads === 1 ? "" : "s"}</b> in ${escapeHtml(formatDuration(this.rangeMs))}:
        on CPU <b class="total-on">${formatNanos(onNs)}</b>${
          this.offCpu === "shown" ? `, off CPU <b class="total-off">${formatNanos(offNs)}</b>${reasons ? ` <span class="muted">(${reasons})</span>` : ""}` : ""
        }.${gpu}</p>
      <p class="muted small">Wall time here is on-CPU time (CPU samples × their period) plus off-CPU time (blocked: locks, I/O, sleeps); time
        runnable but waiting for a CPU is in neither.${
          this.gpuWait !== "absent"
            ? " GPU wait (time inside CUDA synchronisation calls) is part of the on- or off-CPU time, as CUDA spins or sleeps while it waits: the thin line under a bar shows its share, it is not added to the bar."
            : ""
        } Threads of one process with one name are one row. Click a bar's part${this.gpuWait !== "absent" ? " or a GPU-wait number" : ""} for the
        thread's flame graph of that time, anywhere else on the row for its ${escapeHtml(typeLabel(s.type))} flame graph.</p>
      <div class="threads-legend">${legend}</div>`;
  }

  private renderNote(s: ViewState): void {
    this.note.innerHTML =
      this.offCpu === "absent"
        ? `<b>No off-CPU data:</b> start the agent with <code>--off-cpu</code> (<code>warpscope-agent run --off-cpu …</code>) to
            record where threads block (locks, I/O, sleeps). No agent has sent any yet, so the bars show on-CPU time only.`
        : this.offCpu === "none"
          ? `<b>No off-CPU time in this range${s.selector ? " for this selector" : ""}:</b> the bars show on-CPU time only. Agents
              record it only when started with <code>--off-cpu</code>.`
          : "";
    this.note.hidden = this.offCpu === "shown";
  }

  searchInfo(s: ViewState): string {
    if (!s.search.trim() || !this.loaded) return "";
    return `${filterRows(this.rows, s.search).length} of ${this.rows.length} threads`;
  }

  release(): void {}

  // A row or a bar's part: that thread's flame graph, of the part's type (and wait reason), else the picker's type.
  private onClick(e: MouseEvent): void {
    const target = e.target as HTMLElement;
    const tr = target.closest<HTMLElement>("tr[data-key]");
    if (!tr) return;
    const part = target.closest<HTMLElement>("[data-type]");
    const type = part?.dataset.type ?? this.state?.type ?? "cpu";
    const extra: Record<string, string> = part?.dataset.reason !== undefined ? { wait_reason: part.dataset.reason } : {};
    const row = { node: tr.dataset.node!, pid: tr.dataset.pid!, comm: tr.dataset.comm!, thread: tr.dataset.thread! };
    this.shell.update({ view: "flame", type, selector: threadSelector(row, extra), focus: "", ffocus: "", hide: "", bin: "", group: "" }, true);
  }
}
