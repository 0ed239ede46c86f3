// The GPUs view: NVML metrics of one node's GPUs (/api/v1/metrics), as
// uPlot charts stacked under the main timeline and sharing its cursor and x
// range. A drag across any chart opens the CPU flame graph of that range on
// that node (and of the focused process, if one is).
//
// State: `gpunode` (empty: the first node with GPUs), `gpu` (empty: every
// GPU of the node, one line each), `gpupid` (the focused process).
// For the end-to-end test the panel (`.gpu-panel`) carries data-version
// (each render), data-charts and data-series (plotted data series, all
// charts); each `.gpu-chart` has data-metric (its first metric),
// data-metrics and data-points (points plotted).
import { apiGet } from "../api/client";
import type { GpuInfo, MetricJson, MetricNamesJson, MetricSeries, TargetsJson } from "../api/types";
import { el, escapeHtml } from "../base/dom";
import { ChartSpec, DrawnChart, LineChartSpec, LineSpec, Theme, drawChart, readTheme, withAlpha } from "../gpu/charts";
import { GPU_METRICS, meanOf, sameValues, selectorOf } from "../gpu/data";
import { ViewState } from "../state";
import { formatDuration, resolveTime } from "../time";

const MAX_POINTS = 300;
const MAX_PROCESS_LINES = 12;

export interface GpuPanelHandlers {
  onPick: (patch: Partial<ViewState>) => void; // node or GPU picked: fetch again
  onFocusPid: (pid: string) => void; // a process's legend item: redraw only
  onSelectRange: (fromMs: number, toMs: number, selector: string) => void;
}

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
}

const byGpuIndex = (a: string, b: string) => Number(a) - Number(b) || a.localeCompare(b);

export class GpuPanel {
  readonly root = el("div", "gpu-panel");
  private controls = el("div", "gpu-controls");
  private nodeSelect = el("select", "gpu-node");
  private gpuSelect = el("select", "gpu-select");
  private info = el("span", "gpu-info muted small");
  private focusChip = el("span", "gpu-focus");
  private hint = el("div", "gpu-hint muted small");
  private chartsEl = el("div", "gpu-charts");
  private drawn: DrawnChart[] = [];
  private loaded: Loaded | null = null;
  private loads = 0;
  private themeVersion = 0;
  private renderKey = "";
  private version = 0;
  private state: ViewState | null = null;
  lastDrawMs = 0;

