// The merged profile of the range and selector (/api/v1/profile) and the
// flame graph that draws it. One instance serves three views: the flame
// view shows it, the top functions show it under their table (the panel
// moves into their section while they are shown, and back to the flame
// view's, its home, after), the sandwich computes from its data. Absolute
// ranges are fetched once; relative ones move with now.
//
// For the end-to-end test the panel (`.flame-panel`) carries data-version
// (each draw), data-total (the root's value) and data-focus-total (the
// zoomed node's).
import { apiGet, apiUrl } from "../api/client";
import type { ProfileJson } from "../api/types";
import { el } from "../base/dom";
import { Matches, searchSummary, toSpeedscope } from "../flame/analysis";
import { FlameGraph } from "../flame/flamegraph";
import { FlameData, findPath, foldedAway, fromProfile, inverted, pathOf } from "../flame/model";
import { GROUPS, ViewState, commonParams } from "../state";
import { formatTime, isRelative, resolveTime, wholeSeconds } from "../time";
import { formatValue } from "../units";
import { emptyMessage, noSamplesHtml } from "./empty";
import { Shell, openSandwich } from "./view";

// Nodes of a flame-graph answer: the default, and what "show all" asks for
// (the server's most, ApiOptions::max_max_nodes).
export const DEFAULT_MAX_NODES = 20000;
export const ALL_NODES = 200000;
export function maxNodesOf(s: ViewState): number {
  return s.nodes === "all" ? ALL_NODES : DEFAULT_MAX_NODES;
}

// gpu_time is stored per second (the agent's windows): an absolute range
// that is not whole seconds asks for the seconds it touches, or a
// sub-second range (a drag across a few kernels) would find nothing.
// Empty when the range is relative or already whole.
export function perSecondRange(s: ViewState): { from?: string; to?: string } {
  if (s.type !== "gpu_time" || isRelative(s.from) || isRelative(s.to)) return {};
  const from = resolveTime(s.from, Date.now());
  const to = resolveTime(s.to, Date.now());
  if (from === null || to === null) return {};
  const [wf, wt] = wholeSeconds(from, to);
  return wf === from && wt === to ? {} : { from: String(wf), to: String(wt) };
}

export class ProfileGraph {
  readonly panel = el("div", "flame-panel");
  readonly graph: FlameGraph;
  data: FlameData | null = null; // as the server sent it
  // What the graph draws: the data, or its bottom-up tree (state `tree`).
  private shownData: FlameData | null = null;
  private shownFrom: FlameData | null = null;
  private shownTree = "";
  private key = "";

  constructor(
    private home: HTMLElement,
    private shell: Shell,
  ) {
    this.graph = new FlameGraph(this.panel, { format: (v) => this.format(v), onZoom: (n) => this.zoomTo(n), onContext: openSandwich(shell) });
  }

  // Values as the profile's unit reads: CPU samples with their time,
  // nanoseconds (gpu_time, or CPU profiles of agents at different
  // frequencies) as time.
  format(v: number): string {
    return formatValue(v, this.shell.valueUnit(this.data));
  }

  async load(s: ViewState, signal: AbortSignal): Promise<void> {
    const params = { ...commonParams(s), ...perSecondRange(s), format: "json", max_nodes: maxNodesOf(s), group_by: GROUPS[s.group] };
    const key = apiUrl("", params);
    if (key === this.key && this.data && !isRelative(s.from) && !isRelative(s.to)) return;
    const json = await apiGet<ProfileJson>("/api/v1/profile", params, signal);
    if (signal.aborted) return;
    const t0 = performance.now();
    this.data = fromProfile(json);
    const perf = this.shell.measurements.perf;
    perf.buildMs = performance.now() - t0;
    perf.nodes = this.data.n;
    this.key = key;
    this.updateShown(s);
  }

  async emptyMessage(s: ViewState, signal: AbortSignal): Promise<string> {
    if (!this.data || this.data.total[0] !== 0) return "";
    return emptyMessage(noSamplesHtml(s.selector, "Try a longer range (24h)", "."), signal);
  }

  // After what the section already holds.
  moveTo(section: HTMLElement): void {
    if (this.panel.parentElement !== section) section.append(this.panel);
  }

  moveHome(): void {
    this.moveTo(this.home);
  }

  // The tree the graph draws (the data, or its bottom-up tree); null before any data.
  get shown(): FlameData | null {
    return this.shownData;
  }

  private updateShown(s: ViewState): void {
    if (this.shownFrom === this.data && this.shownTree === s.tree) return;
    this.shownFrom = this.data;
    this.shownTree = s.tree;
    this.shownData = this.data && s.tree === "bottom-up" ? inverted(this.data) : this.data;
    if (this.shownData) this.graph.setData(this.shownData, s.color);
  }

  // `highlight`: what stands out (the search's matches, or the table's function).
  draw(s: ViewState, highlight: (d: FlameData) => Matches | null): void {
    this.updateShown(s);
    const d = this.shownData;
    this.graph.setColorMode(s.color);
    this.graph.setInverted(s.orient === "flame");
    if (d) {
      this.graph.setFocus(findPath(d, s.focus));
      this.graph.setMatches(highlight(d));
    }
    this.graph.draw();
    this.panel.dataset.version = String(this.shell.measurements.flameDrawn(this.graph.lastDrawMs));
    this.panel.dataset.total = d ? String(d.total[0]) : "0";
    this.panel.dataset.focusTotal = d ? String(d.total[this.graph.getFocus()]) : "0";
  }

  // Says so when the server folded nodes into "other" boxes, and offers the
  // whole graph; "" when nothing was folded.
  foldedNote(s: ViewState): string {
    const d = this.data;
    const widened = perSecondRange(s);
    const secondsNote = widened.from
      ? `<span class="folded-note">GPU time is counted per second: this graph covers ${formatTime(Number(widened.from))} – ${formatTime(Number(widened.to))}, the whole seconds around the range.</span> `
      : "";
    if (!d || d.truncated === 0) return secondsNote;
    const { nodes, value } = foldedAway(d);
    const share = d.total[0] > 0 ? (100 * value) / d.total[0] : 0;
    const more =
      s.nodes === "all"
        ? `(the most the server sends)`
        : `<button class="link" data-action="all-nodes">show all (up to ${ALL_NODES.toLocaleString("en-US")} nodes)</button>`;
    return secondsNote + `<span class="folded-note">${nodes.toLocaleString("en-US")} nodes, ${share.toFixed(1)}% of the total, are folded into grey “other” boxes to keep the graph at ${maxNodesOf(s).toLocaleString("en-US")} nodes; ${more}</span>`;
  }

  searchInfo(s: ViewState): string {
    return searchSummary(this.data, s.search);
  }

  zoomTo(node: number): void {
    if (!this.shownData) return;
    this.shell.update({ focus: node === 0 ? "" : pathOf(this.shownData, node) }, false, false);
  }

  // The graph as shown (zoom included) in speedscope's format; null before any data.
  speedscope(title: string): object | null {
    return this.shownData ? toSpeedscope(this.shownData, this.graph.getFocus(), title) : null;
  }
}
