// The app shell: header, toolbar, timeline and the eight views, driven by
// one ViewState that is mirrored in the URL. Everything runs on the page's
// one thread; a newer refresh aborts the fetches of an older one.
import { ApiError, apiBlob, apiGet, apiUrl, saveBlob } from "./api/client";
import type { DiffJson, FlameChartJson, ProfileJson, SeriesJson, TargetsJson, TopJson, TypesJson } from "./api/types";
import { FlameGraph } from "./flame/flamegraph";
import { el, errorText, escapeHtml } from "./base/dom";
import { FlameChart, formatSpan } from "./flame/flamechart";
import { buildChart } from "./flame/chartmodel";
import { FlameData, findPath, fromDiff, fromProfile, pathOf } from "./flame/model";
import { Matches, functionMatches, sandwich, searchMatches, toSpeedscope } from "./flame/analysis";
import { SortKey, View, ViewState, readState, writeState } from "./state";
import { Timeline } from "./timeline";
import { formatDuration, formatTime, isRelative, resolveTime } from "./time";
import { renderTopTable } from "./views/top_table";
import { renderTargets } from "./views/targets";
import { GpuPanel } from "./views/gpu";
import { KernelsPanel } from "./views/kernels";
import { ValueUnit, formatValue, valueNoun } from "./units";

const MAX_NODES = 20000;
const LIVE_REFRESH_MS = 10_000;
// The flame chart: at most this range (longer ones are not fetched) and
// this many threads (the busiest).
const MAX_CHART_MS = 15 * 60e3;
const MAX_CHART_LANES = 32;

// Numbers the end-to-end test reads (tests/e2e/): how long the last flame
// graph took to build and draw, and a selection to its updated graph; the
// same for the flame chart (its merged boxes, all lanes).
export interface UiPerf {
  buildMs: number;
  drawMs: number;
  nodes: number;
  selectToFlameMs: number;
  flameVersion: number;
  chartBuildMs: number;
  chartDrawMs: number;
  chartBoxes: number;
  gpuDrawMs: number; // the GPUs view's last render (every chart)
  kernelsDrawMs: number; // the GPU kernels view's last render (table and stream timeline)
}

const VIEW_TITLES: [View, string][] = [
  ["flame", "Flame graph"],
  ["flamechart", "Flame chart"],
  ["table", "Top functions"],
  ["sandwich", "Sandwich"],
  ["diff", "Diff"],
  ["gpu", "GPUs"],
  ["kernels", "GPU kernels"],
  ["targets", "Targets"],
];

export class App {
  private state: ViewState = readState(location.search);
  readonly perf: UiPerf = {
    buildMs: 0,
    drawMs: 0,
    nodes: 0,
    selectToFlameMs: 0,
    flameVersion: 0,
    chartBuildMs: 0,
    chartDrawMs: 0,
    chartBoxes: 0,
    gpuDrawMs: 0,
    kernelsDrawMs: 0,
  };
  private abort: AbortController | null = null;
  private liveTimer = 0;
  private selectT0 = 0;

  private profile: FlameData | null = null;
  private profileKey = "";
  private matches: Matches | null = null;

  // DOM
  private tabs = el("nav", "tabs");
  private rangeLabel = el("span", "range-label");
  private liveBox = el("input");
  private typeSelect = el("select");
  private selectorInput = el("input", "selector");
  private searchInput = el("input", "search");
  private searchInfo = el("span", "search-info muted");
  private orientButton = el("button", "", "");
  private colorSelect = el("select");
  private timelineEl = el("div", "timeline");
  private message = el("div", "message");
  private views = new Map<View, HTMLElement>();
  private breadcrumb = el("div", "breadcrumb");
  private flamePanel = el("div", "flame-panel");
  private flame: FlameGraph;
  private tableEl = el("div", "table-wrap");
  private sandwichHead = el("div", "sandwich-head");
  private callers: FlameGraph;
  private callees: FlameGraph;
  private chartHead = el("div", "flamechart-head");
  private chartPanel = el("div", "flamechart-panel");
  private chart: FlameChart;
  private chartKey = "";
  private chartTooLong = false;
  private diffHead = el("div", "diff-head");
  private diffInfo = el("div", "diff-info");
  private pickBaseButton = el("button", "pick-base", "Pick base range");
  private pickingBase = false; // the next drag on the timeline sets the diff's base
  private diffGraph: FlameGraph;
  private targetsEl = el("div", "targets");
  private gpu: GpuPanel;
  private kernels: KernelsPanel;
  private timeline: Timeline;
  // Each profile type's unit (/api/v1/types), for the timeline's axis before a profile arrives.
  private typeUnits = new Map<string, ValueUnit>();