  constructor(
    host: HTMLElement,
    private h: GpuPanelHandlers,
  ) {
    const nodeLabel = el("label", "", "Node ");
    nodeLabel.append(this.nodeSelect);
    const gpuLabel = el("label", "", "GPU ");
    gpuLabel.append(this.gpuSelect);
    this.controls.append(nodeLabel, gpuLabel, this.info, this.focusChip);
    this.root.append(this.controls, this.hint, this.chartsEl);
    this.root.dataset.version = "0";
    this.root.dataset.charts = "0";
    this.root.dataset.series = "0";
    host.append(this.root);
    this.nodeSelect.addEventListener("change", () => this.h.onPick({ gpunode: this.nodeSelect.value, gpu: "", gpupid: "" }));
    this.gpuSelect.addEventListener("change", () => this.h.onPick({ gpu: this.gpuSelect.value }));
    this.focusChip.addEventListener("click", (e) => {
      if ((e.target as HTMLElement).closest("button")) this.h.onFocusPid("");
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
    const loaded: Loaded = { nodes, node, gpu: s.gpu, fromMs, toMs, stepMs: Math.max(1, (toMs - fromMs) / MAX_POINTS), metrics: new Map() };
    if (node) {
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
      const specs = this.specs(d, s.gpupid, theme);
      const node = JSON.stringify(d.node);
      this.hint.hidden = false;
      this.hint.innerHTML = `Drag across a dip to see what the CPUs were doing then: the selected range opens in the CPU flame graph
        of <code>${escapeHtml(s.gpupid ? `{node=${node}, pid=${JSON.stringify(s.gpupid)}}` : `{node=${node}}`)}</code>.
        ${s.gpupid ? "" : "Click a process in a legend to focus it."} Steps of ${escapeHtml(formatDuration(d.stepMs))}.`;
      const width = this.width();
      const ctx = {
        fromMs: d.fromMs,
        toMs: d.toMs,
        stepMs: d.stepMs,
        width,
        theme,
        onSelect: (from: number, to: number) =>
          this.h.onSelectRange(from, to, selectorOf({ node: d.node, pid: this.state?.gpupid ?? "" })),
        onFocusPid: (pid: string) => this.h.onFocusPid(pid),
      };
      for (const spec of specs) {
        const chart = drawChart(spec, ctx);
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
    this.lastDrawMs = performance.now() - t0;
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

  // The charts for what the answers hold: a chart without points is left out.
  private specs(d: Loaded, focusPid: string, theme: Theme): ChartSpec[] {
    const series = (name: string): MetricSeries[] =>
      (d.metrics.get(name)?.series ?? []).filter((x) => x.points.length > 0).sort((a, b) => byGpuIndex(a.labels.gpu ?? "", b.labels.gpu ?? ""));
    const unitOf = (name: string, fallback: string) => d.metrics.get(name)?.unit || fallback;
    // The GPUs with data: one line each unless one GPU is picked (or there is only one).
    const gpuIds = new Set<string>(this.gpusOf(d).map((g) => g.gpu));
    for (const x of series("gpu_utilization")) gpuIds.add(x.labels.gpu ?? "");
    const order = [...gpuIds].sort(byGpuIndex);
    const single = d.gpu !== "" || order.length <= 1;
    const gpuColor = (x: MetricSeries) => (single ? theme.fg : theme.palette[Math.max(0, order.indexOf(x.labels.gpu ?? "")) % theme.palette.length]);
    const gpuName = (x: MetricSeries) => `GPU ${x.labels.gpu ?? "?"}`;
    const avg = (x: MetricSeries) => ({ points: x.points, field: "avg" as const });

    // The GPU's own lines: bold, the foreground colour (one GPU) or one colour per GPU.
    const main = (name: string, label: string, opts: Partial<LineSpec> = {}): LineSpec[] =>
      series(name).map((x) => ({
        label: single ? label : `${gpuName(x)}${label === "utilization" ? "" : ` ${label}`}`,
        input: avg(x),
        color: gpuColor(x),
        width: 2,
        ...opts,
      }));
    // Limits and maxima: dashed, one line when every GPU has the same.
    const ref = (name: string, label: string, color = theme.muted): LineSpec[] => {
      const xs = series(name);
      if (xs.length === 0) return [];
      if (single || sameValues(xs)) return [{ label: single ? label : `${label} (each GPU)`, input: avg(xs[0]), color, width: 1.25, dash: [6, 4] }];
      return xs.map((x) => ({ label: `${gpuName(x)} ${label}`, input: avg(x), color: gpuColor(x), width: 1.25, dash: [6, 4] }));
    };
    // Processes: thin lines, the busiest MAX_PROCESS_LINES (and the focused
    // one). One GPU: a colour per process (by pid order, the same in every
    // chart); all GPUs: the GPU's colour, dashed.
    const procKeys = new Set<string>();
    for (const name of ["gpu_process_sm_utilization", "gpu_process_memory_used"])
      for (const x of series(name)) procKeys.add(`${x.labels.pid ?? ""}/${x.labels.comm ?? ""}`);
    const procColor = new Map<string, string>();
    [...procKeys]
      .sort((a, b) => parseInt(a) - parseInt(b) || a.localeCompare(b))
      .forEach((k, i) => procColor.set(k, theme.palette[i % theme.palette.length]));
    let hidden = 0;
    const processes = (name: string): LineSpec[] => {
      const ranked = series(name)
        .map((x) => ({ x, mean: meanOf(x.points) }))
        .sort((a, b) => b.mean - a.mean);
      const kept = ranked.filter((r, i) => i < MAX_PROCESS_LINES || r.x.labels.pid === focusPid);
      hidden = ranked.length - kept.length;
      return kept.map(({ x }) => {
        const pid = x.labels.pid ?? "";
        const comm = x.labels.comm || "?";
        const focused = focusPid !== "" && pid === focusPid;
        const base = single ? procColor.get(`${pid}/${x.labels.comm ?? ""}`)! : gpuColor(x);
        return {
          label: `${comm} (${pid})${single ? "" : ` · GPU ${x.labels.gpu ?? "?"}`}`,
          input: avg(x),
          color: focusPid && !focused ? withAlpha(base, 0.35) : base,
          width: focused ? 2.5 : 1.25,
          dash: single ? undefined : [5, 3],
          pid,
          focused,
        };
      });
    };
    const more = () => (hidden > 0 ? `+${hidden} more process${hidden === 1 ? "" : "es"}` : undefined);
    const specs: ChartSpec[] = [];
    const lines = (spec: LineChartSpec) => {
      if (spec.lines.some((l) => l.input.points.length > 0)) specs.push(spec);
    };

    // Utilization, with a faint min–max band when one GPU is shown.
    const util = main("gpu_utilization", "utilization");
    if (single) {
      const x = series("gpu_utilization")[0];
      if (x && util[0]) util[0].minMax = [{ points: x.points, field: "min" }, { points: x.points, field: "max" }];
    }
    const utilProcs = processes("gpu_process_sm_utilization");
    lines({
      kind: "lines",
      metric: "gpu_utilization",
      metrics: ["gpu_utilization", "gpu_process_sm_utilization"],
      title: "Utilization",
      unit: "percent",
      lines: [...util, ...utilProcs],
      y: "percent",
      note: more(),
    });
    const memProcs = processes("gpu_process_memory_used");
    lines({
      kind: "lines",
      metric: "gpu_memory_used",
      metrics: ["gpu_memory_used", "gpu_memory_total", "gpu_process_memory_used"],
      title: "Memory",
      unit: unitOf("gpu_memory_used", "bytes"),
      lines: [...main("gpu_memory_used", "used"), ...ref("gpu_memory_total", "total"), ...memProcs],
      y: "zero",
      note: more(),
    });
    const p = theme.palette;
    lines({
      kind: "lines",
      metric: "gpu_sm_clock",
      metrics: ["gpu_sm_clock", "gpu_memory_clock", "gpu_sm_clock_max", "gpu_memory_clock_max"],
      title: "Clocks",
      unit: "mhz",
      lines: single
        ? [
            ...main("gpu_sm_clock", "SM", { color: p[0] }),
            ...main("gpu_memory_clock", "memory", { color: p[1] }),
            ...ref("gpu_sm_clock_max", "SM max", p[0]),
            ...ref("gpu_memory_clock_max", "memory max", p[1]),
          ]
        : [
            ...main("gpu_sm_clock", "SM", { width: 1.5 }),
            ...main("gpu_memory_clock", "memory", { width: 1.25, dash: [2, 3] }),
            ...ref("gpu_sm_clock_max", "SM max"),
            ...ref("gpu_memory_clock_max", "memory max"),
          ],
      y: "zero",
    });
    lines({
      kind: "lines",
      metric: "gpu_power",
      metrics: ["gpu_power", "gpu_power_limit"],
      title: "Power",
      unit: "watts",
      lines: [...main("gpu_power", "power"), ...ref("gpu_power_limit", "limit")],
      y: "zero",
    });
    lines({
      kind: "lines",
      metric: "gpu_temperature",
      metrics: ["gpu_temperature", "gpu_temperature_slowdown"],
      title: "Temperature",
      unit: "celsius",
      lines: [...main("gpu_temperature", "temperature"), ...ref("gpu_temperature_slowdown", "slowdown", theme.warn)],
      y: "zero",
    });
    lines({
      kind: "lines",
      metric: "gpu_pcie_tx",
      metrics: ["gpu_pcie_tx", "gpu_pcie_rx"],
      title: "PCIe (TX ↑, RX ↓)",
      unit: "bytes_per_second",
      lines: [
        ...main("gpu_pcie_tx", "TX", single ? { color: p[0] } : {}),
        ...series("gpu_pcie_rx").map((x) => ({
          label: single ? "RX" : `${gpuName(x)} RX`,
          input: { ...avg(x), negate: true },
          color: single ? p[1] : withAlpha(gpuColor(x), 0.7),
          width: 2,
        })),
      ],
      y: "symmetric",
      magnitude: true,
    });
    const reasons = series("gpu_clock_event_reasons");
    const xids = series("gpu_xid_errors").map((x) => ({
      label: `${single ? "" : `${gpuName(x)} `}XID ${x.labels.xid ?? "?"}`,
      input: { points: x.points, field: "max" as const },
    }));
    if (reasons.length > 0 || xids.some((x) => x.input.points.some((pt) => pt[2] > 0))) {
      specs.push({
        kind: "throttle",
        metric: "gpu_clock_event_reasons",
        metrics: ["gpu_clock_event_reasons", "gpu_xid_errors"],
        title: "Clock events",
        reasons: reasons.map((x) => ({ points: x.points, field: "max" })),
        xids,
        note: single || reasons.length < 2 ? undefined : "(any GPU)",
      });
    }
    // GPM (Hopper and later): one chart of four lines for one GPU, else one chart per metric.
    const gpm: [string, string][] = [
      ["gpu_sm_activity", "SM activity"],
      ["gpu_sm_occupancy", "SM occupancy"],
      ["gpu_tensor_activity", "tensor activity"],
      ["gpu_dram_bandwidth", "DRAM bandwidth"],
    ];
    const present = gpm.filter(([name]) => series(name).length > 0);
    if (single && present.length > 0) {
      lines({
        kind: "lines",
        metric: present[0][0],
        metrics: present.map(([name]) => name),
        title: "SM, tensor and DRAM activity",
        unit: "percent",
        lines: present.flatMap(([name, label]) => main(name, label, { color: p[gpm.findIndex(([n]) => n === name)], width: 1.5 })),
        y: "percent",
      });
    } else {
      for (const [name, label] of present) {
        lines({
          kind: "lines",
          metric: name,
          metrics: [name],
          title: label[0].toUpperCase() + label.slice(1),
          unit: "percent",
          lines: main(name, "utilization"),
          y: "percent",
        });
      }
    }
    return specs;
  }
}
