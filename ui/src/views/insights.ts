// The insights view (`view=insights`): what /api/v1/insights found over the
// range and selector, one card per insight in the API's order (the GPU time
// each could save, largest first): its kind in plain words, severity,
// target and summary; the GPU time it could save, that over the range, and
// the confidence with its reason; a sparkline of when it happened with its
// ranges shaded; the evidence (the top functions or call sites, the kernels
// waited for, the named figures); the fix and why; and buttons that open
// the evidence: the flame graph of exactly its longest range and selector
// (the API's link, its top function searched for), the flame chart, the GPU
// charts around the range and the kernel table. Kinds the UI does not know
// are shown from the same fields. With none, the view says what was checked
// over which range and the thresholds; those are listed under the cards too.
// The words and numbers: insights_model.ts. The app opens here when a URL
// names no view and the range has insights (app.ts).
//
// State: `insight` (the picked card: highlighted and scrolled to; a click
// on an insight's band on the timeline or a GPU chart sets it); the search
// box filters the cards by their text. For the end-to-end test the panel
// (`.insights-panel`) carries data-version (each render), data-insights
// (the answer's count) and data-state (`shown`, `empty`); each card
// (`.insight-card`) data-key, data-kind, data-severity, data-saving (GPU
// seconds) and data-share; its buttons data-action (`flame`, `flamechart`,
// `gpu`, `kernels`, ...).
import { apiGet } from "../api/client";
import type { InsightFunctionJson, InsightJson, InsightsJson, MetricNamesJson, TypesJson } from "../api/types";
import { el, escapeHtml } from "../base/dom";
import { ViewState } from "../state";
import { formatNanos, formatTime } from "../time";
import { formatMicrojoules, unitOfType } from "../units";
import {
  CardAction,
  cardActions,
  checkedText,
  formatGpuSeconds,
  formatSeconds,
  formatShare,
  insightKey,
  kernelsOf,
  kindInfo,
  numberRows,
  rangeText,
  sortInsights,
  sparkline,
  sparklineMeaning,
  targetText,
  thresholdRows,
} from "./insights_model";
import { Shell, View } from "./view";

const SPARK_W = 1000;
const SPARK_H = 36;
const KIND_NAMES: Record<number, string> = { 0: "native", 1: "kernel", 2: "Python", 4: "CUDA kernel" };

// What was stored at all, for the empty state: which kinds could have been found.
interface DataPresence {
  gpuMetrics: boolean;
  gpuWait: boolean;
  cpu: boolean;
}

export class InsightsView implements View {
  private panel = el("div", "insights-panel");
  private answer: InsightsJson | null = null;
  private presence: DataPresence | null = null;
  private actions = new Map<string, CardAction[]>();
  private version = 0;
  private scrolledTo = "";

  constructor(
    section: HTMLElement,
    private shell: Shell,
  ) {
    section.append(this.panel);
    this.panel.dataset.version = "0";
    this.panel.addEventListener("click", (e) => this.onClick(e));
  }

  async load(s: ViewState, signal: AbortSignal): Promise<void> {
    const answer = await this.shell.insights.get({ from: s.from, to: s.to, selector: s.selector });
    let presence: DataPresence | null = null;
    if (answer.insights.length === 0) {
      // Only for the empty state: could the finders have found anything here at all?
      const [names, types] = await Promise.all([
        apiGet<MetricNamesJson>("/api/v1/metric_names", {}, signal).catch(() => null),
        apiGet<TypesJson>("/api/v1/types", {}, signal).catch(() => null),
      ]);
      presence = {
        gpuMetrics: names?.metrics.some((m) => m.name === "gpu_utilization" || m.name === "gpu_process_sm_utilization") ?? true,
        gpuWait: types?.types.some((t) => t.name === "gpu_wait") ?? true,
        cpu: types?.types.some((t) => t.name === "cpu") ?? true,
      };
    }
    if (signal.aborted) return;
    this.answer = answer;
    this.presence = presence;
  }

  release(): void {
    this.scrolledTo = "";
  }

  searchInfo(s: ViewState): string {
    if (!s.search.trim() || !this.answer) return "";
    return `${this.filtered(s).length} of ${this.answer.insights.length} insights`;
  }

