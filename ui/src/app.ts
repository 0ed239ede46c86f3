// The app shell: the header (tabs, range buttons, the profile type), the
// toolbar (selector, search, orientation, colours, exports), the timeline
// and the message line, around the eleven views. One ViewState, mirrored in
// the URL, drives all of it; `views` maps each view's name to its module
// (views/view.ts says what a view does and what the shell does for it).
// A URL that names no view lands on the insights when the range has any,
// else on the flame graph; the timeline marks the range's insights.
// Everything runs on the page's one thread; a newer refresh aborts the
// fetches of an older one.
import { ApiError, apiBlob, apiGet, saveBlob } from "./api/client";
import type { SeriesJson, TypesJson } from "./api/types";
import { el, errorText, escapeHtml } from "./base/dom";
import { Measurements } from "./perf";
import { endingNow, lastMinute, rangeLabel, zoomedOut } from "./range";
import { attachSelectorCompletion } from "./selector_box";
import { InsightsCache } from "./insights_cache";
import { GROUPS, ViewName, ViewState, commonParams, isLanding, readState, writeState } from "./state";
import { RangePicker } from "./range_picker";
import { isRelative, resolveTime } from "./time";
import { Timeline } from "./timeline";
import { Frame, binariesByTotal, parseFrame, parseFrames } from "./flame/transforms";
import { ValueUnit, typeLabel, unitOfType } from "./units";
import { DiffView } from "./views/diff";
import { EnergyView } from "./views/energy";
import { FlameView } from "./views/flame";
import { FlameChartView } from "./views/flamechart";
import { GpuView } from "./views/gpu";
import { InsightsView } from "./views/insights";
import { marksOf } from "./views/insights_model";
import { KernelsView } from "./views/kernels";
import { ProfileGraph } from "./views/profile_graph";
import { SandwichView } from "./views/sandwich";
import { TableView } from "./views/table";
import { TargetsView } from "./views/targets";
import { ThreadsView } from "./views/threads";
import { Shell, View } from "./views/view";

const LIVE_REFRESH_MS = 10_000;

// The tabs, in this order; each view gets a <section class="view view-NAME">.
const VIEW_TITLES: [ViewName, string][] = [
  ["insights", "Insights"],
  ["flame", "Flame graph"],
  ["flamechart", "Flame chart"],
  ["threads", "Threads"],
  ["table", "Top functions"],
  ["sandwich", "Sandwich"],
  ["diff", "Diff"],
  ["gpu", "GPUs"],
  ["kernels", "GPU kernels"],
  ["energy", "Energy & cost"],
  ["targets", "Targets"],
];

// The type picker's entry: the plain name shown, the API's name as the value and tooltip.
function typeOption(type: string): string {
  return `<option value="${escapeHtml(type)}" title="profile type ${escapeHtml(type)}">${escapeHtml(typeLabel(type))}</option>`;
}

export class App implements Shell {
  private state: ViewState = readState(location.search);
  readonly measurements = new Measurements();
  readonly timeline: Timeline;
  readonly insights = new InsightsCache();
  // The page was opened on a URL that names no view: the first refresh picks it.
  private landing = isLanding(location.search);
  private views: Record<ViewName, View>;
  private sections = new Map<ViewName, HTMLElement>();
  private shown: View | null = null;
  private profile: ProfileGraph; // the flame graph's data, for the speedscope export
  private abort: AbortController | null = null;
  private liveTimer = 0;
  // Each profile type's unit (/api/v1/types), for the timeline's axis before a profile arrives.
  private typeUnits = new Map<string, ValueUnit>();

