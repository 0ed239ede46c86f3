// The GPUs view: NVML metrics of one node's GPUs (/api/v1/metrics), as
// uPlot charts stacked under the main timeline and sharing its cursor and x
// range. A drag across any chart opens the CPU flame graph of that range on
// that node (and of the focused process, if one is). "Energy & cost" opens
// the energy view of the node over the range (by GPU, or by process when a
// process is focused). The node's insights
// (/api/v1/insights over the range, the node's selector) are subtle bands
// over every chart: hovering one names it, a click opens its card.
//
// State: `gpunode` (empty: the first node with GPUs), `gpu` (empty: every
// GPU of the node, one line each), `gpupid` (the focused process).
// For the end-to-end test the panel (`.gpu-panel`) carries data-version
// (each render), data-charts and data-series (plotted data series, all
// charts) and data-insight-marks (insight bands per chart); each
// `.gpu-chart` has data-metric (its first metric), data-metrics and
// data-points (points plotted); each band is a `.insight-mark` (data-key).
// With three or more GPUs and none picked, a tile per GPU comes first
// (`.gpu-multiples`, a `.gpu-tile` per GPU with data-gpu; gpu/multiples.ts):
// a click picks that GPU.
// Which charts and lines: gpu/chart_specs.ts; drawing them: gpu/charts.ts.
import { apiGet } from "../api/client";
import type { GpuInfo, InsightsJson, MetricJson, MetricNamesJson, TargetsJson } from "../api/types";
import { el, escapeHtml } from "../base/dom";
import { byGpuIndex, gpuChartSpecs } from "../gpu/chart_specs";
import { DrawnChart, drawChart, readTheme } from "../gpu/charts";
import { GPU_METRICS, formatValue, scaleFor, selectorOf } from "../gpu/data";
import { MULTIPLES_FROM, gpuTiles, sparkPoints } from "../gpu/multiples";
import { InsightMarks } from "../insight_marks";
import { ViewState } from "../state";
import { formatDuration, resolveTime } from "../time";
import { marksOf, onGpu } from "./insights_model";
import { Shell, View } from "./view";

const MAX_POINTS = 300;

interface GpuNode {
  node: string;
  gpus: GpuInfo[];
}

interface Loaded {
  nodes: GpuNode[]; // the nodes with GPUs in the range
  node: string; // shown ("" when there is none)
  gpu: string; // "" = all of the node's GPUs
  fromMs: number;
  toMs: number;
  stepMs: number;
  metrics: Map<string, MetricJson>;
  insights: InsightsJson | null; // the node's, over the range (null: none asked, or the request failed)
}

export class GpuView implements View {
  readonly root = el("div", "gpu-panel");
  private controls = el("div", "gpu-controls");
  private nodeSelect = el("select", "gpu-node");
  private gpuSelect = el("select", "gpu-select");
  private info = el("span", "gpu-info muted small");
  private focusChip = el("span", "gpu-focus");
  private energyLink = el("button", "link gpu-energy-link", "Energy &amp; cost →");
  private hint = el("div", "gpu-hint muted small");
  private multiples = el("div", "gpu-multiples");
  private chartsEl = el("div", "gpu-charts");
  private drawn: DrawnChart[] = [];
  private loaded: Loaded | null = null;
  private loads = 0;
  private themeVersion = 0;
  private renderKey = "";
  private version = 0;
  private state: ViewState | null = null;
  private marks: InsightMarks;