  constructor(root: HTMLElement) {
    const format = (v: number) => this.format(v);
    // Right-click on a box: the sandwich of its function.
    const onContext = (name: string, binary: string) => this.update({ view: "sandwich", fn: name, fnbin: binary }, true);
    this.buildShell(root);
    this.flame = new FlameGraph(this.flamePanel, { format, onZoom: (n) => this.zoomTo(n), onContext });
    this.views.get("flamechart")!.append(this.chartHead, this.chartPanel);
    this.chart = new FlameChart(this.chartPanel, {
      onSelectRange: (from, to) => this.update({ from: String(from), to: String(to), live: false, focus: "" }, true),
      onContext,
    });
    const callersPanel = el("div", "flame-panel");
    const calleesPanel = el("div", "flame-panel");
    this.views.get("sandwich")!.append(this.sandwichHead, el("h4", "muted", "Callers ↑"), callersPanel, el("h4", "muted", "Callees ↓"), calleesPanel);
    this.callers = new FlameGraph(callersPanel, { format, onContext });
    this.callers.setInverted(true);
    this.callees = new FlameGraph(calleesPanel, { format, onContext });
    const diffPanel = el("div", "flame-panel");
    this.pickBaseButton.title = "then drag across the timeline: that range becomes the base";
    this.pickBaseButton.addEventListener("click", () => {
      this.pickingBase = !this.pickingBase;
      this.syncPickBase();
    });
    const diffControls = el("div", "diff-controls");
    diffControls.append(this.pickBaseButton);
    this.diffHead.append(diffControls, this.diffInfo);
    this.views.get("diff")!.append(this.diffHead, diffPanel);
    this.diffGraph = new FlameGraph(diffPanel, { format });
    this.gpu = new GpuPanel(this.views.get("gpu")!, {
      onPick: (patch) => this.update(patch, true),
      onFocusPid: (pid) => this.update({ gpupid: pid }, false, false),
      // A drag across a GPU chart: what the node's CPUs (the focused process's) did then.
      onSelectRange: (from, to, selector) => {
        this.selectT0 = performance.now();
        this.update({ view: "flame", from: String(from), to: String(to), selector, live: false, focus: "" }, true);
      },
    });
    this.kernels = new KernelsPanel(this.views.get("kernels")!, {
      onPatch: (patch, fetch) => this.update(patch, false, fetch),
      // A kernel's launch stacks: the gpu_time flame graph, searching for it.
      onFlame: (kernel) => this.update({ view: "flame", type: "gpu_time", search: kernel, focus: "" }, true),
      onSelectRange: (from, to) => this.update({ from: String(from), to: String(to), live: false, kernel: "" }, true),
    });
    this.timeline = new Timeline(this.timelineEl, (from, to) => {
      if (this.pickingBase && this.state.view === "diff") {
        this.pickingBase = false;
        this.update({ base_from: String(from), base_to: String(to) }, true);
        return;
      }
      this.selectT0 = performance.now();
      this.update({ from: String(from), to: String(to), live: false, focus: "" }, true);
    });
    this.message.addEventListener("click", (e) => {
      if ((e.target as HTMLElement).closest("[data-action=last-minute]")) this.selectLastMinute();
    });
    window.addEventListener("popstate", () => {
      this.state = readState(location.search);
      this.syncControls();
      this.refresh();
    });
    document.addEventListener("keydown", (e) => this.onKey(e));
    this.syncControls();
    this.loadTypes();
    this.refresh();
  }

