// The GPU kernels view (`view=kernels`): what ran on the GPUs in the range,
// from the CUDA activity trace (libwarpscope_cuda.so through the agent):
// the kernel table for any range, and for ranges up to 10 s the per-stream
// timeline with its Chrome/Perfetto export and, under it on the same time
// axis, the CPU flame chart lanes of the traced processes' threads
// (/api/v1/flamechart; samples are kept per second, so each box spans its
// second). The range is resolved to unix ms once per load, so the table,
// the timeline, the lanes and the export link cover the same [from, to).
//
// State: `kernel` (the selected kernel: highlighted in the timeline),
// `ksort` (the table's column), the search box (filters the table,
// highlights in the timeline). For the end-to-end test the panel
// (`.kernels-panel`) carries data-version (each render), data-kernels (the
// answer's rows) and data-trace ("shown", "too-long", "error" or "none");
// the CPU lanes (`.kernels-cpu`) data-lanes (threads drawn).
import { Params, apiBlob, apiGet, apiUrl, saveBlob } from "../api/client";
import type { FlameChartJson, KernelsJson, MetricJson, TraceJson } from "../api/types";
import { buildChart } from "../flame/chartmodel";
import { FlameChart } from "../flame/flamechart";
import { nameMatcher } from "../flame/analysis";
import { el, errorText, escapeHtml } from "../base/dom";
import { MAX_TRACE_MS } from "../gpu/kernel_api";
import { StreamTimeline } from "../gpu/stream_timeline";
import { TraceModel, buildTrace } from "../gpu/trace_model";
import { ViewState } from "../state";
import { formatNanos, formatTime, resolveTime } from "../time";
import { KernelSortKey, describeKernel, renderKernelTable } from "./kernel_table";
import { renderKernelSource } from "./kernel_source";
import type { KernelSourceJson } from "../api/types";
import { Shell, View, openSandwich } from "./view";

// The busiest threads shown under the stream timeline.
const CPU_LANES = 16;

interface Loaded {
  fromMs: number;
  toMs: number;
  params: Params;
  kernels: KernelsJson;
  trace: TraceModel | null; // null: range over 10 s, or the trace failed
  traceError: string;
  cpu: FlameChartJson | null; // the traced processes' CPU lanes; null: none asked or it failed
  // cuda_profiling_paused_seconds by process: when a process's library stood
  // aside for another CUPTI client (torch.profiler, Nsight); null: none, or
  // the answer failed (the view stays).
  paused: MetricJson | null;
}

export class KernelsView implements View {
  readonly root = el("div", "kernels-panel");
  private summary = el("div", "kernels-summary");
  private tableEl = el("div", "table-wrap kernels-table");
  private sourceEl = el("div", "kernel-source");
  private traceHead = el("div", "trace-head");
  private exportLink = el("a", "export-trace", "⤓ Export trace (Perfetto/Chrome JSON)");
  private timeline: StreamTimeline;
  private cpuHead = el("div", "cpu-head muted small");
  private cpuPanel = el("div", "flamechart-panel kernels-cpu");
  private cpuChart: FlameChart;
  private loaded: Loaded | null = null;
  private version = 0;

  constructor(
    section: HTMLElement,
    private shell: Shell,
  ) {
    this.timeline = new StreamTimeline({
      onSelectRange: (from, to) => shell.update({ from: String(from), to: String(to), live: false, kernel: "" }, true),
      onPick: (name) => this.select(name),
      describe: (name) => describeKernel(this.loaded?.kernels ?? null, name),
    });
    this.exportLink.title = "every kernel, memcpy and memset of this range, for ui.perfetto.dev or chrome://tracing";
    this.exportLink.addEventListener("click", (e) => {
      e.preventDefault();
      void this.exportTrace();
    });
    this.cpuChart = new FlameChart(this.cpuPanel, {
      onSelectRange: (from, to) => shell.update({ from: String(from), to: String(to), live: false, kernel: "" }, true),
      onContext: openSandwich(shell),
    });
    this.root.append(this.summary, this.tableEl, this.sourceEl, this.traceHead, this.timeline.panel, this.cpuHead, this.cpuPanel);
    section.append(this.root);
  }