  private filtered(s: ViewState): InsightJson[] {
    const all = sortInsights(this.answer?.insights ?? []);
    const f = s.search.trim().toLowerCase();
    if (!f) return all;
    const text = (x: InsightJson) =>
      [kindInfo(x.kind).title, x.kind, x.summary, targetText(x.target), ...(x.functions ?? []).map((g) => g.name), ...kernelsOf(x).map((k) => k.name)]
        .join("\n")
        .toLowerCase();
    return all.filter((x) => text(x).includes(f));
  }

  render(s: ViewState): void {
    const a = this.answer;
    if (!a) return;
    this.actions.clear();
    const shown = this.filtered(s);
    if (a.insights.length === 0) {
      this.panel.innerHTML = this.emptyHtml(a);
    } else {
      const total = a.insights.reduce((t, x) => t + (x.saving_gpu_seconds ?? 0), 0);
      const bySeverity = ["high", "medium", "low"]
        .map((sev) => [sev, a.insights.filter((x) => x.severity === sev).length] as const)
        .filter(([, n]) => n > 0)
        .map(([sev, n]) => `<span class="sev-badge sev-${sev}">${n} ${sev}</span>`)
        .join(" ");
      const cards = shown.map((x) => this.cardHtml(x, a, s)).join("");
      this.panel.innerHTML = `<div class="insights-head">
          <p><b>${a.insights.length} insight${a.insights.length === 1 ? "" : "s"}</b> in ${escapeHtml(rangeText(a))}${
            s.selector ? ` for <code>${escapeHtml(s.selector)}</code>` : ""
          }: together they could save <b class="total-saving">${formatGpuSeconds(total)}</b>. ${bySeverity}</p>
          <p class="muted small">Sorted by the GPU time each could save (GPU-s: seconds of one GPU's time). Each card's buttons open its
            evidence: the flame graph of exactly its range and processes, the GPU charts around it, the kernels. Its range is also shaded
            on the timeline above and on the GPU charts.</p>
        </div>
        ${cards || `<div class="empty">No insight matches “${escapeHtml(s.search)}”.</div>`}
        ${this.thresholdsHtml(a, false)}`;
    }
    this.panel.dataset.version = String(++this.version);
    this.panel.dataset.insights = String(a.insights.length);
    this.panel.dataset.state = a.insights.length ? "shown" : "empty";
    if (s.insight && s.insight !== this.scrolledTo) {
      const card = this.panel.querySelector<HTMLElement>(`.insight-card[data-key="${CSS.escape(s.insight)}"]`);
      if (card) {
        card.scrollIntoView({ block: "center" });
        this.scrolledTo = s.insight;
      }
    }
  }