  private buildShell(root: HTMLElement): void {
    const header = el("header");
    header.append(el("div", "brand", "warpscope"), this.tabs);
    for (const [view, title] of VIEW_TITLES) {
      const b = el("button", "tab", title);
      b.dataset.view = view;
      b.addEventListener("click", () => this.update({ view }, true));
      this.tabs.append(b);
    }
    const range = el("div", "range");
    for (const preset of ["5m", "1h", "24h"]) {
      const b = el("button", "preset", preset);
      b.dataset.preset = preset;
      b.addEventListener("click", () => this.update({ from: `now-${preset}`, to: "now", focus: "" }, true));
      range.append(b);
    }
    const zoomOut = el("button", "", "Zoom out");
    zoomOut.title = "twice the time range, around its middle";
    zoomOut.addEventListener("click", () => this.zoomOutTime());
    this.liveBox.type = "checkbox";
    this.liveBox.addEventListener("change", () => {
      const patch: Partial<ViewState> = { live: this.liveBox.checked };
      if (this.liveBox.checked && !isRelative(this.state.from)) {
        patch.from = `now-${formatDuration(this.span())}`;
        patch.to = "now";
      }
      this.update(patch, true);
    });
    const live = el("label", "live");
    live.append(this.liveBox, document.createTextNode(" live"));
    this.typeSelect.addEventListener("change", () => this.update({ type: this.typeSelect.value }, true));
    range.append(zoomOut, live, this.typeSelect, this.rangeLabel);
    header.append(range);

    const toolbar = el("div", "toolbar");
    this.selectorInput.placeholder = '{node="…", comm=~"python.*"}  label selector';
    this.selectorInput.spellcheck = false;
    this.selectorInput.addEventListener("change", () => this.update({ selector: this.selectorInput.value.trim(), focus: "" }, true));
    this.searchInput.placeholder = "search functions  ( / )";
    this.searchInput.spellcheck = false;
    this.searchInput.addEventListener("input", () => this.update({ search: this.searchInput.value }, false, false));
    this.orientButton.addEventListener("click", () =>
      this.update({ orient: this.state.orient === "icicle" ? "flame" : "icicle" }, false, false),
    );
    this.colorSelect.innerHTML = `<option value="binary">colour: binary</option><option value="kind">colour: kind</option>`;
    this.colorSelect.addEventListener("change", () => this.update({ color: this.colorSelect.value as "binary" | "kind" }, false, false));
    const pprof = el("button", "", "⤓ pprof");
    pprof.title = "the merged profile of this range and selector (/api/v1/profile?format=pprof)";
    pprof.addEventListener("click", () => this.exportPprof());
    const speedscope = el("button", "", "⤓ speedscope");
    speedscope.title = "the flame graph as shown (zoom included), as speedscope JSON";
    speedscope.addEventListener("click", () => this.exportSpeedscope());
    toolbar.append(this.selectorInput, this.searchInput, this.searchInfo, this.orientButton, this.colorSelect, pprof, speedscope);

    const main = el("main");
    for (const [view] of VIEW_TITLES) {
      const v = el("section", `view view-${view}`);
      this.views.set(view, v);
      main.append(v);
    }
    this.views.get("flame")!.append(this.breadcrumb);
    this.views.get("targets")!.append(this.targetsEl);
    root.append(header, toolbar, this.timelineEl, this.message, main);
  }

  // Applies a change. `push`: a new history entry (ranges, views); `fetch`:
  // whether data must be loaded again (search and colours only redraw).
  private update(patch: Partial<ViewState>, push: boolean, fetch = true): void {
    this.state = { ...this.state, ...patch };
    const url = writeState(this.state);
    if (push) history.pushState(null, "", url);
    else history.replaceState(null, "", url);
    this.syncControls();
    if (fetch) this.refresh();
    else this.redraw();
  }

