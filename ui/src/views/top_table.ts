// The top-functions table (/api/v1/top): sortable, filterable, and linked to
// the flame graph under it: clicking a row highlights that function there.
import type { TopJson } from "../api/types";
import { escapeHtml } from "../base/dom";
import { KIND_NAMES } from "../flame/model";
import { SortKey } from "../state";

export interface TopTableEvents {
  onSort: (key: SortKey) => void;
  onSelect: (name: string, binary: string) => void;
  onSandwich: (name: string, binary: string) => void;
}

export function renderTopTable(
  el: HTMLElement,
  top: TopJson,
  sort: SortKey,
  filter: string,
  selected: { name: string; binary: string },
  format: (v: number) => string,
  events: TopTableEvents,
): void {
  const f = filter.trim().toLowerCase();
  const rows = top.functions.filter((r) => !f || r.name.toLowerCase().includes(f) || r.binary.toLowerCase().includes(f));
  const cmp: Record<SortKey, (a: TopJson["functions"][0], b: TopJson["functions"][0]) => number> = {
    name: (a, b) => a.name.localeCompare(b.name),
    binary: (a, b) => a.binary.localeCompare(b.binary) || b.self - a.self,
    self: (a, b) => b.self - a.self || b.total - a.total,
    total: (a, b) => b.total - a.total || b.self - a.self,
  };
  rows.sort(cmp[sort]);
  const pct = (v: number) => (top.total > 0 ? `${((100 * v) / top.total).toFixed(2)}%` : "–");
  const th = (key: SortKey, label: string, cls = "") =>
    `<th class="${cls} sortable${sort === key ? " sorted" : ""}" data-sort="${key}">${label}${sort === key ? " ▾" : ""}</th>`;
  const shown = rows.slice(0, 1000);
  el.innerHTML = `<table class="top">
    <thead><tr>${th("self", "Self", "num")}<th class="num">Self %</th>${th("total", "Total", "num")}<th class="num">Total %</th>
      ${th("name", "Function")}${th("binary", "Binary")}<th></th></tr></thead>
    <tbody>${shown
      .map(
        (r, i) => `<tr data-row="${i}" class="${r.name === selected.name && r.binary === selected.binary ? "selected" : ""}">
        <td class="num">${format(r.self)}</td><td class="num">${pct(r.self)}</td>
        <td class="num">${format(r.total)}</td><td class="num">${pct(r.total)}</td>
        <td class="fn" title="${escapeHtml(KIND_NAMES[r.kind] ?? "")}">${escapeHtml(r.name)}</td>
        <td class="muted">${escapeHtml(r.binary)}</td>
        <td><button class="link" data-sandwich="${i}" title="callers and callees">sandwich</button></td></tr>`,
      )
      .join("")}</tbody></table>
    <p class="muted small">${rows.length} of ${top.function_count} functions${rows.length > shown.length ? `, first ${shown.length} shown` : ""}.</p>`;
  el.querySelectorAll<HTMLElement>("th[data-sort]").forEach((h) =>
    h.addEventListener("click", () => events.onSort(h.dataset.sort as SortKey)),
  );
  el.querySelectorAll<HTMLElement>("tbody tr").forEach((tr) =>
    tr.addEventListener("click", (e) => {
      const r = shown[Number(tr.dataset.row)];
      if ((e.target as HTMLElement).dataset.sandwich !== undefined) events.onSandwich(r.name, r.binary);
      else events.onSelect(r.name, r.binary);
    }),
  );
}