  constructor(
    section: HTMLElement,
    private shell: Shell,
  ) {
    this.marks = new InsightMarks((key) => shell.openInsight(key));
    const nodeLabel = el("label", "", "Node ");
    nodeLabel.append(this.nodeSelect);
    const gpuLabel = el("label", "", "GPU ");
    gpuLabel.append(this.gpuSelect);
    this.energyLink.title = "the joules, CO₂ and cost of this node's GPUs and CPU over this range";
    this.energyLink.addEventListener("click", () => {
      const node = this.loaded?.node;
      if (!node) return;
      const pid = this.state?.gpupid ?? "";
      this.shell.update({ view: "energy", selector: selectorOf({ node }), egroup: pid ? "process" : "gpu", search: "" }, true);
    });
    this.controls.append(nodeLabel, gpuLabel, this.info, this.focusChip, this.energyLink);
    this.root.append(this.controls, this.hint, this.multiples, this.chartsEl);
    this.multiples.addEventListener("click", (e) => {
      const tile = (e.target as HTMLElement).closest<HTMLElement>(".gpu-tile");
      if (tile?.dataset.gpu !== undefined) this.pick({ gpu: tile.dataset.gpu });
    });
    this.root.dataset.version = "0";
    this.root.dataset.charts = "0";
    this.root.dataset.series = "0";
    section.append(this.root);
    this.nodeSelect.addEventListener("change", () => this.pick({ gpunode: this.nodeSelect.value, gpu: "", gpupid: "" }));
    this.gpuSelect.addEventListener("change", () => this.pick({ gpu: this.gpuSelect.value }));
    this.focusChip.addEventListener("click", (e) => {
      if ((e.target as HTMLElement).closest("button")) this.focusPid("");
    });
    new ResizeObserver(() => {
      const width = this.width();
      for (const d of this.drawn) if (d.plot.width !== width) d.plot.setSize({ width, height: d.plot.height });
    }).observe(this.chartsEl);
    matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
      this.themeVersion++;
      if (this.state && this.drawn.length) this.render(this.state);
    });
  }

  // A node or GPU picked: fetch again.
  private pick(patch: Partial<ViewState>): void {
    this.shell.update(patch, true);
  }

  // A process's legend item (or its unfocus button): render only.
  private focusPid(pid: string): void {
    this.shell.update({ gpupid: pid }, false, false);
  }

  // A drag across a chart: what the node's CPUs (the focused process's) did then.
  private selectRange(fromMs: number, toMs: number, selector: string): void {
    this.shell.measurements.selectionStarted();
    this.shell.update({ view: "flame", from: String(fromMs), to: String(toMs), selector, live: false, focus: "" }, true);
  }

  escape(s: ViewState): void {
    if (s.gpupid) this.focusPid("");
  }

  private width(): number {
    return Math.max(200, this.chartsEl.clientWidth || this.root.clientWidth || 800);
  }

  // Targets (the nodes with GPUs) and the metric names first, then every
  // metric of the node at once; an aborted refresh stops here.
  async load(s: ViewState, signal: AbortSignal): Promise<void> {
    const now = Date.now();
    const toMs = resolveTime(s.to, now) ?? now;
    const fromMs = Math.min(resolveTime(s.from, now) ?? toMs - 3600e3, toMs - 1);
    const range = { from: String(fromMs), to: String(toMs) };
    const [targets, names] = await Promise.all([
      apiGet<TargetsJson>("/api/v1/targets", range, signal),
      apiGet<MetricNamesJson>("/api/v1/metric_names", range, signal).catch((e) => {
        if (signal.aborted) throw e;
        return null; // an older server: ask for every metric
      }),
    ]);
    if (signal.aborted) return;
    const nodes: GpuNode[] = targets.nodes
      .filter((n) => (n.gpus?.length ?? 0) > 0)
      .map((n) => ({ node: n.node, gpus: [...n.gpus!].sort((a, b) => byGpuIndex(a.gpu, b.gpu)) }));
    const node = s.gpunode || nodes[0]?.node || "";
    const loaded: Loaded = {
      nodes,
      node,
      gpu: s.gpu,
      fromMs,
      toMs,
      stepMs: Math.max(1, (toMs - fromMs) / MAX_POINTS),
      metrics: new Map(),
      insights: null,
    };
    if (node) {
      // Beside the metrics; without an answer the charts have no bands.
      const insights = this.shell.insights.get({ from: s.from, to: s.to, selector: selectorOf({ node }) }).catch(() => null);
      const known = names ? new Set(names.metrics.map((m) => m.name)) : null;
      const wanted = GPU_METRICS.filter((m) => (known ? known.has(m.name) : true));
      const selector = selectorOf({ node, gpu: s.gpu });
      const errors: unknown[] = [];
      const answers = await Promise.all(
        wanted.map((m) =>
          apiGet<MetricJson>(
            "/api/v1/metrics",
            { name: m.name, ...range, selector, group_by: m.groupBy, max_points: MAX_POINTS },
            signal,
          ).catch((e) => {
            if (signal.aborted) throw e;
            errors.push(e);
            return null;
          }),
        ),
      );
      loaded.insights = await insights;
      if (signal.aborted) return;
      if (wanted.length > 0 && errors.length === wanted.length) throw errors[0];
      for (const a of answers) {
        if (!a) continue;
        loaded.metrics.set(a.name, a);
        if (a.step_ms > 0) loaded.stepMs = a.step_ms;
      }
    }
    this.loaded = loaded;
    this.loads++;
  }

  // Destroys the charts (another view is shown: nothing should follow the
  // timeline's cursor); the next render draws them again.
  release(): void {
    for (const d of this.drawn) d.plot.destroy();
    this.drawn = [];
    this.chartsEl.replaceChildren();
    this.renderKey = "";
  }

  render(s: ViewState): void {
    this.state = s;
    const key = `${this.loads}|${s.gpupid}|${this.themeVersion}`;
    if (!this.loaded || key === this.renderKey) return;
    this.renderKey = key;
    const t0 = performance.now();
    const d = this.loaded;
    this.release();
    this.renderKey = key;
    this.renderControls(d, s);
    this.renderMultiples(d);
    let series = 0;
    if (!d.node) {
      this.hint.hidden = true;
      this.controls.hidden = true;
      this.chartsEl.innerHTML = `<div class="empty gpu-empty"><b>No GPU metrics in this range.</b>
        <p><code>warpscope-agent run</code> collects them through NVML on machines with an NVIDIA driver, next to the CPU
        profiles; pass <code>--nvml-library PATH</code> when <code>libnvidia-ml.so.1</code> is not on the library path.
        Nodes show up here a few seconds after their agent starts.
        See <code>docs/getting-started.md</code> (GPU metrics).</p></div>`;
    } else {
      this.controls.hidden = false;
      const theme = readTheme();
      const specs = gpuChartSpecs({ metrics: d.metrics, gpus: this.gpusOf(d), gpu: d.gpu }, s.gpupid, theme);
      const node = JSON.stringify(d.node);
      this.hint.hidden = false;
      this.hint.innerHTML = `Drag across a dip to see what the CPUs were doing then: the selected range opens in the CPU flame graph
        of <code>${escapeHtml(s.gpupid ? `{node=${node}, pid=${JSON.stringify(s.gpupid)}}` : `{node=${node}}`)}</code>.
        ${s.gpupid ? "" : "Click a process in a legend to focus it."} Steps of ${escapeHtml(formatDuration(d.stepMs))}.`;
      const width = this.width();
      const marks = d.insights ? marksOf(d.insights.insights, onGpu(d.node, d.gpu)) : [];
      this.marks.set(marks);
      if (marks.length) {
        this.hint.innerHTML += ` <span class="insight-hint">Shaded bands mark <b>insights</b>: hover one to name it, click it to open its card.</span>`;
      }
      const ctx = {
        fromMs: d.fromMs,
        toMs: d.toMs,
        stepMs: d.stepMs,
        width,
        theme,
        onSelect: (from: number, to: number) => this.selectRange(from, to, selectorOf({ node: d.node, pid: this.state?.gpupid ?? "" })),
        onFocusPid: (pid: string) => this.focusPid(pid),
        insightMarks: this.marks,
      };
      for (const spec of specs) {
        const chart = drawChart(spec, { ...ctx, labelMarks: this.drawn.length === 0 });
        this.drawn.push(chart);
        this.chartsEl.append(chart.el);
        series += chart.series;
      }
      if (this.drawn.length === 0) {
        this.chartsEl.innerHTML = `<div class="empty gpu-empty"><b>No GPU metrics from ${escapeHtml(d.node)}${
          d.gpu ? ` GPU ${escapeHtml(d.gpu)}` : ""
        } in this range.</b> Try a longer range (24h)${d.nodes.length > 1 ? " or another node" : ""}.</div>`;
      }
    }
    this.version++;
    this.root.dataset.version = String(this.version);
    this.root.dataset.charts = String(this.drawn.length);
    this.root.dataset.series = String(series);
    this.root.dataset.insightMarks = String(this.marks.count);
    this.shell.measurements.perf.gpuDrawMs = performance.now() - t0;
  }

  private renderControls(d: Loaded, s: ViewState): void {
    const nodes = d.nodes.some((n) => n.node === d.node) || !d.node ? d.nodes : [...d.nodes, { node: d.node, gpus: [] }];
    this.nodeSelect.innerHTML = nodes
      .map((n) => `<option value="${escapeHtml(n.node)}">${escapeHtml(n.node || "(no node label)")} (${n.gpus.length} GPU${n.gpus.length === 1 ? "" : "s"})</option>`)
      .join("");
    this.nodeSelect.value = d.node;
    const gpus = this.gpusOf(d);
    const options = [`<option value="">all (${gpus.length})</option>`];
    for (const g of gpus) options.push(`<option value="${escapeHtml(g.gpu)}">GPU ${escapeHtml(g.gpu)} · ${escapeHtml(g.gpu_name || "?")}</option>`);
    if (d.gpu && !gpus.some((g) => g.gpu === d.gpu)) options.push(`<option value="${escapeHtml(d.gpu)}">GPU ${escapeHtml(d.gpu)}</option>`);
    this.gpuSelect.innerHTML = options.join("");
    this.gpuSelect.value = d.gpu;
    const one = d.gpu ? gpus.find((g) => g.gpu === d.gpu) : gpus.length === 1 ? gpus[0] : undefined;
    if (one) {
      this.info.textContent = [one.gpu_name, one.uuid, one.pci_bus_id && `PCI ${one.pci_bus_id}`].filter(Boolean).join(" · ");
    } else {
      const models = new Map<string, number>();
      for (const g of gpus) models.set(g.gpu_name || "?", (models.get(g.gpu_name || "?") ?? 0) + 1);
      this.info.textContent = [...models].map(([name, n]) => `${n} × ${name}`).join(", ");
    }
    this.focusChip.innerHTML = s.gpupid
      ? `focused: <b>${escapeHtml(this.processName(d, s.gpupid))}</b> <button class="link" title="unfocus">✕</button>`
      : "";
  }

  private renderMultiples(d: Loaded): void {
    const gpus = this.gpusOf(d);
    this.multiples.hidden = !d.node || d.gpu !== "" || gpus.length < MULTIPLES_FROM;
    if (this.multiples.hidden) {
      this.multiples.replaceChildren();
      return;
    }
    const number = (v: number | null, unit: string) => (v === null ? "–" : formatValue(v, scaleFor(unit, Math.abs(v))));
    this.multiples.innerHTML = gpuTiles(d.metrics, gpus)
      .map((t) => {
        const memory = t.memoryUsed === null ? "" : ` · ${number(t.memoryUsed, "bytes")}${t.memoryTotal ? ` of ${number(t.memoryTotal, "bytes")}` : ""}`;
        const lagging = t.lagging ? ` <span class="gpu-tile-lag">below the others</span>` : "";
        return `<button class="gpu-tile${t.lagging ? " lagging" : ""}" data-gpu="${escapeHtml(t.gpu)}" title="show GPU ${escapeHtml(t.gpu)} alone">
          <div><b>GPU ${escapeHtml(t.gpu)}</b> <span class="muted">${escapeHtml(t.name)}</span>${lagging}</div>
          <svg class="gpu-tile-spark" viewBox="0 0 120 28" preserveAspectRatio="none"><rect x="0" y="0" width="120" height="28"/>
            <polyline points="${sparkPoints(t.spark, d.fromMs, d.toMs, 120, 28)}"/></svg>
          <div>${number(t.utilization, "percent")} busy · ${number(t.power, "watts")}${memory}</div>
          <div class="muted">${t.process ? `${escapeHtml(t.process)}: ${number(t.processShare, "percent")} of SMs` : "no process seen"}</div>
        </button>`;
      })
      .join("");
  }

  private gpusOf(d: Loaded): GpuInfo[] {
    return d.nodes.find((n) => n.node === d.node)?.gpus ?? [];
  }

  private processName(d: Loaded, pid: string): string {
    for (const name of ["gpu_process_sm_utilization", "gpu_process_memory_used"]) {
      const s = d.metrics.get(name)?.series.find((x) => x.labels.pid === pid);
      if (s?.labels.comm) return `${s.labels.comm} (${pid})`;
    }
    return `pid ${pid}`;
  }
}