  private syncControls(): void {
    const s = this.state;
    this.tabs.querySelectorAll<HTMLElement>("button").forEach((b) => b.classList.toggle("active", b.dataset.view === s.view));
    document.querySelectorAll<HTMLElement>("button.preset").forEach((b) =>
      b.classList.toggle("active", s.from === `now-${b.dataset.preset}` && s.to === "now"),
    );
    for (const [view, section] of this.views) section.hidden = view !== s.view;
    // The main flame graph sits in the flame view, and under the table.
    const host = s.view === "table" ? this.views.get("table")! : this.views.get("flame")!;
    if (s.view === "table" && this.tableEl.parentElement !== host) host.append(this.tableEl);
    if (this.flamePanel.parentElement !== host) host.append(this.flamePanel);
    if (s.view !== "diff") this.pickingBase = false;
    this.syncPickBase();
    this.liveBox.checked = s.live;
    if (document.activeElement !== this.selectorInput) this.selectorInput.value = s.selector;
    if (document.activeElement !== this.searchInput) this.searchInput.value = s.search;
    this.orientButton.textContent = s.orient === "icicle" ? "▼ icicle" : "▲ flame";
    this.orientButton.title = "switch between icicle (root on top) and flame (root at the bottom)";
    this.colorSelect.value = s.color;
    // A type from a link (the kernel table's "flame graph") may not be listed yet.
    if (![...this.typeSelect.options].some((o) => o.value === s.type)) this.typeSelect.append(new Option(s.type, s.type));
    this.typeSelect.value = s.type;
    const now = Date.now();
    const from = resolveTime(s.from, now);
    const to = resolveTime(s.to, now);
    this.rangeLabel.textContent =
      from !== null && to !== null
        ? isRelative(s.from) && s.to === "now"
          ? `last ${formatDuration(to - from)}`
          : `${formatTime(from)} – ${formatTime(to)} (${formatDuration(to - from)})`
        : `${s.from} – ${s.to}`;
    clearInterval(this.liveTimer);
    if (s.live) this.liveTimer = window.setInterval(() => this.refresh(), LIVE_REFRESH_MS);
  }

  private syncPickBase(): void {
    const on = this.pickingBase;
    this.pickBaseButton.classList.toggle("active", on);
    this.pickBaseButton.setAttribute("aria-pressed", String(on));
    this.pickBaseButton.textContent = on ? "Drag across the timeline to pick the base (Esc cancels)" : "Pick base range";
    this.timelineEl.classList.toggle("picking-base", on);
    const base = this.state.view === "diff" ? this.baseRange(Date.now()) : null;
    const a = base ? resolveTime(base[0], Date.now()) : null;
    const b = base ? resolveTime(base[1], Date.now()) : null;
    this.timeline?.setShade(a !== null && b !== null ? [a, b] : null);
  }

  // The diff's base: base_from/base_to, or the window of the same length
  // just before the range.
  private baseRange(now: number): [string, string] {
    const from = resolveTime(this.state.from, now) ?? now - 3600e3;
    const to = resolveTime(this.state.to, now) ?? now;
    return [this.state.base_from || String(Math.round(2 * from - to)), this.state.base_to || String(Math.round(from))];
  }

  // The last minute of the current range (the flame chart's answer to a
  // range that is too long); a range that follows now keeps following it.
  private selectLastMinute(): void {
    const s = this.state;
    if (isRelative(s.from) && s.to === "now") {
      this.update({ from: "now-1m", to: "now", focus: "" }, true);
      return;
    }
    const now = Date.now();
    const to = resolveTime(s.to, now) ?? now;
    this.update({ from: String(to - 60e3), to: String(to), live: false, focus: "" }, true);
  }

  private span(): number {
    const now = Date.now();
    return (resolveTime(this.state.to, now) ?? now) - (resolveTime(this.state.from, now) ?? now - 3600e3);
  }

  private zoomOutTime(): void {
    const now = Date.now();
    const from = resolveTime(this.state.from, now) ?? now - 3600e3;
    const to = resolveTime(this.state.to, now) ?? now;
    if (isRelative(this.state.from) && this.state.to === "now") {
      this.update({ from: `now-${formatDuration(2 * (to - from))}`, focus: "" }, true);
      return;
    }
    const half = (to - from) / 2;
    const newTo = Math.min(now, to + half);
    this.update({ from: String(Math.round(newTo - 4 * half)), to: String(Math.round(newTo)), focus: "" }, true);
  }

  private common() {
    const s = this.state;
    return { type: s.type, from: s.from, to: s.to, selector: s.selector || undefined };
  }

  // Values as the shown data's unit reads: CPU samples with their time,
  // nanoseconds (gpu_time, or CPU profiles of agents at different
  // frequencies) as time.
  private format(v: number, d: FlameData | null = this.state.view === "diff" ? this.diff : this.profile): string {
    return formatValue(v, this.unitOf(d));
  }

