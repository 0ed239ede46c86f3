// The top functions view (`view=table`): the /api/v1/top table (sorted by
// `sort`, filtered by the search box) over the profile's flame graph; a row
// click selects the function (`fn`, `fnbin`) and highlights it in the graph,
// "sandwich" opens its sandwich. The table itself: top_table.ts.
import { apiGet } from "../api/client";
import type { TopJson } from "../api/types";
import { el } from "../base/dom";
import { functionMatches, searchMatches } from "../flame/analysis";
import { reshapes, topOfTree } from "../flame/transforms";
import { SortKey, ViewState, commonParams } from "../state";
import { ProfileGraph } from "./profile_graph";
import { renderTopTable } from "./top_table";
import { Shell, View } from "./view";

export class TableView implements View {
  private tableEl = el("div", "table-wrap");
  private top: TopJson | null = null;

  constructor(
    private section: HTMLElement,
    private profile: ProfileGraph,
    private shell: Shell,
  ) {
    section.append(this.tableEl);
  }

  show(): void {
    this.profile.moveTo(this.section);
  }

  async load(s: ViewState, signal: AbortSignal): Promise<void> {
    const top = apiGet<TopJson>("/api/v1/top", { ...commonParams(s), limit: 2000, sort: "self" }, signal).then((t) => {
      this.top = t;
    });
    await Promise.all([this.profile.load(s, signal), top]);
  }

  emptyMessage(s: ViewState, signal: AbortSignal): Promise<string> {
    return this.profile.emptyMessage(s, signal);
  }

  render(s: ViewState): void {
    this.profile.draw(s, (d) => (s.fn ? functionMatches(d, s.fn, s.fnbin) : searchMatches(d, s.search)));
    if (!this.top) return;
    const update = this.shell.update.bind(this.shell);
    // Under focus, hide, binary filter or collapsed recursion the server's
    // table no longer matches the graph: the table of the shown tree does.
    const tree = reshapes(s) ? this.profile.topDown(s) : null;
    const transformed = tree !== null;
    const top: TopJson = tree ? { ...this.top, ...topOfTree(tree) } : this.top;
    this.tableEl.dataset.source = transformed ? "graph" : "server";
    this.tableEl.dataset.rows = String(top.functions.length);
    renderTopTable(this.tableEl, top, s.sort, s.search, { name: s.fn, binary: s.fnbin }, (v) => this.profile.format(v), {
      onSort: (key: SortKey) => update({ sort: key }, false, false),
      onSelect: (name, binary) => update({ fn: name, fnbin: binary }, false, false),
      onSandwich: (name, binary) => update({ view: "sandwich", fn: name, fnbin: binary }, true),
    });
    if (tree) {
      const note = el("p", "muted small table-source");
      note.textContent =
        "Under the flame graph's transforms: the table of its tree" +
        (tree.truncated > 0 ? ` (${tree.truncated.toLocaleString("en-US")} folded nodes are in no row).` : ".");
      this.tableEl.prepend(note);
    }
  }

  searchInfo(s: ViewState): string {
    return this.profile.searchInfo(s);
  }

  release(): void {
    this.profile.moveHome();
  }
}