  // The timeline above shows GPU time over time.
  timelineType(): string {
    return "gpu_time";
  }

  // A kernel marked in the timeline (a row or a bar clicked; "" clears): render only.
  private select(name: string): void {
    this.shell.update({ kernel: name }, false, false);
  }

  escape(s: ViewState): void {
    if (s.kernel) this.select("");
  }

  release(): void {}

  async load(s: ViewState, signal: AbortSignal): Promise<void> {
    const now = Date.now();
    const toMs = resolveTime(s.to, now) ?? now;
    const fromMs = resolveTime(s.from, now) ?? toMs - 3600e3;
    const params: Params = { from: fromMs, to: toMs, selector: s.selector || undefined };
    if (this.loaded?.fromMs !== fromMs || this.loaded?.toMs !== toMs || this.loaded?.params.selector !== params.selector) {
      renderKernelSource(this.sourceEl, null);  // of another range
    }
    const withTrace = toMs - fromMs <= MAX_TRACE_MS;
    // The table is the view; a trace that fails (a server's other limit)
    // leaves the table and says why where the timeline would be.
    const trace = withTrace
      ? apiGet<TraceJson>("/api/v1/gpu/trace", params, signal).catch(errorText)
      : Promise.resolve(null);
    const paused = apiGet<MetricJson>(
      "/api/v1/metrics",
      { name: "cuda_profiling_paused_seconds", ...params, group_by: "pid,comm", max_points: 2000 },
      signal,
    ).catch(() => null);
    let kernels: KernelsJson;
    try {
      kernels = await apiGet<KernelsJson>("/api/v1/gpu/kernels", params, signal);
    } catch (e) {
      if (!signal.aborted) this.clear();
      throw e;
    }
    const t = await trace;
    if (signal.aborted) return;
    const model = t && typeof t !== "string" ? buildTrace(t) : null;
    const cpu = model ? await this.cpuLanes(model, fromMs, toMs, signal) : null;
    if (signal.aborted) return;
    const p = await paused;
    if (signal.aborted) return;
    const pausedSeries = p && p.series.some((x) => x.points.length > 0) ? p : null;
    this.loaded = { fromMs, toMs, params, kernels, trace: model, traceError: typeof t === "string" ? t : "", cpu, paused: pausedSeries };
    this.timeline.setData(model);
    this.cpuChart.setData(cpu ? buildChart(cpu) : null, s.color);
  }

  // The CPU flame chart lanes of the processes in the trace (their node and
  // pid labels), over the same range; null when there are none or the
  // answer fails (the timeline stays).
  private async cpuLanes(t: TraceModel, fromMs: number, toMs: number, signal: AbortSignal): Promise<FlameChartJson | null> {
    const pids = [...new Set(t.rows.map((r) => r.labels.pid).filter((p): p is string => !!p))];
    const nodes = [...new Set(t.rows.map((r) => r.labels.node).filter((n): n is string => !!n))];
    if (pids.length === 0) return null;
    // pids are digits (safe in a regex); one node is matched exactly, several not at all.
    const node = nodes.length === 1 ? `, node="${nodes[0].replace(/["\\]/g, "\\$&")}"` : "";
    const selector = `{pid=~"${pids.join("|")}"${node}}`;
    const params: Params = { type: "cpu", from: fromMs, to: toMs, selector, group_by: "pid,comm,thread", max_lanes: CPU_LANES };
    try {
      return await apiGet<FlameChartJson>("/api/v1/flamechart", params, signal);
    } catch {
      return null;
    }
  }

  // The kernel's instructions, lines and stalls under the table (same range
  // and selector).
  private async openSource(kernel: string): Promise<void> {
    const l = this.loaded;
    if (!l) return;
    this.sourceEl.dataset.loading = "1";
    try {
      const json = await apiGet<KernelSourceJson>("/api/v1/gpu/kernel_source", { ...l.params, kernel });
      renderKernelSource(this.sourceEl, json);
    } catch (e) {
      renderKernelSource(this.sourceEl, null, `No PC samples of this kernel in the range (${errorText(e)}); agents sample inside kernels with --gpu-pc-sampling on.`);
    }
    delete this.sourceEl.dataset.loading;
    this.sourceEl.scrollIntoView({ block: "nearest" });
  }