  private unitOf(d: FlameData | null): ValueUnit {
    if (d) return { type: this.state.type, unit: d.unit, periodNanos: d.periodNanos };
    return this.typeUnits.get(this.state.type) ?? { type: this.state.type, unit: "samples", periodNanos: 0 };
  }

  // The timeline's type: the GPU kernels view shows GPU time over time.
  private seriesType(): string {
    return this.state.view === "kernels" ? "gpu_time" : this.state.type;
  }

  private showMessage(text: string, kind: "error" | "empty" | "" = ""): void {
    this.message.className = `message ${kind}`;
    this.message.innerHTML = text;
    this.message.hidden = !text;
  }

  private async loadTypes(): Promise<void> {
    try {
      const t = await apiGet<TypesJson>("/api/v1/types", {});
      for (const x of t.types) this.typeUnits.set(x.name, { type: x.name, unit: x.unit, periodNanos: x.period_nanos });
      const names = t.types.map((x) => x.name);
      if (!names.includes(this.state.type)) names.unshift(this.state.type);
      this.typeSelect.innerHTML = names.map((n) => `<option>${escapeHtml(n)}</option>`).join("");
      this.typeSelect.value = this.state.type;
    } catch {
      this.typeSelect.innerHTML = `<option>${escapeHtml(this.state.type)}</option>`;
    }
  }

  // Loads what the current view needs; errors end up as a message, never
  // as a blank page.
  async refresh(): Promise<void> {
    this.abort?.abort();
    const abort = new AbortController();
    this.abort = abort;
    const signal = abort.signal;
    const s = this.state;
    try {
      const seriesType = this.seriesType();
      const series = apiGet<SeriesJson>("/api/v1/series", { ...this.common(), type: seriesType, max_points: 300 }, signal);
      const work: Promise<unknown>[] = [
        series.then((x) => {
          const u = this.typeUnits.get(seriesType);
          this.timeline.setSeries(x, u ?? { type: seriesType, unit: seriesType === "gpu_time" ? "nanoseconds" : "samples", periodNanos: 0 });
        }),
      ];
      if (s.view === "flame" || s.view === "table" || s.view === "sandwich") work.push(this.loadProfile(signal));
      if (s.view === "table") work.push(this.loadTop(signal));
      if (s.view === "flamechart") work.push(this.loadChart(signal));
      if (s.view === "diff") work.push(this.loadDiff(signal));
      if (s.view === "targets") work.push(this.loadTargets(signal));
      if (s.view === "gpu") work.push(this.gpu.load(s, signal));
      if (s.view === "kernels") work.push(this.kernels.load(s, signal));
      await Promise.all(work);
      if (signal.aborted) return;
      this.showMessage("");
      await this.checkEmpty(signal);
      this.redraw();
    } catch (e) {
      if (signal.aborted) return;
      const status = e instanceof ApiError ? ` (HTTP ${e.status})` : "";
      this.showMessage(`<b>Could not load data${status}:</b> ${escapeHtml(errorText(e))}`, "error");
    }
  }

  private async checkEmpty(signal: AbortSignal): Promise<void> {
    const s = this.state;
    const needsProfile = s.view === "flame" || s.view === "table" || s.view === "sandwich";
    const chart = s.view === "flamechart" ? this.chart.getData() : null;
    if (s.view === "flamechart" && this.chartTooLong) {
      this.showMessage(
        `<b>The flame chart shows up to 15 minutes of samples per thread.</b> Drag across the timeline to select a shorter range, or
        <button class="link" data-action="last-minute">show the last minute of this range</button>.`,
        "empty",
      );
      return;
    }
    const chartEmpty = chart !== null && (chart.lanes.length === 0 || chart.total === 0);
    if ((needsProfile && this.profile && this.profile.total[0] === 0) || chartEmpty) {
      const types = await apiGet<TypesJson>("/api/v1/types", {}, signal);
      if (types.types.length === 0) {
        this.showMessage(
          `<b>No agent has sent data yet.</b> Start one on each machine to profile:<pre>sudo warpscope-agent run --server ${escapeHtml(location.origin)}</pre>`,
          "empty",
        );
      } else if (chartEmpty) {
        this.showMessage(
          `<b>No samples in this range${s.selector ? " for this selector" : ""}.</b> Try another range of up to 15 minutes${
            s.selector ? " or clear the selector" : ""
          }; the flame graph shows longer ones.`,
          "empty",
        );
      } else {
        this.showMessage(
          `<b>No samples in this range${s.selector ? " for this selector" : ""}.</b> Try a longer range (24h)${s.selector ? " or clear the selector" : ""}.`,
          "empty",
        );
      }
    }
  }