  private cardHtml(x: InsightJson, a: InsightsJson, s: ViewState): string {
    const key = insightKey(x);
    const info = kindInfo(x.kind);
    const actions = cardActions(x, a);
    this.actions.set(key, actions);
    const spark = sparkline(x.sparkline ?? [], x.ranges ?? [], a.from, a.to, a.step_ms, SPARK_W, SPARK_H);
    const ranges = x.ranges ?? [];
    const when = ranges.length
      ? `${escapeHtml(rangeText(ranges[0]))}${
          ranges.length > 1
            ? ` <span class="muted">and ${ranges.length - 1} more range${ranges.length === 2 ? "" : "s"} (${ranges
                .slice(1, 4)
                .map((r) => escapeHtml(rangeText(r)))
                .join("; ")}${ranges.length > 4 ? "; …" : ""}); the buttons open the longest</span>`
            : ""
        }`
      : `<span class="muted">no range</span>`;
    const type = x.evidence?.type ?? x.links?.[0]?.type ?? "";
    const fnHead =
      {
        gpu_starved_by_cpu: "Where the process's CPU time went (self)",
        sync_heavy: "Where the waits come from (call sites)",
        launch_bound: "Where the launches come from (call sites)",
        fusion_candidate: "Where the sequence is launched (call sites)",
      }[x.kind] ?? "Functions";
    const kernelHead = x.kind === "sync_heavy" ? "Kernels the waits waited for" : "Kernels";
    const sequence = x.sequence?.length
      ? `<h4>Kernels in launch order</h4><p class="ic-sequence fn">${x.sequence.map((k) => escapeHtml(k)).join(` <span class="muted">→</span> `)}</p>`
      : "";
    // A hint whose saving the server does not estimate (memory_bound) says so rather than "0".
    const estimated = x.saving_gpu_seconds > 0 || x.saving_share > 0;
    const numbers = numberRows(x.numbers);
    const time = (ms: number) => formatTime(ms).slice(11, 16);
    return `<article class="insight-card sev-${escapeHtml(x.severity)}${s.insight === key ? " selected" : ""}" data-key="${escapeHtml(key)}"
        data-kind="${escapeHtml(x.kind)}" data-severity="${escapeHtml(x.severity)}" data-saving="${x.saving_gpu_seconds}" data-share="${x.saving_share}">
      <div class="ic-head">
        <div class="ic-title">
          <span class="sev-badge sev-${escapeHtml(x.severity)}" title="severity: high at 25% of the range or more, medium at 10%">${escapeHtml(x.severity)}</span>
          <h3${info.what ? ` title="${escapeHtml(info.what)}"` : ""}>${escapeHtml(info.title)}</h3>
          <span class="ic-target">${escapeHtml(targetText(x.target))}</span>
        </div>
        <div class="ic-figures">
          ${
            estimated
              ? `<div class="figure" title="GPU time that would not be lost if the cause went away: seconds of one GPU"><b class="ic-saving">${formatGpuSeconds(x.saving_gpu_seconds)}</b><span>could be saved</span></div>
          <div class="figure" title="the saving over the length of the range"><b class="ic-share">${formatShare(x.saving_share)}</b><span>of the range</span></div>`
              : `<div class="figure" title="the server gives this kind as a hint and does not estimate what it would save"><b class="ic-saving muted">–</b><span>saving not estimated</span></div>`
          }
          <div class="figure" title="${escapeHtml(x.confidence_reason)}"><b class="ic-confidence conf-${escapeHtml(x.confidence)}">${escapeHtml(x.confidence)}</b><span>confidence</span></div>
        </div>
      </div>
      <p class="ic-summary">${escapeHtml(x.summary)}</p>
      <div class="ic-when">
        <svg class="ic-spark" viewBox="0 0 ${SPARK_W} ${SPARK_H}" preserveAspectRatio="none" aria-label="when it happened">
          <title>${escapeHtml(sparklineMeaning(x.kind, a.step_ms))}</title>
          ${spark.bands.map(([x0, x1]) => `<rect class="ic-band" x="${x0}" y="0" width="${Math.max(2, x1 - x0)}" height="${SPARK_H}"></rect>`).join("")}
          ${spark.area ? `<path class="ic-area" d="${spark.area}"></path>` : ""}
        </svg>
        <div class="ic-axis muted small"><span>${time(a.from)}</span><span class="ic-ranges">${when}</span><span>${time(a.to)}</span></div>
      </div>
      <div class="ic-body">
        <div class="ic-evidence">
          ${this.functionsHtml(fnHead, x.functions ?? [], type)}
          ${sequence}
          ${this.functionsHtml(kernelHead, kernelsOf(x), type)}
          ${
            numbers.length
              ? `<dl class="ic-numbers">${numbers.map(([k, v]) => `<div><dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd></div>`).join("")}</dl>`
              : ""
          }
        </div>
        <div class="ic-fix">
          <h4>Fix</h4>
          <p class="ic-fix-text">${escapeHtml(x.fix)}</p>
          ${x.fix_reason ? `<p class="ic-fix-reason"><span class="muted">Why:</span> ${escapeHtml(x.fix_reason)}</p>` : ""}
          <p class="ic-confidence-reason small"><span class="muted">Confidence ${escapeHtml(x.confidence)}:</span> ${escapeHtml(x.confidence_reason)}.</p>
        </div>
      </div>
      <div class="ic-actions">${actions
        .map(
          (b, i) =>
            `<button class="${i === 0 ? "primary" : ""}" data-action="${escapeHtml(b.action)}" data-index="${i}" title="${escapeHtml(b.title)}">${escapeHtml(b.label)} →</button>`,
        )
        .join("")}</div>
    </article>`;
  }