  // Nothing stale under an error message.
  private clear(): void {
    this.sourceEl.replaceChildren();
    this.loaded = null;
    this.timeline.setData(null);
    this.summary.replaceChildren();
    this.tableEl.replaceChildren();
    this.traceHead.replaceChildren();
    this.timeline.panel.hidden = true;
    this.cpuChart.setData(null, "binary");
    this.cpuHead.hidden = this.cpuPanel.hidden = true;
  }

  render(s: ViewState): void {
    const t0 = performance.now();
    const l = this.loaded;
    this.version++;
    const ds = this.root.dataset;
    ds.version = String(this.version);
    ds.kernels = String(l ? l.kernels.kernels.length : 0);
    ds.trace = !l ? "none" : l.trace ? "shown" : l.traceError ? "error" : "too-long";
    ds.paused = String(l?.paused?.series.filter((x) => x.points.length > 0).length ?? 0);
    if (!l) return;
    const k = l.kernels;
    this.summary.innerHTML = this.summaryHtml(k, s.selector) + pausedHtml(l.paused);
    this.tableEl.hidden = k.kernels.length === 0;
    renderKernelTable(this.tableEl, k, s.ksort as KernelSortKey, s.search, s.kernel, {
      onSort: (key) => this.shell.update({ ksort: key }, false, false),
      onSelect: (name) => this.select(name),
      // A kernel's launch stacks: the gpu_time flame graph, searching for it.
      onFlame: (name) => this.shell.update({ view: "flame", type: "gpu_time", search: name, focus: "" }, true),
      onSource: (row) => void this.openSource(row.system_name || row.name),
    });
    this.exportLink.href = apiUrl("/api/v1/gpu/trace.json", l.params);
    this.exportLink.setAttribute("download", `warpscope-gpu-trace-${l.fromMs}.json`);
    const t = l.trace;
    if (l.traceError) {
      this.traceHead.innerHTML = `<p class="message error">The per-stream trace could not be loaded: ${escapeHtml(l.traceError)}</p>`;
      this.timeline.panel.hidden = true;
    } else if (!t) {
      this.traceHead.innerHTML = `<p class="trace-hint muted">Select ≤ 10 s (drag across the timeline above) to see the per-stream timeline
        and export the trace.</p>`;
      this.timeline.panel.hidden = true;
    } else {
      this.traceHead.replaceChildren();
      const head = el("div", "trace-controls");
      head.innerHTML = this.traceInfoHtml(t, l);
      head.append(this.exportLink);
      this.traceHead.append(head);
      this.timeline.panel.hidden = t.rows.length === 0;
      const query = s.kernel ? null : nameMatcher(s.search);
      this.timeline.setMatch(s.kernel ? (n) => n === s.kernel : query);
      this.timeline.draw();
    }
    this.renderCpu(s, l);
    this.shell.measurements.perf.kernelsDrawMs = performance.now() - t0;
  }

  private renderCpu(s: ViewState, l: Loaded): void {
    const lanes = l.cpu?.lanes.filter((x) => x.total > 0).length ?? 0;
    this.cpuPanel.dataset.lanes = String(lanes);
    const shown = l.trace !== null && l.trace.rows.length > 0;
    this.cpuHead.hidden = this.cpuPanel.hidden = !shown;
    if (!shown) return;
    this.cpuHead.textContent =
      lanes > 0
        ? `CPU samples of these processes' threads, on the same time axis (kept per second: each box spans its second). ` +
          `Right-click a box for its sandwich.`
        : "No CPU samples of these processes in this range.";
    this.cpuChart.setColorMode(s.color);
    this.cpuChart.setSearch(s.search);
    this.cpuChart.draw();
  }