  private async loadProfile(signal: AbortSignal): Promise<void> {
    const params = { ...this.common(), format: "json", max_nodes: MAX_NODES };
    const key = apiUrl("", params);
    // Relative ranges move with now: fetch again; absolute ones are cached.
    if (key === this.profileKey && this.profile && !isRelative(this.state.from) && !isRelative(this.state.to)) return;
    const json = await apiGet<ProfileJson>("/api/v1/profile", params, signal);
    if (signal.aborted) return;
    const t0 = performance.now();
    this.profile = fromProfile(json);
    this.perf.buildMs = performance.now() - t0;
    this.perf.nodes = this.profile.n;
    this.profileKey = key;
    this.flame.setData(this.profile, this.state.color);
  }

  // The flame chart, for ranges up to MAX_CHART_MS; a longer one is not
  // fetched (checkEmpty says why and offers the last minute).
  private async loadChart(signal: AbortSignal): Promise<void> {
    const now = Date.now();
    const from = resolveTime(this.state.from, now);
    const to = resolveTime(this.state.to, now);
    this.chartTooLong = from !== null && to !== null && to - from > MAX_CHART_MS;
    if (this.chartTooLong) {
      this.chart.setData(null, this.state.color);
      this.chartKey = "";
      return;
    }
    const params = { ...this.common(), group_by: "pid,comm,thread", max_lanes: MAX_CHART_LANES };
    const key = apiUrl("", params);
    if (key === this.chartKey && this.chart.getData() && !isRelative(this.state.from) && !isRelative(this.state.to)) return;
    let json: FlameChartJson;
    try {
      json = await apiGet<FlameChartJson>("/api/v1/flamechart", params, signal);
    } catch (e) {
      if (!signal.aborted) {
        // No stale chart under the error (a range with too many points).
        this.chart.setData(null, this.state.color);
        this.chartKey = "";
        this.chart.draw();
      }
      throw e;
    }
    if (signal.aborted) return;
    const t0 = performance.now();
    const data = buildChart(json);
    this.perf.chartBuildMs = performance.now() - t0;
    this.perf.chartBoxes = data.boxes;
    this.chartKey = key;
    this.chart.setData(data, this.state.color);
  }

  private top: TopJson | null = null;
  private async loadTop(signal: AbortSignal): Promise<void> {
    this.top = await apiGet<TopJson>("/api/v1/top", { ...this.common(), limit: 2000, sort: "self" }, signal);
  }

  private diff: FlameData | null = null;
  private async loadDiff(signal: AbortSignal): Promise<void> {
    const now = Date.now();
    const [baseFrom, baseTo] = this.baseRange(now);
    const json = await apiGet<DiffJson>("/api/v1/diff", { ...this.common(), base_from: baseFrom, base_to: baseTo, max_nodes: MAX_NODES }, signal);
    this.diff = fromDiff(json);
    this.diffGraph.setData(this.diff, "binary");
    const t = (x: string) => {
      const ms = resolveTime(x, now);
      return ms === null ? escapeHtml(x) : formatTime(ms);
    };
    const amount = (v: number) => (this.diff?.unit === "samples" ? `${v.toLocaleString("en-US")} samples` : this.format(v, this.diff));
    this.diffInfo.innerHTML = `<p>Base <b>${t(baseFrom)} – ${t(baseTo)}</b> (${amount(json.base_total)})
      against <b>${t(this.state.from)} – ${t(this.state.to)}</b> (${amount(json.target_total)}).
      Width: both shares together; <span class="grew">red</span>: a larger share of the target, <span class="shrank">green</span>: smaller.
      Set the base with <b>Pick base range</b> and a drag across the timeline, with the URL's
      <code>base_from</code>/<code>base_to</code>, or <button class="link" id="base-now">use the range before this one</button>.</p>`;
    this.diffInfo.querySelector("#base-now")!.addEventListener("click", () => this.update({ base_from: "", base_to: "" }, true));
  }

