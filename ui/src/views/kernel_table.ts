// The kernel table (/api/v1/gpu/kernels): one row per kernel (and memcpy,
// memset) in the range, sortable, filtered by the search box. A click on a
// row selects the kernel (its bars stand out in the stream timeline);
// "flame graph" opens the gpu_time flame graph searching for it.
// For the end-to-end test each row carries data-name, data-launches,
// data-total-ns, data-mean-ns, data-p50-ns and data-p95-ns (the answer's
// numbers, unformatted).
import { escapeHtml } from "../base/dom";
import type { KernelRow, KernelsJson } from "../api/types";
import { formatDim } from "../gpu/kernel_api";
import { formatNanos } from "../time";

export type KernelSortKey = "name" | "launches" | "total" | "mean" | "p50" | "p95" | "max";

export interface KernelTableEvents {
  onSort: (key: KernelSortKey) => void;
  onSelect: (name: string) => void; // "" clears
  onFlame: (name: string) => void;
  onSource: (row: KernelRow) => void; // inside the kernel (gpu_pc)
}

const MAX_ROWS = 1000;

export function kernelLabel(k: KernelRow): string {
  return k.name || `[${k.kind}]`;
}

const CMP: Record<KernelSortKey, (a: KernelRow, b: KernelRow) => number> = {
  name: (a, b) => kernelLabel(a).localeCompare(kernelLabel(b)),
  launches: (a, b) => b.launches - a.launches || b.total_ns - a.total_ns,
  total: (a, b) => b.total_ns - a.total_ns,
  mean: (a, b) => b.mean_ns - a.mean_ns,
  p50: (a, b) => b.p50_ns - a.p50_ns,
  p95: (a, b) => b.p95_ns - a.p95_ns,
  max: (a, b) => b.max_ns - a.max_ns,
};

export function renderKernelTable(
  el: HTMLElement,
  json: KernelsJson,
  sort: KernelSortKey,
  filter: string,
  selected: string,
  events: KernelTableEvents,
): void {
  const f = filter.trim().toLowerCase();
  const rows = json.kernels.filter((k) => !f || kernelLabel(k).toLowerCase().includes(f) || k.system_name.toLowerCase().includes(f));
  rows.sort(CMP[sort] ?? CMP.total);
  const shown = rows.slice(0, MAX_ROWS);
  const th = (key: KernelSortKey, label: string, cls = "num") =>
    `<th class="${cls} sortable${sort === key ? " sorted" : ""}" data-sort="${key}">${label}${sort === key ? " ▾" : ""}</th>`;
  const maxShare = Math.max(...shown.map((k) => k.share), 1e-9);
  el.innerHTML = `<table class="top kernels">
    <thead><tr>${th("name", "Kernel", "")}${th("launches", "Launches")}${th("total", "Total")}${th("mean", "Mean")}${th("p50", "p50")}${th(
      "p95",
      "p95",
    )}${th("max", "Max")}<th>Grid</th><th>Block</th><th class="share">Share</th><th></th></tr></thead>
    <tbody>${shown
      .map((k, i) => {
        const label = kernelLabel(k);
        const title = [k.system_name && k.system_name !== k.name ? k.system_name : "", k.configs > 1 ? `${k.configs} launch configurations; the most common shown` : ""]
          .filter(Boolean)
          .join("\n");
        return `<tr data-row="${i}" data-name="${escapeHtml(label)}" data-launches="${k.launches}" data-total-ns="${k.total_ns}" data-mean-ns="${
          k.mean_ns
        }" data-p50-ns="${k.p50_ns}" data-p95-ns="${k.p95_ns}" class="${label === selected ? "selected" : ""}">
        <td class="fn kernel-${k.kind}" title="${escapeHtml(title)}">${escapeHtml(label)}</td>
        <td class="num">${k.launches.toLocaleString("en-US")}</td>
        <td class="num">${formatNanos(k.total_ns)}</td><td class="num">${formatNanos(k.mean_ns)}</td>
        <td class="num">${formatNanos(k.p50_ns)}</td><td class="num">${formatNanos(k.p95_ns)}</td><td class="num">${formatNanos(k.max_ns)}</td>
        <td class="num">${k.kind === "kernel" ? formatDim(k.grid) : ""}</td><td class="num">${k.kind === "kernel" ? formatDim(k.block) : ""}${
          k.configs > 1 ? ` <span class="muted">(+${k.configs - 1})</span>` : ""
        }</td>
        <td class="share"><span class="share-bar" style="width:${((100 * k.share) / maxShare).toFixed(1)}%"></span><span class="share-text">${(
          100 * k.share
        ).toFixed(1)}%</span></td>
        <td>${
          k.kind === "kernel"
            ? `<button class="link" data-flame="${i}" title="the gpu_time flame graph, searching for this kernel">flame graph</button> ·
               <button class="link" data-source="${i}" title="its instructions, source lines and stall reasons (PC samples)">source</button>`
            : ""
        }</td></tr>`;
      })
      .join("")}</tbody></table>
    <p class="muted small">${rows.length} of ${json.kernels.length} kernels and copies${rows.length > shown.length ? `, first ${shown.length} shown` : ""}.</p>`;
  el.querySelectorAll<HTMLElement>("th[data-sort]").forEach((h) => h.addEventListener("click", () => events.onSort(h.dataset.sort as KernelSortKey)));
  el.querySelectorAll<HTMLElement>("tbody tr").forEach((tr) =>
    tr.addEventListener("click", (e) => {
      const k = shown[Number(tr.dataset.row)];
      const label = kernelLabel(k);
      if ((e.target as HTMLElement).dataset.flame !== undefined) events.onFlame(k.name);
      else if ((e.target as HTMLElement).dataset.source !== undefined) events.onSource(k);
      else events.onSelect(label === selected ? "" : label);
    }),
  );
}

// Tooltip rows for one kernel of the timeline: its launch configuration and statistics.
export function describeKernel(json: KernelsJson | null, name: string): string {
  const k = json?.kernels.find((r) => r.kind === "kernel" && r.name === name);
  if (!k) return "";
  return `<tr><td>grid</td><td>${formatDim(k.grid)}${k.configs > 1 ? ` (most common of ${k.configs})` : ""}</td></tr>
    <tr><td>block</td><td>${formatDim(k.block)}</td></tr>
    <tr><td>in range</td><td>${k.launches.toLocaleString("en-US")} launches, mean ${formatNanos(k.mean_ns)}</td></tr>`;
}
