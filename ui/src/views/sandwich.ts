// The sandwich view (`view=sandwich`): one function's callers above (root
// at the bottom, each caller chain merged) and callees below, over every
// place it occurs in the profile (`fn`, `fnbin`), after the flame graph's
// transforms; right-click goes on to another function's sandwich.
import { el, escapeHtml } from "../base/dom";
import { sandwich } from "../flame/analysis";
import { FlameGraph } from "../flame/flamegraph";
import { ViewState } from "../state";
import { ProfileGraph } from "./profile_graph";
import { Shell, View, openSandwich } from "./view";

export class SandwichView implements View {
  private head = el("div", "sandwich-head");
  private callers: FlameGraph;
  private callees: FlameGraph;

  constructor(
    section: HTMLElement,
    private profile: ProfileGraph,
    shell: Shell,
  ) {
    const callersPanel = el("div", "flame-panel");
    const calleesPanel = el("div", "flame-panel");
    section.append(this.head, el("h4", "muted", "Callers ↑"), callersPanel, el("h4", "muted", "Callees ↓"), calleesPanel);
    const options = { format: (v: number) => profile.format(v), onContext: openSandwich(shell) };
    this.callers = new FlameGraph(callersPanel, options);
    this.callers.setInverted(true);
    this.callees = new FlameGraph(calleesPanel, options);
  }

  load(s: ViewState, signal: AbortSignal): Promise<void> {
    return this.profile.load(s, signal);
  }

  emptyMessage(s: ViewState, signal: AbortSignal): Promise<string> {
    return this.profile.emptyMessage(s, signal);
  }

  render(s: ViewState): void {
    // Over the data through the graph's transforms (focus, hide, binary
    // filter, collapsed recursion), so the sandwich agrees with the graph.
    const d = this.profile.topDown(s);
    if (!d) return;
    const sw = s.fn ? sandwich(d, s.fn, s.fnbin) : null;
    if (!s.fn) {
      this.head.innerHTML = `<div class="empty">Pick a function: <b>sandwich</b> on a row of Top functions shows who calls it and what it calls.</div>`;
    } else if (!sw) {
      this.head.innerHTML = `<div class="empty"><b>${escapeHtml(s.fn)}</b> has no samples in this range.</div>`;
    } else {
      const format = (v: number) => this.profile.format(v);
      const pct = (v: number) => `${((100 * v) / (d.total[0] || 1)).toFixed(2)}%`;
      this.head.innerHTML = `<h3 class="fn">${escapeHtml(s.fn)} <span class="muted small">${escapeHtml(s.fnbin)}</span></h3>
        <p class="sandwich-numbers">self <b>${format(sw.self)}</b> (<b>${pct(sw.self)}</b>) · total <b>${format(sw.total)}</b>
        (<b>${pct(sw.total)}</b>) of ${format(d.total[0])}</p>`;
    }
    this.callers.setData(sw ? sw.callers : null, s.color);
    this.callees.setData(sw ? sw.callees : null, s.color);
    this.callers.draw();
    this.callees.draw();
  }

  searchInfo(s: ViewState): string {
    return this.profile.searchInfo(s);
  }

  release(): void {}
}
