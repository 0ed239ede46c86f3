// The source/SASS view of one kernel (/api/v1/gpu/kernel_source, from the
// gpu_pc profile): its sampled instructions in order under their source
// lines, each with a bar of its estimated cycles stacked by stall reason,
// the hottest instructions marked, and the kernel's top stall reasons as a
// summary (plain words; CUPTI's name on hover). Opened from a kernel's row
// in the kernel table.
// A "download cubin" link for each cubin the server's store holds (fetched
// with the token, as the other downloads are).
// For the end-to-end test the panel carries data-kernel, data-total,
// data-lines and data-instructions, and the hottest rows data-hot (their
// rank, 1 the hottest).
import { errorText, escapeHtml } from "../base/dom";
import { apiBlob, saveBlob } from "../api/client";
import type { KernelSourceJson } from "../api/types";

// Hues of the stall classes; reasons of one class differ in lightness.
const CLASS_HUES: Record<string, number> = { memory: 10, compute: 210, sync: 45, issuing: 130, other: 0 };
const HOT = 3; // instructions marked as the hottest

function basename(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? path : path.slice(slash + 1);
}

export function stallColors(json: KernelSourceJson): string[] {
  const seen: Record<string, number> = {};
  return json.stalls.map((s) => {
    const n = (seen[s.class] = (seen[s.class] ?? -1) + 1);
    const hue = CLASS_HUES[s.class] ?? 0;
    return s.class === "other" ? `hsl(0,0%,${60 + 8 * n}%)` : `hsl(${hue},65%,${50 + 9 * (n % 4)}%)`;
  });
}

function cubinLinks(json: KernelSourceJson): string {
  return (json.cubins ?? [])
    .filter((c) => c.stored)
    .map(
      (c) =>
        ` · <a href="#" class="cubin-download" data-hash="${escapeHtml(c.hash)}" title="the cubin its instructions came from (${escapeHtml(
          c.hash,
        )}, ${Math.ceil(c.bytes / 1024)} KiB)">download cubin</a>`,
    )
    .join("");
}

async function downloadCubin(link: HTMLAnchorElement): Promise<void> {
  const hash = link.dataset.hash ?? "";
  try {
    saveBlob(await apiBlob(`/api/v1/gpu/cubins/${hash}`, {}), `${hash}.cubin`);
  } catch (e) {
    link.textContent = `download failed: ${errorText(e)}`;
  }
}

export function renderKernelSource(panel: HTMLElement, json: KernelSourceJson | null, error = ""): void {
  const ds = panel.dataset;
  if (!json) {
    ds.kernel = "";
    ds.instructions = "0";
    panel.innerHTML = error ? `<p class="message">${escapeHtml(error)}</p>` : "";
    return;
  }
  const colors = stallColors(json);
  const instructions = json.lines.flatMap((l) => l.instructions);
  // offset -> rank among the hottest (1: the hottest)
  const hot = new Map([...instructions].sort((a, b) => b.value - a.value).slice(0, HOT).map((i, r) => [i.offset, r + 1]));
  const max = Math.max(...instructions.map((i) => i.value), 1);
  const pct = (v: number) => `${((100 * v) / Math.max(json.total, 1)).toFixed(1)}%`;
  const shares = Object.entries(json.shares ?? {})
    .filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${escapeHtml(k)} ${(100 * v).toFixed(0)}%`)
    .join(" · ");
  const legend = json.stalls
    .slice(0, 8)
    .map(
      (s, i) =>
        `<li title="${escapeHtml(s.cupti_name)}"><span class="swatch" style="background:${colors[i]}"></span>${escapeHtml(s.name)} <span class="muted">${pct(
          s.value,
        )}</span></li>`,
    )
    .join("");
  const rows = json.lines
    .map((l) => {
      const where = l.file ? `${escapeHtml(basename(l.file))}:${l.line}` : "no line information";
      const head = `<tr class="source-line"><td colspan="2" title="${escapeHtml(l.file)}">${where}${
        l.function ? ` <span class="muted">in ${escapeHtml(l.function)}</span>` : ""
      }</td><td class="num">${pct(l.value)}</td><td></td></tr>`;
      const body = l.instructions
        .map((ins) => {
          const bar = ins.stalls
            .map(
              ([k, v]) =>
                `<span class="stall-seg" style="width:${((100 * v) / max).toFixed(2)}%;background:${colors[k]}" title="${escapeHtml(
                  json.stalls[k].name,
                )} (${escapeHtml(json.stalls[k].cupti_name)}): ${pct(v)}"></span>`,
            )
            .join("");
          const rank = hot.get(ins.offset);
          return `<tr class="sass${rank ? " hot" : ""}"${rank ? ` data-hot="${rank}"` : ""} data-offset="${ins.offset}">
            <td class="num mono">0x${ins.offset.toString(16).padStart(4, "0")}</td>
            <td class="mono">${escapeHtml(ins.text)}</td><td class="num">${pct(ins.value)}</td>
            <td class="stall-bar">${bar}</td></tr>`;
        })
        .join("");
      return head + body;
    })
    .join("");
  panel.innerHTML = `<h3>Inside ${escapeHtml(json.kernel)}</h3>
    <p class="small">Stalls: ${shares || "none"}${
      json.sass ? "" : ` · <span class="muted">SASS text unavailable: no nvdisasm on the agent's host (instructions show as offsets)</span>`
    }${cubinLinks(json)}</p>
    <ul class="stall-legend">${legend}</ul>
    <table class="top source-view"><thead><tr><th class="num">Offset</th><th>Instruction</th><th class="num">Share</th>
    <th>Cycles by stall reason</th></tr></thead><tbody>${rows}</tbody></table>
    <p class="muted small">Sampled instructions only; PC samples from agents run with --gpu-pc-sampling on.</p>`;
  for (const link of panel.querySelectorAll<HTMLAnchorElement>("a.cubin-download")) {
    link.addEventListener("click", (e) => {
      e.preventDefault();
      void downloadCubin(link);
    });
  }
  ds.kernel = json.kernel;
  ds.total = String(json.total);
  ds.lines = String(json.lines.length);
  ds.instructions = String(instructions.length);
}
