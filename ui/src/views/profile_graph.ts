// The merged profile of the range and selector (/api/v1/profile) and the
// flame graph that draws it. One instance serves three views: the flame
// view shows it, the top functions show it under their table (the panel
// moves into their section while they are shown, and back to the flame
// view's, its home, after), the sandwich computes from its data. Absolute
// ranges are fetched once; relative ones move with now.
//
// What the graph draws is the server's tree through the state's transforms
// (flame/transforms.ts: focus on a function, hidden frames, the binary
// filter, collapsed recursion, bottom-up), each cached on its input and
// keys. A right-click on a box opens its menu (sandwich, focus, hide, copy
// the name); `f` and `h` focus on and hide the box under the mouse. A
// colour legend sits under the graph.
//
// For the end-to-end test the panel (`.flame-panel`) carries data-version
// (each draw), data-total (the root's value), data-focus-total (the
// zoomed node's) and data-nodes (the shown tree's nodes).
import { apiGet, apiUrl } from "../api/client";
import type { ProfileJson } from "../api/types";
import { el, escapeHtml } from "../base/dom";
import { Matches, searchSummary, toSpeedscope } from "../flame/analysis";
import { FlameGraph } from "../flame/flamegraph";
import { FlameData, findPath, foldedAway, fromProfile, pathOf } from "../flame/model";
import { GROUPS, ViewState, commonParams } from "../state";
import { formatTime, isRelative, resolveTime, wholeSeconds } from "../time";
import { formatValue, isPerSecondType, quantityNoun } from "../units";
import { emptyMessage, noSamplesHtml } from "./empty";
import { Shell, openSandwich } from "./view";
import { legendItems } from "../flame/colors";
import { Frame, TransformPipeline, binariesByTotal, frameOf, parseFrames } from "../flame/transforms";
import { copyText, openBoxMenu } from "./box_menu";

// Nodes of a flame-graph answer: the default, and what "show all" asks for
// (the server's most, ApiOptions::max_max_nodes).
export const DEFAULT_MAX_NODES = 20000;
export const ALL_NODES = 200000;
export function maxNodesOf(s: ViewState): number {
  return s.nodes === "all" ? ALL_NODES : DEFAULT_MAX_NODES;
}

// gpu_time, off_cpu, gpu_wait and gpu_energy are stored per second (the agent's
// windows): an absolute range that is not whole seconds asks for the
// seconds it touches, or a sub-second range (a drag across a few kernels)
// would find nothing. Empty when the range is relative or already whole.
export function perSecondRange(s: ViewState): { from?: string; to?: string } {
  if (!isPerSecondType(s.type) || isRelative(s.from) || isRelative(s.to)) return {};
  const from = resolveTime(s.from, Date.now());
  const to = resolveTime(s.to, Date.now());
  if (from === null || to === null) return {};
  const [wf, wt] = wholeSeconds(from, to);
  return wf === from && wt === to ? {} : { from: String(wf), to: String(wt) };
}

// "off-CPU time" → "Off-CPU time".
function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export class ProfileGraph {
  readonly panel = el("div", "flame-panel");
  readonly graph: FlameGraph;
  data: FlameData | null = null; // as the server sent it
  // What the graph draws: the data through the state's transforms.
  private shownData: FlameData | null = null;
  private pipeline = new TransformPipeline();
  private topDownPipeline = new TransformPipeline();
  private legend = el("div", "flame-legend");
  private legendOf: [FlameData | null, string] = [null, ""];
  private state: ViewState | null = null; // the last drawn, for the menu's actions
  private key = "";

  constructor(
    private home: HTMLElement,
    private shell: Shell,
  ) {
    this.graph = new FlameGraph(this.panel, {
      format: (v) => this.format(v),
      onZoom: (n) => this.zoomTo(n),
      onContext: (name, binary, kind, e) => this.openMenu([name, binary, kind], e),
    });
    this.panel.append(this.legend);
    document.addEventListener("keydown", (e) => {
      const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement;
      const d = this.shownData;
      const node = this.graph.hovered;
      if (typing || e.ctrlKey || e.metaKey || e.altKey || !d || node <= 0 || node >= d.n || !this.panel.offsetParent) return;
      const frame = frameOf(d, node);
      if (e.key === "f") this.focusOn(frame);
      else if (e.key === "h") this.hide(frame);
    });
  }

  private openMenu(frame: Frame, e: MouseEvent): void {
    openBoxMenu(e, frame[0], [
      { label: "Sandwich", key: "s", action: () => openSandwich(this.shell)(frame[0], frame[1]) },
      { label: "Focus on function", key: "f", action: () => this.focusOn(frame) },
      { label: "Hide frame", key: "h", action: () => this.hide(frame) },
      { label: "Copy name", key: "c", action: () => void copyText(frame[0]) },
    ]);
  }

  // Every stack through the function, the function as the one root child (state `ffocus`).
  focusOn(frame: Frame): void {
    this.shell.update({ ffocus: JSON.stringify(frame), focus: "" }, true, false);
  }

  // The frame taken out of every stack (state `hide`, a list).
  hide(frame: Frame): void {
    const hidden = parseFrames(this.state?.hide ?? "");
    if (hidden.some((f) => f[0] === frame[0] && f[1] === frame[1] && f[2] === frame[2])) return;
    this.shell.update({ hide: JSON.stringify([...hidden, frame]), focus: "" }, true, false);
  }

  // Values as the profile's unit reads: CPU samples with their time,
  // nanoseconds (gpu_time, off_cpu, gpu_wait, or CPU profiles of agents at different
  // frequencies) as time, microjoules (gpu_energy) as joules.
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

  // The tree the graph draws (the data through the transforms); null before any data.
  get shown(): FlameData | null {
    return this.shownData;
  }

  // The data through the transforms but top-down whatever `tree` says (the
  // sandwich's and the table's input); null before any data.
  topDown(s: ViewState): FlameData | null {
    return this.data ? this.topDownPipeline.apply(this.data, { ...s, tree: "" }) : null;
  }

  private updateShown(s: ViewState): void {
    this.state = s;
    const shown = this.data ? this.pipeline.apply(this.data, s) : null;
    if (shown === this.shownData) return;
    this.shownData = shown;
    if (shown) this.graph.setData(shown, s.color);
  }

  private drawLegend(s: ViewState): void {
    const d = this.shownData;
    if (this.legendOf[0] === d && this.legendOf[1] === s.color) return;
    this.legendOf = [d, s.color];
    const items = d ? legendItems(d, s.color, binariesByTotal(d)) : [];
    this.legend.innerHTML = items.length
      ? `<span class="muted">${s.color === "kind" ? "by kind" : "by binary"}:</span> ` +
        items
          .map((i) => `<span class="legend-item">${i.light ? `<span class="sw" style="--light:${i.light};--dark:${i.dark}"></span>` : ""}${escapeHtml(i.label)}</span>`)
          .join("")
      : "";
    this.legend.dataset.mode = s.color;
    this.legend.dataset.items = String(items.length);
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
    this.panel.dataset.nodes = d ? String(d.n) : "0";
    this.drawLegend(s);
  }

  // Says so when the server folded nodes into "other" boxes, and offers the
  // whole graph; "" when nothing was folded.
  foldedNote(s: ViewState): string {
    const d = this.data;
    const widened = perSecondRange(s);
    const secondsNote = widened.from
      ? `<span class="folded-note">${capitalized(quantityNoun(s.type))} is counted per second: this graph covers ${formatTime(Number(widened.from))} – ${formatTime(Number(widened.to))}, the whole seconds around the range.</span> `
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
