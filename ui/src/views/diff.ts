// The diff view (`view=diff`): the range against a base (/api/v1/diff), red
// where a function's share grew, green where it shrank. The base is
// base_from/base_to, or the range of the same length just before; "Pick
// base range" makes the timeline's next drag the base, shaded there. Under
// the graph, the functions whose self share changed most (flame/diff_table.ts).
import { apiGet } from "../api/client";
import type { DiffJson } from "../api/types";
import { el, escapeHtml } from "../base/dom";
import { searchMatches, searchSummary } from "../flame/analysis";
import { FlameGraph } from "../flame/flamegraph";
import { diffTable } from "../flame/diff_table";
import { FlameData, fromDiff } from "../flame/model";
import { diffBase } from "../range";
import { ViewState, commonParams } from "../state";
import { formatTime, resolveTime } from "../time";
import { formatValue } from "../units";
import { Shell, View } from "./view";

const MAX_NODES = 20000;

export class DiffView implements View {
  private info = el("div", "diff-info");
  private table = el("div", "diff-table");
  private pickButton = el("button", "pick-base", "Pick base range");
  private baseSelector = el("input", "base-selector") as HTMLInputElement;
  private picking = false; // the timeline's next drag sets the base
  private graph: FlameGraph;
  private diff: FlameData | null = null;
  private state: ViewState | null = null; // as last shown

  constructor(
    section: HTMLElement,
    private shell: Shell,
  ) {
    const head = el("div", "diff-head");
    const controls = el("div", "diff-controls");
    const panel = el("div", "flame-panel");
    this.pickButton.title = "then drag across the timeline: that range becomes the base";
    this.pickButton.addEventListener("click", () => this.setPicking(!this.picking));
    this.baseSelector.placeholder = "base selector, e.g. {pod=\"old\"} (empty: the target's)";
    this.baseSelector.spellcheck = false;
    this.baseSelector.title = "compare two label sets: the base's selector; with no base range, both over the same range";
    this.baseSelector.addEventListener("change", () => this.shell.update({ base_selector: this.baseSelector.value.trim() }, true));
    controls.append(this.pickButton, this.baseSelector);
    head.append(controls, this.info);
    section.append(head, panel, this.table);
    this.graph = new FlameGraph(panel, { format: (v) => this.format(v) });
  }

  private format(v: number): string {
    return formatValue(v, this.shell.valueUnit(this.diff));
  }

  show(s: ViewState): void {
    this.state = s;
    if (document.activeElement !== this.baseSelector) this.baseSelector.value = s.base_selector;
    this.syncPicking();
  }

  async load(s: ViewState, signal: AbortSignal): Promise<void> {
    const now = Date.now();
    const [baseFrom, baseTo] = diffBase(s, now);
    const base = { base_from: baseFrom, base_to: baseTo, base_selector: s.base_selector || undefined };
    const json = await apiGet<DiffJson>("/api/v1/diff", { ...commonParams(s), ...base, max_nodes: MAX_NODES }, signal);
    this.diff = fromDiff(json);
    this.graph.setData(this.diff, "binary");
    const t = (x: string) => {
      const ms = resolveTime(x, now);
      return ms === null ? escapeHtml(x) : formatTime(ms);
    };
    const amount = (v: number) => (this.diff?.unit === "samples" ? `${v.toLocaleString("en-US")} samples` : this.format(v));
    const sel = (x: string) => (x ? ` <code>${escapeHtml(x)}</code>` : "");
    this.info.innerHTML = `<p>Base <b>${t(baseFrom)} – ${t(baseTo)}</b>${sel(s.base_selector || s.selector)} (<span class="base-total">${amount(json.base_total)}</span>)
      against <b>${t(s.from)} – ${t(s.to)}</b>${sel(s.selector)} (<span class="target-total">${amount(json.target_total)}</span>).
      Width: both shares together; <span class="grew">red</span>: a larger share of the target, <span class="shrank">green</span>: smaller.
      Set the base with <b>Pick base range</b> and a drag across the timeline, with the URL's
      <code>base_from</code>/<code>base_to</code>, or <button class="link" id="base-now">use the range before this one</button>.</p>`;
    this.info.querySelector("#base-now")!.addEventListener("click", () => this.shell.update({ base_from: "", base_to: "" }, true));
    this.renderTable();
  }

  private renderTable(): void {
    const rows = this.diff ? diffTable(this.diff, 50) : [];
    const pct = (x: number) => `${(100 * x).toFixed(2)}%`;
    this.table.innerHTML = rows.length
      ? `<h4 class="small">Largest changes of self share</h4><table class="top"><thead><tr><th>Function</th><th>Binary</th>
          <th class="num">base</th><th class="num">target</th><th class="num">change</th></tr></thead><tbody>${rows
            .map(
              (r) => `<tr><td class="fn">${escapeHtml(r.name)}</td><td class="muted">${escapeHtml(r.binary)}</td>
                <td class="num">${pct(r.base)}</td><td class="num">${pct(r.target)}</td>
                <td class="num ${r.change > 0 ? "grew" : r.change < 0 ? "shrank" : ""}">${r.change > 0 ? "+" : ""}${(100 * r.change).toFixed(2)} pp</td></tr>`,
            )
            .join("")}</tbody></table>`
      : "";
  }

  render(s: ViewState): void {
    this.graph.setInverted(s.orient === "flame");
    this.graph.setMatches(this.diff ? searchMatches(this.diff, s.search) : null);
    this.graph.draw();
  }

  searchInfo(s: ViewState): string {
    return searchSummary(this.diff, s.search);
  }

  escape(): void {
    if (this.picking) this.setPicking(false);
  }

  takeTimelineRange(fromMs: number, toMs: number): boolean {
    if (!this.picking) return false;
    this.picking = false;
    this.shell.update({ base_from: String(fromMs), base_to: String(toMs) }, true);
    return true;
  }

  release(): void {
    this.state = null;
    this.setPicking(false);
  }

  private setPicking(on: boolean): void {
    this.picking = on;
    this.syncPicking();
  }

  // The button, the timeline's cursor, and the base shaded on the timeline while the view is shown.
  private syncPicking(): void {
    const on = this.picking;
    this.pickButton.classList.toggle("active", on);
    this.pickButton.setAttribute("aria-pressed", String(on));
    this.pickButton.textContent = on ? "Drag across the timeline to pick the base (Esc cancels)" : "Pick base range";
    this.shell.timeline.setPicking(on);
    const now = Date.now();
    const base = this.state ? diffBase(this.state, now) : null;
    const a = base ? resolveTime(base[0], now) : null;
    const b = base ? resolveTime(base[1], now) : null;
    this.shell.timeline.setShade(a !== null && b !== null ? [a, b] : null);
  }
}
