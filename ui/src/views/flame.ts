// The flame graph view (`view=flame`): the profile's graph (icicle or flame,
// `orient`), zoomed to `focus` with a breadcrumb back up, the search's
// matches highlighted.
import { el, escapeHtml } from "../base/dom";
import { searchMatches } from "../flame/analysis";
import { ViewState } from "../state";
import { ProfileGraph } from "./profile_graph";
import { Shell, View } from "./view";

export class FlameView implements View {
  private breadcrumb = el("div", "breadcrumb");
  private folded = el("div", "folded small");

  constructor(
    section: HTMLElement,
    private profile: ProfileGraph,
    private shell: Shell,
  ) {
    section.append(this.folded, this.breadcrumb);
    this.folded.addEventListener("click", (e) => {
      if ((e.target as HTMLElement).closest("[data-action=all-nodes]")) this.shell.update({ nodes: "all" }, true);
    });
    this.profile.moveHome(); // this section, under the breadcrumb
  }

  load(s: ViewState, signal: AbortSignal): Promise<void> {
    return this.profile.load(s, signal);
  }

  emptyMessage(s: ViewState, signal: AbortSignal): Promise<string> {
    return this.profile.emptyMessage(s, signal);
  }

  render(s: ViewState): void {
    this.profile.draw(s, (d) => searchMatches(d, s.search));
    this.folded.innerHTML = this.profile.foldedNote(s);
    this.renderBreadcrumb();
  }

  searchInfo(s: ViewState): string {
    return this.profile.searchInfo(s);
  }

  release(): void {}

  private renderBreadcrumb(): void {
    const d = this.profile.shown;
    const f = this.profile.graph.getFocus();
    if (!d || f === 0) {
      this.breadcrumb.innerHTML = `<span class="muted small">Click a box to zoom in; right-click for its menu (sandwich, focus on the function, hide the frame, copy the name), or <kbd>f</kbd> / <kbd>h</kbd> over a box to focus on it or hide it; Esc resets.</span>`;
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
    this.breadcrumb
      .querySelectorAll<HTMLElement>("button")
      .forEach((b) => b.addEventListener("click", () => this.profile.zoomTo(Number(b.dataset.node))));
  }
}
