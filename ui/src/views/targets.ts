// The targets view (`view=targets`): nodes, their GPUs and the processes on
// each (/api/v1/targets, every profile type and metric), filtered by the
// selector box (server side) and the search text (here). Clicking a node or
// a process narrows the selector to it and opens its flame graph; clicking
// a GPU opens the GPUs view. Processes are listed by their CPU samples in the
// range (/api/v1/series of cpu by node and pid), busiest first.
import { apiGet } from "../api/client";
import type { SeriesJson, TargetsJson } from "../api/types";
import { el, escapeHtml } from "../base/dom";
import { ViewState, commonParams } from "../state";
import { resolveTime } from "../time";
import { CpuByProcess, byCpu, cpuByProcess, processKey, wholeRangeStep } from "./targets_model";
import { agentCommandHtml } from "./empty";
import { Shell, View } from "./view";

export class TargetsView implements View {
  private root = el("div", "targets");
  private targets: TargetsJson | null = null;
  private cpu: CpuByProcess = new Map();

  constructor(
    section: HTMLElement,
    private shell: Shell,
  ) {
    section.append(this.root);
  }

  async load(s: ViewState, signal: AbortSignal): Promise<void> {
    const now = Date.now();
    const from = resolveTime(s.from, now) ?? now - 3_600_000;
    const to = resolveTime(s.to, now) ?? now;
    const [targets, cpu] = await Promise.all([
      apiGet<TargetsJson>("/api/v1/targets", { ...commonParams(s), type: undefined }, signal),
      apiGet<SeriesJson>("/api/v1/series", { ...commonParams(s), type: "cpu", group_by: "node,pid", step: wholeRangeStep(from, to) }, signal)
        .then(cpuByProcess)
        .catch(() => new Map() as CpuByProcess), // no cpu profiles: the list stays by name
    ]);
    this.targets = targets;
    this.cpu = cpu;
  }

  render(s: ViewState): void {
    if (!this.targets) return;
    if (this.targets.nodes.length === 0) {
      this.root.innerHTML = `<div class="empty"><b>No targets with samples in this range.</b> Agents appear here once they
          upload: ${agentCommandHtml()}</div>`;
      return;
    }
    renderTargets(
      this.root,
      this.targets,
      s.search,
      this.cpu,
      (selector) => this.shell.update({ selector, view: "flame", focus: "" }, true),
      (node, gpu) => this.shell.update({ view: "gpu", gpunode: node, gpu, gpupid: "" }, true),
    );
  }

  release(): void {}
}

// GPU-1a2b3c4d-… → GPU-1a2b3c4d
function shortUuid(uuid: string): string {
  const m = /^(GPU-|MIG-)?([0-9a-f]{8})/i.exec(uuid);
  return m ? `${m[1] ?? ""}${m[2]}` : uuid.slice(0, 12);
}

function renderTargets(
  el: HTMLElement,
  targets: TargetsJson,
  filter: string,
  cpu: CpuByProcess,
  onPick: (selector: string) => void,
  onGpu: (node: string, gpu: string) => void,
): void {
  const f = filter.trim().toLowerCase();
  const match = (...parts: (string | undefined)[]) => !f || parts.some((p) => p?.toLowerCase().includes(f));
  const blocks = targets.nodes
    .map((n) => {
      const procs = byCpu(n.node, n.processes.filter((p) => match(n.node, p.pid, p.comm, p.exe, p.container_id)), cpu);
      const nodeCpu = n.processes.reduce((a, p) => a + (cpu.get(processKey(n.node, p.pid)) ?? 0), 0);
      const cpuCell = (pid: string) => {
        const v = cpu.get(processKey(n.node, pid)) ?? 0;
        if (v === 0 || nodeCpu === 0) return `<td class="num muted">–</td>`;
        return `<td class="num" title="${v.toLocaleString("en-US")} samples">${((100 * v) / nodeCpu).toFixed(1)}%</td>`;
      };
      const gpus = n.gpus ?? [];
      const gpusShown = gpus.filter((g) => match(n.node, g.gpu, g.uuid, g.gpu_name, g.pci_bus_id));
      if (procs.length === 0 && gpusShown.length === 0 && !match(n.node)) return "";
      const gpuList = gpus.length
        ? `<div class="target-gpus"><span class="muted small">GPUs</span> ${gpus
            .map(
              (g) => `<button class="target-gpu" data-node="${escapeHtml(n.node)}" data-gpu="${escapeHtml(g.gpu)}"
                title="${escapeHtml(`${g.uuid}${g.pci_bus_id ? ` · PCI ${g.pci_bus_id}` : ""}: its metrics in the GPUs view`)}">
                <b>${escapeHtml(g.gpu)}</b> ${escapeHtml(g.gpu_name)} <span class="muted">${escapeHtml(shortUuid(g.uuid))}</span></button>`,
            )
            .join("")}</div>`
        : "";
      return `<section class="target-node">
        <h3><button class="link" data-node="${escapeHtml(n.node)}">${escapeHtml(n.node || "(no node label)")}</button>
          <span class="muted small">${n.series} series, ${n.processes.length} processes${gpus.length ? `, ${gpus.length} GPU${gpus.length === 1 ? "" : "s"}` : ""}</span></h3>
        ${gpuList}
        ${procs.length === 0 && gpus.length > 0 ? "" : `<table class="top"><thead><tr><th class="num" title="share of the node's CPU samples in the range">CPU</th><th class="num">PID</th><th>Process</th><th>Executable</th><th>Container</th></tr></thead>
        <tbody>${procs
          .map(
            (p) => `<tr data-node="${escapeHtml(n.node)}" data-pid="${escapeHtml(p.pid)}">
            ${cpuCell(p.pid)}<td class="num">${escapeHtml(p.pid)}</td><td class="fn">${escapeHtml(p.comm)}</td>
            <td class="muted">${escapeHtml(p.exe)}</td><td class="muted">${escapeHtml((p.container_id ?? "").slice(0, 12))}</td></tr>`,
          )
          .join("")}</tbody></table>`}</section>`;
    })
    .join("");
  el.innerHTML = blocks || `<div class="empty">No target matches “${escapeHtml(filter)}”.</div>`;
  const quote = (s: string) => JSON.stringify(s);
  el.querySelectorAll<HTMLElement>("button.target-gpu").forEach((b) =>
    b.addEventListener("click", () => onGpu(b.dataset.node!, b.dataset.gpu!)),
  );
  el.querySelectorAll<HTMLElement>("h3 button[data-node]").forEach((b) =>
    b.addEventListener("click", () => onPick(`{node=${quote(b.dataset.node!)}}`)),
  );
  el.querySelectorAll<HTMLElement>("tr[data-pid]").forEach((tr) =>
    tr.addEventListener("click", () => onPick(`{node=${quote(tr.dataset.node!)}, pid=${quote(tr.dataset.pid!)}}`)),
  );
}