  private targets: TargetsJson | null = null;
  private async loadTargets(signal: AbortSignal): Promise<void> {
    this.targets = await apiGet<TargetsJson>("/api/v1/targets", { ...this.common(), type: undefined }, signal);
  }

  // Draws the current view from data already loaded.
  private redraw(): void {
    const s = this.state;
    const d = this.profile;
    if (s.view === "flame" || s.view === "table") {
      this.flame.setColorMode(s.color);
      this.flame.setInverted(s.orient === "flame");
      if (d) {
        this.flame.setFocus(findPath(d, s.focus));
        this.matches = s.view === "table" && s.fn ? functionMatches(d, s.fn, s.fnbin) : searchMatches(d, s.search);
        this.flame.setMatches(this.matches);
      }
      this.flame.draw();
      this.perf.drawMs = this.flame.lastDrawMs;
      this.perf.flameVersion++;
      this.flamePanel.dataset.version = String(this.perf.flameVersion);
      this.flamePanel.dataset.total = d ? String(d.total[0]) : "0";
      if (this.selectT0) {
        this.perf.selectToFlameMs = performance.now() - this.selectT0;
        this.selectT0 = 0;
      }
      this.renderBreadcrumb();
    }
    if (s.view === "flamechart") {
      this.chart.setColorMode(s.color);
      this.chart.setSearch(s.search);
      this.chart.draw();
      this.perf.chartDrawMs = this.chart.lastDrawMs;
      const d = this.chart.getData();
      this.chartHead.innerHTML = `<span class="muted small">Each thread's stacks in time order, root on top${
        d && d.lanes.length ? `, in ${escapeHtml(formatSpan(d.bucketMs))} buckets` : ""
      }; blank: ${s.type === "gpu_time" ? "no kernel of the thread's running" : "off CPU"}. Click a box to select its time span; right-click for its callers and callees (sandwich).</span>`;
    }
    this.renderSearchInfo();
    if (s.view === "table" && this.top) {
      renderTopTable(this.tableEl, this.top, s.sort, s.search, { name: s.fn, binary: s.fnbin }, (v) => this.format(v), {
        onSort: (key: SortKey) => this.update({ sort: key }, false, false),
        onSelect: (name, binary) => this.update({ fn: name, fnbin: binary }, false, false),
        onSandwich: (name, binary) => this.update({ view: "sandwich", fn: name, fnbin: binary }, true),
      });
    }
    if (s.view === "sandwich") this.renderSandwich();
    if (s.view === "diff") {
      this.diffGraph.setInverted(s.orient === "flame");
      this.diffGraph.setMatches(this.diff ? searchMatches(this.diff, s.search) : null);
      this.diffGraph.draw();
    }
    if (s.view === "gpu") {
      this.gpu.render(s);
      this.perf.gpuDrawMs = this.gpu.lastDrawMs;
    } else {
      this.gpu.release();
    }
    if (s.view === "kernels") {
      this.kernels.render(s);
      this.perf.kernelsDrawMs = this.kernels.lastDrawMs;
    }
    if (s.view === "targets" && this.targets) {
      if (this.targets.nodes.length === 0) {
        this.targetsEl.innerHTML = `<div class="empty"><b>No targets with samples in this range.</b> Agents appear here once they
          upload: <pre>sudo warpscope-agent run --server ${escapeHtml(location.origin)}</pre></div>`;
      } else {
        renderTargets(
          this.targetsEl,
          this.targets,
          s.search,
          (selector) => this.update({ selector, view: "flame", focus: "" }, true),
          (node, gpu) => this.update({ view: "gpu", gpunode: node, gpu, gpupid: "" }, true),
        );
      }
    }
  }

  private renderSearchInfo(): void {
    if (this.state.view === "flamechart") {
      const share = this.state.search ? this.chart.searchShare() : null;
      this.searchInfo.textContent =
        share === null ? "" : `${this.chart.matchedDrawn} boxes · ${(100 * share).toFixed(2)}% of the ${valueNoun(this.unitOf(null))} shown`;
      return;
    }
    const d = this.state.view === "diff" ? this.diff : this.profile;
    if (!this.state.search || !d || this.state.view === "kernels") {
      this.searchInfo.textContent = "";
      return;
    }
    const m = searchMatches(d, this.state.search);
    const share = m && d.total[0] > 0 ? (100 * m.matchedTotal) / d.total[0] : 0;
    this.searchInfo.textContent = m ? `${m.count} frames · ${share.toFixed(2)}% of total` : "";
  }

