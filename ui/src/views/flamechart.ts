// The flame chart view (`view=flamechart`): the busiest threads' stacks in
// time order (/api/v1/flamechart, group_by=pid,comm,thread), one lane each;
// a click on a box selects its time span, right-click opens its sandwich;
// the flame graph's transforms (focus, hide, binary filter, recursion) apply.
// The canvases: flame/flamechart.ts; the boxes: flame/chartmodel.ts.
import { apiGet, apiUrl } from "../api/client";
import type { FlameChartJson } from "../api/types";
import { el, escapeHtml } from "../base/dom";
import { buildChart } from "../flame/chartmodel";
import { FlameChart, formatSpan } from "../flame/flamechart";
import { transformChart } from "../flame/transforms";
import { ViewState, commonParams } from "../state";
import { isRelative, resolveTime } from "../time";
import { blankMeaning, valueNoun } from "../units";
import { emptyMessage, noSamplesHtml } from "./empty";
import { Shell, View, openSandwich } from "./view";

// At most this range (longer ones are not fetched) and this many threads (the busiest).
const MAX_CHART_MS = 15 * 60e3;
const MAX_CHART_LANES = 32;

export class FlameChartView implements View {
  private head = el("div", "flamechart-head");
  private panel = el("div", "flamechart-panel");
  private chart: FlameChart;
  private key = "";
  private tooLong = false;
  private raw: FlameChartJson | null = null; // the answer, before the transforms
  private builtFor = ""; // the transforms the chart was built with

  constructor(
    section: HTMLElement,
    private shell: Shell,
  ) {
    section.append(this.head, this.panel);
    this.chart = new FlameChart(this.panel, {
      onSelectRange: (from, to) => shell.update({ from: String(from), to: String(to), live: false, focus: "" }, true),
      onContext: openSandwich(shell),
    });
  }

  // A range over MAX_CHART_MS is not fetched (emptyMessage says why and offers the last minute).
  async load(s: ViewState, signal: AbortSignal): Promise<void> {
    const now = Date.now();
    const from = resolveTime(s.from, now);
    const to = resolveTime(s.to, now);
    this.tooLong = from !== null && to !== null && to - from > MAX_CHART_MS;
    if (this.tooLong) {
      this.chart.setData(null, s.color);
      this.key = "";
      this.raw = null;
      return;
    }
    const params = { ...commonParams(s), group_by: "pid,comm,thread", max_lanes: MAX_CHART_LANES };
    const key = apiUrl("", params);
    if (key === this.key && this.chart.getData() && !isRelative(s.from) && !isRelative(s.to)) return;
    let json: FlameChartJson;
    try {
      json = await apiGet<FlameChartJson>("/api/v1/flamechart", params, signal);
    } catch (e) {
      if (!signal.aborted) {
        // No stale chart under the error (a range with too many points).
        this.chart.setData(null, s.color);
        this.key = "";
        this.raw = null;
        this.chart.draw();
      }
      throw e;
    }
    if (signal.aborted) return;
    this.raw = json;
    this.key = key;
    this.build(s);
  }

  // The chart of the answer under the flame graph's transforms (focus, hide,
  // binary filter, collapsed recursion: flame/transforms.ts).
  private build(s: ViewState): void {
    if (!this.raw) return;
    const t0 = performance.now();
    const data = buildChart(transformChart(this.raw, s));
    const perf = this.shell.measurements.perf;
    perf.chartBuildMs = performance.now() - t0;
    perf.chartBoxes = data.boxes;
    this.builtFor = transformKey(s);
    this.chart.setData(data, s.color);
  }

  async emptyMessage(s: ViewState, signal: AbortSignal): Promise<string> {
    if (this.tooLong) {
      // The shell handles data-action=last-minute.
      return `<b>The flame chart shows up to 15 minutes of samples per thread.</b> Drag across the timeline to select a shorter range, or
        <button class="link" data-action="last-minute">show the last minute of this range</button>.`;
    }
    const chart = this.chart.getData();
    if (chart === null || (chart.lanes.length > 0 && chart.total > 0)) return "";
    return emptyMessage(noSamplesHtml(s.selector, "Try another range of up to 15 minutes", "; the flame graph shows longer ones."), signal);
  }

  render(s: ViewState): void {
    if (this.raw && this.key && transformKey(s) !== this.builtFor) this.build(s);
    this.chart.setColorMode(s.color);
    this.chart.setSearch(s.search);
    this.chart.draw();
    this.shell.measurements.perf.chartDrawMs = this.chart.lastDrawMs;
    const d = this.chart.getData();
    this.head.innerHTML = `<span class="muted small">Each thread's stacks in time order, root on top${
      d && d.lanes.length ? `, in ${escapeHtml(formatSpan(d.bucketMs))} buckets` : ""
    }; blank: ${blankMeaning(s.type)}. Click a box to select its time span; right-click for its callers and callees (sandwich).</span>`;
  }

  searchInfo(s: ViewState): string {
    const share = s.search ? this.chart.searchShare() : null;
    if (share === null) return "";
    return `${this.chart.matchedDrawn} boxes · ${(100 * share).toFixed(2)}% of the ${valueNoun(this.shell.valueUnit(null))} shown`;
  }

  release(): void {}
}

function transformKey(s: ViewState): string {
  return JSON.stringify([s.ffocus, s.hide, s.bin.trim(), s.norec]);
}