  private summaryHtml(k: KernelsJson, selector: string): string {
    if (k.kernels.length === 0) {
      return `<div class="empty"><b>No GPU kernels in this range${selector ? " for this selector" : ""}.</b> The agent records the
        kernels, copies and memsets of CUDA processes started with libwarpscope_cuda.so (<code>CUDA_INJECTION64_PATH</code>;
        see docs/design/cuda_injection.md). Try a longer range${selector ? " or clear the selector" : ""}.</div>`;
    }
    const thinned = k.sent < k.recorded;
    return `<p>GPU time <b>${formatNanos(k.total_ns)}</b> in <b>${k.activities.toLocaleString("en-US")}</b> kernels, copies and memsets
      of <b>${escapeHtml(formatTime(Math.floor(k.from_ns / 1e6)))} – ${escapeHtml(formatTime(Math.floor(k.to_ns / 1e6)))}</b>.
      ${
        thinned
          ? `<span class="thinned">Based on ${k.sent.toLocaleString("en-US")} of ${k.recorded.toLocaleString("en-US")} kernels:</span>
             the agent's trace budget thinned the trace (the gpu_time flame graph still counts every kernel).`
          : ""
      }
      Click a row to mark its kernel in the timeline; <b>flame graph</b> shows where it was launched from.</p>`;
  }

  private traceInfoHtml(t: TraceModel, l: Loaded): string {
    const threads = t.threads.length
      ? `, ${t.threads.length} launching thread${t.threads.length === 1 ? "" : "s"} (${t.links.length.toLocaleString("en-US")} kernels with their launch call)`
      : "";
    const rows = `${t.rows.length} stream${t.rows.length === 1 ? "" : "s"}, ${t.activities.toLocaleString("en-US")} activities${threads}`;
    const launches = t.threads.length
      ? ` <i class="sw launch"></i>launch call (CPU) <i class="sw link"></i>launch → kernel`
      : "";
    const legend = `<span class="legend"><i class="sw kernel"></i>kernel <i class="sw memcpy"></i>memcpy <i class="sw memset"></i>memset
      <i class="sw idle"></i>GPU idle <i class="sw incomplete"></i>not traced${launches}</span>`;
    const incomplete =
      t.incompleteSeconds > 0
        ? `<span class="trace-incomplete">Trace incomplete in ${t.incompleteSeconds} process-second${t.incompleteSeconds === 1 ? "" : "s"}
           (${t.sent.toLocaleString("en-US")} of ${t.recorded.toLocaleString("en-US")} activities kept): hatched, not idle.</span>`
        : "";
    const span = formatNanos((l.toMs - l.fromMs) * 1e6);
    return `<span class="muted small">Per stream over ${span}: ${rows}; % busy on the left; drag to zoom, click a kernel to mark it.</span>
      ${legend} ${incomplete}`;
  }

  private async exportTrace(): Promise<void> {
    const l = this.loaded;
    if (!l) return;
    try {
      saveBlob(await apiBlob("/api/v1/gpu/trace.json", l.params), `warpscope-gpu-trace-${l.fromMs}.json`);
    } catch (e) {
      this.traceHead.querySelector(".trace-error")?.remove();
      this.traceHead.append(el("p", "trace-error message error", `<b>Export failed:</b> ${escapeHtml(errorText(e))}`));
    }
  }
}

// The processes whose library stood aside for another CUPTI client in the
// range, and when: their GPU work in those seconds is missing from the
// numbers above, which an idle-looking GPU would otherwise hide.
export function pausedHtml(paused: MetricJson | null): string {
  if (!paused) return "";
  const items = paused.series
    .filter((x) => x.points.length > 0)
    .map((x) => {
      const first = x.points[0][0];
      const last = x.points[x.points.length - 1][0] + paused.step_ms;
      const who = `${escapeHtml(x.labels.comm || "?")} (pid ${escapeHtml(x.labels.pid || "?")})`;
      return `<li><b>${who}</b>: ${escapeHtml(formatTime(first))} – ${escapeHtml(formatTime(last))}</li>`;
    });
  if (items.length === 0) return "";
  return `<div class="paused message"><p>GPU time was <b>paused</b> for these processes: another CUPTI client in the
    process (torch.profiler, Nsight) needed CUPTI, and warpscope stepped aside until it was done. Their GPU work in
    those seconds is not in these numbers.</p><ul>${items.join("")}</ul></div>`;
}