  private renderBreadcrumb(): void {
    const d = this.profile;
    const f = this.flame.getFocus();
    if (!d || f === 0) {
      this.breadcrumb.innerHTML = `<span class="muted small">Click a box to zoom in; right-click for its callers and callees (sandwich); Esc resets.</span>`;
      return;
    }
    const chain: number[] = [];
    for (let i = f; i >= 0; i = d.parent[i]) chain.unshift(i);
    this.breadcrumb.innerHTML =
      `<button class="link" data-node="0">reset</button> ` +
      chain
        .slice(1)
        .map((i) => `› <button class="link" data-node="${i}">${escapeHtml(d.names[d.name[i]])}</button>`)
        .join(" ");
    this.breadcrumb.querySelectorAll<HTMLElement>("button").forEach((b) => b.addEventListener("click", () => this.zoomTo(Number(b.dataset.node))));
  }

  private zoomTo(node: number): void {
    if (!this.profile) return;
    this.update({ focus: node === 0 ? "" : pathOf(this.profile, node) }, false, false);
  }

  private renderSandwich(): void {
    const s = this.state;
    const d = this.profile;
    if (!d) return;
    if (!s.fn) {
      this.sandwichHead.innerHTML = `<div class="empty">Pick a function: <b>sandwich</b> on a row of Top functions shows who calls it and what it calls.</div>`;
      this.callers.setData(null, s.color);
      this.callees.setData(null, s.color);
      this.callers.draw();
      this.callees.draw();
      return;
    }
    const sw = sandwich(d, s.fn, s.fnbin);
    if (!sw) {
      this.sandwichHead.innerHTML = `<div class="empty"><b>${escapeHtml(s.fn)}</b> has no samples in this range.</div>`;
      this.callers.setData(null, s.color);
      this.callees.setData(null, s.color);
    } else {
      const pct = (v: number) => `${((100 * v) / (d.total[0] || 1)).toFixed(2)}%`;
      this.sandwichHead.innerHTML = `<h3 class="fn">${escapeHtml(s.fn)} <span class="muted small">${escapeHtml(s.fnbin)}</span></h3>
        <p class="sandwich-numbers">self <b>${this.format(sw.self)}</b> (<b>${pct(sw.self)}</b>) · total <b>${this.format(sw.total)}</b>
        (<b>${pct(sw.total)}</b>) of ${this.format(d.total[0])}</p>`;
      this.callers.setData(sw.callers, s.color);
      this.callees.setData(sw.callees, s.color);
    }
    this.callers.draw();
    this.callees.draw();
  }

  private onKey(e: KeyboardEvent): void {
    const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement;
    if (e.key === "/" && !typing) {
      e.preventDefault();
      this.searchInput.focus();
      this.searchInput.select();
    } else if (e.key === "Escape") {
      if (typing) (e.target as HTMLElement).blur();
      if (this.pickingBase) {
        this.pickingBase = false;
        this.syncPickBase();
      }
      if (this.state.focus) this.update({ focus: "" }, false, false);
      if (this.state.view === "gpu" && this.state.gpupid) this.update({ gpupid: "" }, false, false);
      if (this.state.view === "kernels" && this.state.kernel) this.update({ kernel: "" }, false, false);
    }
  }

  private async exportPprof(): Promise<void> {
    try {
      const blob = await apiBlob("/api/v1/profile", { ...this.common(), format: "pprof" });
      saveBlob(blob, `warpscope-${this.state.type}.pb.gz`);
    } catch (e) {
      this.showMessage(`<b>Export failed:</b> ${escapeHtml(errorText(e))}`, "error");
    }
  }

  private exportSpeedscope(): void {
    const d = this.profile;
    if (!d) return;
    const title = `warpscope ${this.state.type} ${this.rangeLabel.textContent}`;
    const json = toSpeedscope(d, this.flame.getFocus(), title);
    saveBlob(new Blob([JSON.stringify(json)], { type: "application/json" }), `warpscope-${this.state.type}.speedscope.json`);
  }
}