  private functionsHtml(head: string, fs: InsightFunctionJson[], type: string): string {
    if (!fs.length) return "";
    const unit = unitOfType(type);
    const value = (f: InsightFunctionJson) =>
      unit === "microjoules"
        ? formatMicrojoules(f.value)
        : unit === "nanoseconds" || f.kind === 4
          ? formatNanos(f.value)
          : type === "cpu"
            ? `${f.value.toLocaleString("en-US")} samples`
            : f.value.toLocaleString("en-US");
    const rows = fs
      .map(
        (f) => `<tr title="${escapeHtml(`${f.name}\n${f.binary} · ${KIND_NAMES[f.kind] ?? "frame"} · ${value(f)}`)}">
          <td class="fn">${escapeHtml(f.name)}</td>
          <td class="muted small ic-bin">${escapeHtml(f.binary)}</td>
          <td class="ic-share-cell"><span class="ic-share-bar k-${f.kind}" style="width:${(100 * Math.min(1, Math.max(0, f.share))).toFixed(1)}%"></span></td>
          <td class="num">${formatShare(f.share)}</td></tr>`,
      )
      .join("");
    return `<h4>${escapeHtml(head)}</h4><table class="ic-functions"><tbody>${rows}</tbody></table>`;
  }

  // The thresholds the finders used; open in the empty state.
  private thresholdsHtml(a: InsightsJson, open: boolean): string {
    const rows = thresholdRows(a.options);
    if (!rows.length) return "";
    return `<details class="insight-thresholds"${open ? " open" : ""}>
        <summary>Thresholds: when something counts as an insight</summary>
        <table class="top"><thead><tr><th>When</th><th class="num">Value</th><th>Parameter</th></tr></thead><tbody>${rows
          .map(
            (r, i) =>
              (i === 0 || rows[i - 1].group !== r.group ? `<tr class="group"><th colspan="3">${escapeHtml(r.group)}</th></tr>` : "") +
              `<tr><td>${escapeHtml(r.meaning)}</td><td class="num">${escapeHtml(r.value)}</td><td><code>${escapeHtml(r.param)}</code></td></tr>`,
          )
          .join("")}</tbody></table>
        <p class="muted small">Each is a query parameter of <code>GET /api/v1/insights</code> (docs/api.md), with <code>step</code> (the
          resolution, ${escapeHtml(formatSeconds(a.step_ms / 1000))} here) and <code>top</code> (functions per insight). Severity is high when
          the saving is 25% of the range or more, medium at 10%; confidence is high with 12 or more flagged steps, medium with 4.</p>
      </details>`;
  }

  private emptyHtml(a: InsightsJson): string {
    const p = this.presence;
    const missing: string[] = [];
    if (p && !p.gpuMetrics) {
      missing.push(
        `<li>No GPU metrics have been stored: <code>warpscope-agent run</code> reads them through NVML on machines with an NVIDIA driver (<code>--nvml-library PATH</code> when <code>libnvidia-ml.so.1</code> is not on the library path). Starved GPUs need them.</li>`,
      );
    }
    if (p && !p.gpuWait) {
      missing.push(
        `<li>No GPU-wait profile has been stored: it comes from CUDA applications run with the injection library (<code>libwarpscope_cuda.so</code>, the agent's <code>--cuda-socket</code>). Threads blocked in CUDA synchronisation need it.</li>`,
      );
    }
    if (p && !p.cpu) missing.push(`<li>No CPU samples have been stored: start an agent on each machine to profile.</li>`);
    return `<div class="insights-empty">
        <h3>No insights in this range</h3>
        <p>${escapeHtml(checkedText(a))} Nothing crossed the thresholds below.</p>
        <p class="muted">Try a longer range or clear the selector; an insight needs enough of the range (see the thresholds).</p>
        ${missing.length ? `<ul class="insights-missing">${missing.join("")}</ul>` : ""}
        ${this.thresholdsHtml(a, true)}
      </div>`;
  }

  private onClick(e: MouseEvent): void {
    const target = e.target as HTMLElement;
    const button = target.closest<HTMLElement>(".ic-actions button[data-action]");
    const card = target.closest<HTMLElement>(".insight-card");
    if (!card) return;
    const key = card.dataset.key ?? "";
    if (button) {
      const action = this.actions.get(key)?.[Number(button.dataset.index)];
      if (action) this.shell.update(action.patch, true);
      return;
    }
    // A click elsewhere on a card picks it (the URL keeps it), unless it selects text.
    if (getSelection()?.toString()) return;
    this.scrolledTo = key;
    this.shell.update({ insight: key }, false, false);
  }
}