  private tabs = el("nav", "tabs");
  private rangeText = el("span", "range-label");
  private liveBox = el("input");
  private typeSelect = el("select");
  private selectorInput = el("input", "selector");
  private searchInput = el("input", "search");
  private searchInfo = el("span", "search-info muted");
  // The flame graph's transforms (flame/transforms.ts): collapse recursion,
  // the binary filter (its suggestions: the data's binaries), and a chip per
  // function focused on or frame hidden, × to remove it.
  private norecButton = el("button", "norec-toggle");
  private binInput = el("input", "bin-filter");
  private binList = el("datalist");
  private binListOf: unknown = null;
  private chips = el("span", "transform-chips");
  private orientButton = el("button");
  private treeButton = el("button", "tree-toggle");
  private colorSelect = el("select");
  private groupSelect = el("select", "group-select");
  private linesButton = el("button", "lines-button");
  private timelineEl = el("div", "timeline");
  private message = el("div", "message");

  constructor(root: HTMLElement) {
    this.buildShell(root);
    this.timeline = new Timeline(
      this.timelineEl,
      (from, to) => this.onTimelineRange(from, to),
      (key) => this.openInsight(key),
    );
    const section = (name: ViewName) => this.sections.get(name)!;
    this.profile = new ProfileGraph(section("flame"), this);
    this.views = {
      insights: new InsightsView(section("insights"), this),
      flame: new FlameView(section("flame"), this.profile, this),
      flamechart: new FlameChartView(section("flamechart"), this),
      threads: new ThreadsView(section("threads"), this),
      table: new TableView(section("table"), this.profile, this),
      sandwich: new SandwichView(section("sandwich"), this.profile, this),
      diff: new DiffView(section("diff"), this),
      gpu: new GpuView(section("gpu"), this),
      kernels: new KernelsView(section("kernels"), this),
      energy: new EnergyView(section("energy"), this),
      targets: new TargetsView(section("targets"), this),
    };
    this.message.addEventListener("click", (e) => {
      // The flame chart's answer to a range that is too long.
      if ((e.target as HTMLElement).closest("[data-action=last-minute]")) this.update({ ...lastMinute(this.state, Date.now()), focus: "" }, true);
    });
    window.addEventListener("popstate", () => {
      this.landing = false;
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
    zoomOut.addEventListener("click", () => this.update({ ...zoomedOut(this.state, Date.now()), focus: "" }, true));
    this.liveBox.type = "checkbox";
    this.liveBox.addEventListener("change", () => {
      const follow = this.liveBox.checked && !isRelative(this.state.from);
      this.update({ live: this.liveBox.checked, ...(follow ? endingNow(this.state, Date.now()) : {}) }, true);
    });
    const live = el("label", "live");
    live.append(this.liveBox, document.createTextNode(" live"));
    this.typeSelect.addEventListener("change", () => this.update({ type: this.typeSelect.value }, true));
    const picker = new RangePicker(
      () => {
        const now = Date.now();
        const from = resolveTime(this.state.from, now);
        const to = resolveTime(this.state.to, now);
        return from === null || to === null ? null : { from, to };
      },
      (from, to) => this.update({ from: String(from), to: String(to), live: false, focus: "" }, true),
    );
    range.append(zoomOut, live, this.typeSelect, this.rangeText, picker.root);
    header.append(range);

    const toolbar = el("div", "toolbar");
    // The flame graph's own controls, hidden on the views they mean nothing to (style.css, body[data-view]).
    for (const c of [this.orientButton, this.treeButton, this.groupSelect, this.linesButton, this.colorSelect]) c.classList.add("flame-only");
    this.selectorInput.placeholder = '{node="…", comm=~"python.*"}  label selector';
    this.selectorInput.spellcheck = false;
    this.selectorInput.addEventListener("change", () => this.update({ selector: this.selectorInput.value.trim(), focus: "" }, true));
    this.searchInput.placeholder = "search functions  ( / )";
    this.searchInput.spellcheck = false;
    this.searchInput.addEventListener("input", () => this.update({ search: this.searchInput.value }, false, false));
    this.orientButton.title = "switch between icicle (root on top) and flame (root at the bottom)";
    this.orientButton.addEventListener("click", () => this.update({ orient: this.state.orient === "icicle" ? "flame" : "icicle" }, false, false));
    this.treeButton.title = "top-down (callers above callees) or bottom-up: the functions where samples were taken, their callers below";
    this.treeButton.addEventListener("click", () => this.update({ tree: this.state.tree === "bottom-up" ? "" : "bottom-up", focus: "" }, true, false));
    this.colorSelect.innerHTML = `<option value="binary">colour: binary</option><option value="kind">colour: kind</option>`;
    this.colorSelect.addEventListener("change", () => this.update({ color: this.colorSelect.value as "binary" | "kind" }, false, false));
    this.groupSelect.innerHTML = `<option value="">one tree</option><option value="process">by process</option><option value="thread">by thread</option>`;
    this.groupSelect.title = "split the flame graph into one subtree per process (comm, pid) or thread";
    this.groupSelect.addEventListener("change", () => this.update({ group: this.groupSelect.value, focus: "" }, true));
    this.linesButton.title = "one box per function, or per function and source line (file:line, where the frames have lines)";
    this.linesButton.addEventListener("click", () => this.update({ lines: this.state.lines === "1" ? "" : "1", focus: "" }, true));
    const pprof = el("button", "flame-only", "⤓ pprof");
    pprof.title = "the merged profile of this range and selector (/api/v1/profile?format=pprof)";
    pprof.addEventListener("click", () => this.exportPprof());
    const speedscope = el("button", "flame-only", "⤓ speedscope");
    speedscope.title = "the flame graph as shown (zoom included), as speedscope JSON";
    speedscope.addEventListener("click", () => this.exportSpeedscope());
    toolbar.append(this.selectorInput, this.searchInput, this.searchInfo, this.orientButton, this.treeButton, this.groupSelect, this.linesButton, this.colorSelect, pprof, speedscope);
    attachSelectorCompletion(this.selectorInput);

    const main = el("main");
    for (const [view] of VIEW_TITLES) {
      const section = el("section", `view view-${view}`);
      this.sections.set(view, section);
      main.append(section);
    }
    this.buildTransformControls(pprof);
    root.append(header, toolbar, this.timelineEl, this.message, main);
  }

  // Before `before` (the exports) in the toolbar.
  private buildTransformControls(before: HTMLElement): void {
    for (const c of [this.norecButton, this.binInput, this.chips]) c.classList.add("flame-only");
    this.norecButton.title = "collapse recursion: consecutive calls of one function as one box";
    this.norecButton.addEventListener("click", () => this.update({ norec: this.state.norec === "1" ? "" : "1", focus: "" }, true, false));
    this.binInput.placeholder = "binary filter";
    this.binInput.spellcheck = false;
    this.binInput.title = "only the frames of matching binaries (a substring, or /a regex/), the others merged into their callers; Esc clears";
    this.binList.id = "bin-filter-binaries";
    this.binInput.setAttribute("list", this.binList.id);
    this.binInput.addEventListener("change", () => this.update({ bin: this.binInput.value.trim(), focus: "" }, true, false));
    this.binInput.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && this.state.bin) this.update({ bin: "", focus: "" }, true, false);
    });
    this.chips.addEventListener("click", (e) => {
      const b = (e.target as HTMLElement).closest<HTMLElement>("button[data-clear]");
      if (!b) return;
      if (b.dataset.clear === "ffocus") this.update({ ffocus: "", focus: "" }, true, false);
      else {
        const hidden = parseFrames(this.state.hide).filter((_, i) => i !== Number(b.dataset.index));
        this.update({ hide: hidden.length ? JSON.stringify(hidden) : "", focus: "" }, true, false);
      }
    });
    before.before(this.norecButton, this.binInput, this.binList, this.chips);
  }

  private syncTransformControls(s: ViewState): void {
    this.norecButton.textContent = s.norec === "1" ? "↻ recursion collapsed" : "↻ recursion";
    this.norecButton.classList.toggle("active", s.norec === "1");
    if (document.activeElement !== this.binInput) this.binInput.value = s.bin;
    const chip = (label: string, frame: Frame, clear: string, index = 0) =>
      `<span class="chip" title="${escapeHtml(`${frame[0]} ${frame[1]}`)}">${label} <b>${escapeHtml(frame[0])}</b>` +
      `<button class="link" data-clear="${clear}" data-index="${index}" title="remove">×</button></span>`;
    const focused = parseFrame(s.ffocus);
    this.chips.innerHTML =
      (focused ? chip("focus:", focused, "ffocus") : "") + parseFrames(s.hide).map((f, i) => chip("hide:", f, "hide", i)).join("");
  }

  // The binary filter's suggestions: the shown data's binaries, biggest first.
  private syncBinaryList(): void {
    const d = this.profile.data;
    if (d === this.binListOf) return;
    this.binListOf = d;
    this.binList.innerHTML = d
      ? binariesByTotal(d)
          .slice(0, 50)
          .map((b) => `<option value="${escapeHtml(b.binary)}"></option>`)
          .join("")
      : "";
  }

  update(patch: Partial<ViewState>, push: boolean, fetch = true): void {
    this.landing = false;
    this.state = { ...this.state, ...patch };
    const url = writeState(this.state);
    if (push) history.pushState(null, "", url);
    else history.replaceState(null, "", url);
    this.syncControls();
    if (fetch) this.refresh();
    else this.render();
  }

  openInsight(key: string): void {
    this.update({ view: "insights", insight: key }, true);
  }

  valueUnit(d: { unit: string; periodNanos: number } | null): ValueUnit {
    if (d) return { type: this.state.type, unit: d.unit, periodNanos: d.periodNanos };
    return this.typeUnits.get(this.state.type) ?? { type: this.state.type, unit: "samples", periodNanos: 0 };
  }

  private syncControls(): void {
    const s = this.state;
    this.tabs.querySelectorAll<HTMLElement>("button").forEach((b) => b.classList.toggle("active", b.dataset.view === s.view));
    document.querySelectorAll<HTMLElement>("button.preset").forEach((b) =>
      b.classList.toggle("active", s.from === `now-${b.dataset.preset}` && s.to === "now"),
    );
    for (const [view, section] of this.sections) section.hidden = view !== s.view;
    document.body.dataset.view = s.view;
    this.searchInput.placeholder =
      s.view === "insights" ? "search insights  ( / )" : s.view === "energy" ? "search rows  ( / )" : "search functions  ( / )";
    const view = this.views[s.view];
    if (this.shown !== view) {
      this.shown?.release();
      this.shown = view;
    }
    view.show?.(s);
    this.liveBox.checked = s.live;
    this.syncTransformControls(s);
    if (document.activeElement !== this.selectorInput) this.selectorInput.value = s.selector;
    if (document.activeElement !== this.searchInput) this.searchInput.value = s.search;
    this.orientButton.textContent = s.orient === "icicle" ? "▼ icicle" : "▲ flame";
    this.treeButton.textContent = s.tree === "bottom-up" ? "⇅ bottom-up" : "⇅ top-down";
    this.colorSelect.value = s.color;
    this.groupSelect.value = s.group;
    this.linesButton.textContent = s.lines === "1" ? "≡ lines" : "≡ functions";
    // A type from a link (the kernel table's "flame graph") may not be listed yet.
    if (![...this.typeSelect.options].some((o) => o.value === s.type)) this.typeSelect.append(new Option(typeLabel(s.type), s.type));
    this.typeSelect.value = s.type;
    this.rangeText.textContent = rangeLabel(s, Date.now());
    clearInterval(this.liveTimer);
    if (s.live) this.liveTimer = window.setInterval(() => this.refresh(), LIVE_REFRESH_MS);
  }

  private onTimelineRange(fromMs: number, toMs: number): void {
    if (this.views[this.state.view].takeTimelineRange?.(fromMs, toMs)) return;
    this.measurements.selectionStarted();
    this.update({ from: String(fromMs), to: String(toMs), live: false, focus: "" }, true);
  }

  private showMessage(html: string, kind: "error" | "empty" | "" = ""): void {
    this.message.className = `message ${kind}`;
    this.message.innerHTML = html;
    this.message.hidden = !html;
  }

  private async loadTypes(): Promise<void> {
    try {
      const t = await apiGet<TypesJson>("/api/v1/types", {});
      for (const x of t.types) this.typeUnits.set(x.name, { type: x.name, unit: x.unit, periodNanos: x.period_nanos });
      const names = t.types.map((x) => x.name);
      if (!names.includes(this.state.type)) names.unshift(this.state.type);
      this.typeSelect.innerHTML = names.map(typeOption).join("");
      this.typeSelect.value = this.state.type;
    } catch {
      this.typeSelect.innerHTML = typeOption(this.state.type);
    }
  }

  // Loads the timeline and what the shown view needs; errors end up as a
  // message, never as a blank page.
  async refresh(): Promise<void> {
    this.abort?.abort();
    const abort = new AbortController();
    this.abort = abort;
    const signal = abort.signal;
    const s = this.state;
    const view = this.views[s.view];
    const insightsQuery = { from: s.from, to: s.to, selector: s.selector };
    // Landing: the flame graph and the insights are asked at once; with any
    // insight in the range the page switches to them (the flame graph's
    // answer is dropped), else it shows the flame graph.
    const landing = this.landing && s.view === "flame" ? this.insights.get(insightsQuery).catch(() => null) : null;
    try {
      const type = view.timelineType?.(s) ?? s.type;
      const series = apiGet<SeriesJson>("/api/v1/series", { ...commonParams(s), type, max_points: 300 }, signal).then((x) => {
        const u = this.typeUnits.get(type);
        this.timeline.setSeries(x, u ?? { type, unit: unitOfType(type), periodNanos: 0 });
      });
      await Promise.all([series, view.load(s, signal)]);
      if (signal.aborted) return;
      if (landing) {
        const found = await landing;
        if (signal.aborted) return;
        this.landing = false;
        if (found && found.insights.length > 0) {
          this.update({ view: "insights" }, false);
          return;
        }
      }
      this.showMessage("");
      const empty = (await view.emptyMessage?.(s, signal)) ?? "";
      if (empty) this.showMessage(empty, "empty");
      this.render();
      // After the view, so its fetches go first: the insights' bands on the timeline.
      this.insights.get(insightsQuery).then(
        (a) => !signal.aborted && this.timeline.setInsightMarks(marksOf(a.insights)),
        () => !signal.aborted && this.timeline.setInsightMarks([]),
      );
    } catch (e) {
      if (signal.aborted) return;
      const status = e instanceof ApiError ? ` (HTTP ${e.status})` : "";
      this.showMessage(`<b>Could not load data${status}:</b> ${escapeHtml(errorText(e))}`, "error");
    }
  }

  // Draws the shown view from data already loaded.
  private render(): void {
    const s = this.state;
    const view = this.views[s.view];
    view.render(s);
    this.syncBinaryList();
    this.searchInfo.textContent = view.searchInfo?.(s) ?? "";
  }

  private onKey(e: KeyboardEvent): void {
    const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement;
    if (e.key === "/" && !typing) {
      e.preventDefault();
      this.searchInput.focus();
      this.searchInput.select();
    } else if (e.key === "Escape") {
      if (typing) (e.target as HTMLElement).blur();
      if (this.state.focus) this.update({ focus: "" }, false, false);
      this.views[this.state.view].escape?.(this.state);
    }
  }

  private async exportPprof(): Promise<void> {
    try {
      const blob = await apiBlob("/api/v1/profile", { ...commonParams(this.state), format: "pprof", group_by: GROUPS[this.state.group] });
      saveBlob(blob, `warpscope-${this.state.type}.pb.gz`);
    } catch (e) {
      this.showMessage(`<b>Export failed:</b> ${escapeHtml(errorText(e))}`, "error");
    }
  }

  private exportSpeedscope(): void {
    const json = this.profile.speedscope(`warpscope ${this.state.type} ${this.rangeText.textContent}`);
    if (json) saveBlob(new Blob([JSON.stringify(json)], { type: "application/json" }), `warpscope-${this.state.type}.speedscope.json`);
  }
}
