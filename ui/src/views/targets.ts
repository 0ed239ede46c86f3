// Nodes and the processes on each (/api/v1/targets), filtered by the
// selector box (server side) and the search text (here). Clicking a process
// narrows the selector to it.
import { escapeHtml } from "../flame/flamegraph";

export interface TargetsJson {
  nodes: {
    node: string;
    series: number;
    processes: { pid: string; comm: string; exe: string; container_id?: string }[];
  }[];
}

export function renderTargets(
  el: HTMLElement,
  targets: TargetsJson,
  filter: string,
  onPick: (selector: string) => void,
): void {
  const f = filter.trim().toLowerCase();
  const match = (...parts: (string | undefined)[]) => !f || parts.some((p) => p?.toLowerCase().includes(f));
  const blocks = targets.nodes
    .map((n) => {
      const procs = n.processes.filter((p) => match(n.node, p.pid, p.comm, p.exe, p.container_id));
      if (procs.length === 0 && !match(n.node)) return "";
      return `<section class="target-node">
        <h3><button class="link" data-node="${escapeHtml(n.node)}">${escapeHtml(n.node || "(no node label)")}</button>
          <span class="muted small">${n.series} series, ${n.processes.length} processes</span></h3>
        <table class="top"><thead><tr><th class="num">PID</th><th>Process</th><th>Executable</th><th>Container</th></tr></thead>
        <tbody>${procs
          .map(
            (p) => `<tr data-node="${escapeHtml(n.node)}" data-pid="${escapeHtml(p.pid)}">
            <td class="num">${escapeHtml(p.pid)}</td><td class="fn">${escapeHtml(p.comm)}</td>
            <td class="muted">${escapeHtml(p.exe)}</td><td class="muted">${escapeHtml((p.container_id ?? "").slice(0, 12))}</td></tr>`,
          )
          .join("")}</tbody></table></section>`;
    })
    .join("");
  el.innerHTML = blocks || `<div class="empty">No target matches “${escapeHtml(filter)}”.</div>`;
  const quote = (s: string) => JSON.stringify(s);
  el.querySelectorAll<HTMLElement>("button[data-node]").forEach((b) =>
    b.addEventListener("click", () => onPick(`{node=${quote(b.dataset.node!)}}`)),
  );
  el.querySelectorAll<HTMLElement>("tr[data-pid]").forEach((tr) =>
    tr.addEventListener("click", () => onPick(`{node=${quote(tr.dataset.node!)}, pid=${quote(tr.dataset.pid!)}}`)),
  );
}
