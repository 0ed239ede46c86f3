// The energy view (`view=energy`, "Energy & cost"): what the GPUs and CPUs
// used over the range and selector (GET /api/v1/energy, docs/api.md
// "Energy"): the totals (kWh, GPU joules split busy and idle, CPU joules,
// CO₂, cost), the coefficients used with boxes to override PUE, carbon
// intensity and price, a stacked chart of power over the range (the
// answer's `steps`: GPU busy, GPU idle, CPU), and a table per group (node,
// GPU, process or pod). Every figure says whether it was measured or
// estimated (the answer's lists): estimated ones are marked ≈ and their
// tooltip says how (apportioned by utilization, CPU time × watts per core,
// kWh × a coefficient); measured ones name their source. A process's or
// pod's row opens the flame graph of its GPU energy (type gpu_energy), a
// node's or GPU's its GPU charts. The words and numbers: energy_model.ts;
// the chart: energy_chart.ts.
//
// State: `egroup` (node, gpu, process, pod), `pue`, `carbon`, `price` (""
// for the server's defaults); the search box filters the rows.
// For the end-to-end test the panel (`.energy-panel`) carries data-version
// (each render), data-state (`shown`, `empty`), data-group-by (of the
// answer shown), data-groups (the answer's rows), data-rows (shown),
// data-total-joules, data-gpu-joules, data-gpu-idle-joules,
// data-cpu-joules, data-kwh, data-co2-grams and data-cost (the answer's
// total); each row (`tr.energy-row`) data-key, data-kind, data-total-joules,
// data-gpu-joules, data-cpu-joules, data-measured and data-estimated; the
// chart (`.energy-chart`) data-points, data-series and data-step-ms.
import { apiGet } from "../api/client";
import type { EnergyCoefficientsJson, EnergyFiguresJson, EnergyGroupJson, EnergyJson } from "../api/types";
import { el, escapeHtml } from "../base/dom";
import { ViewState } from "../state";
import { formatTime, resolveTime } from "../time";
import { formatJoules } from "../units";
import { DrawnEnergyChart, drawEnergyChart } from "./energy_chart";
import {
  COEFFICIENT_FIELDS,
  Figure,
  FigureStatus,
  GROUP_CHOICES,
  Sources,
  energyChart,
  energyParams,
  figureStatus,
  figureWhy,
  filterGroups,
  flameLinkOf,
  formatCo2,
  formatCost,
  formatKwh,
  groupKey,
  groupKind,
  groupTitle,
  hasDram,
  parseCoefficient,
  sourcesOf,
  totalStatus,
} from "./energy_model";
import { Shell, View } from "./view";

// Rows drawn at most (the largest); the rest are counted under the table.
const MAX_ROWS = 500;

interface Column {
  figure: Figure;
  head: string;
  title: string;
  format: (v: number) => string;
}

export class EnergyView implements View {
  private root = el("div", "energy-panel");
  private controls = el("div", "energy-controls");
  private groupButtons = el("span", "energy-groups");
  private coefficients = el("span", "energy-coefficients");
  private coefError = el("span", "energy-coef-error");
  private totalsEl = el("div", "energy-totals");
  private usedEl = el("div", "energy-used muted small");
  private chartWrap = el("div", "energy-chart-wrap");
  private tableEl = el("div", "energy-table");
  private inputs = new Map<string, HTMLInputElement>();
  private answer: EnergyJson | null = null;
  private groupBy = "node"; // of the answer
  private loads = 0;
  private chartKey = "";
  private chart: DrawnEnergyChart | null = null;
  private version = 0;
  private rowLinks: (Partial<ViewState> | null)[] = [];
  private gpuLinks: (Partial<ViewState> | null)[] = [];
  private state: ViewState | null = null; // the last shown, for the coefficient boxes

  constructor(
    section: HTMLElement,
    private shell: Shell,
  ) {
    this.buildControls();
    this.root.append(this.controls, this.totalsEl, this.usedEl, this.chartWrap, this.tableEl);
    this.root.dataset.version = "0";
    section.append(this.root);
    this.tableEl.addEventListener("click", (e) => this.onTableClick(e));
    new ResizeObserver(() => {
      const width = this.chartWidth();
      if (this.chart && this.chart.plot.width !== width) this.chart.plot.setSize({ width, height: this.chart.plot.height });
    }).observe(this.chartWrap);
    matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => {
      this.chartKey = "";
      if (this.state) this.render(this.state);
    });
  }

  private buildControls(): void {
    const groups = el("span", "energy-group-by", "Group by ");
    for (const g of GROUP_CHOICES) {
      const b = el("button", "energy-group", escapeHtml(g.label));
      b.dataset.group = g.value;
      b.title = g.title;
      b.addEventListener("click", () => this.shell.update({ egroup: g.value }, true));
      this.groupButtons.append(b);
    }
    groups.append(this.groupButtons);
    for (const f of COEFFICIENT_FIELDS) {
      const label = el("label", "energy-coefficient");
      label.title = `${f.title} (the API's ${f.param}; empty: the server's default)`;
      const input = el("input");
      input.type = "text";
      input.inputMode = "decimal";
      input.dataset.key = f.key;
      input.spellcheck = false;
      input.addEventListener("change", () => this.applyCoefficient(f.key, input.value));
      input.addEventListener("keydown", (e) => {
        if (e.key === "Escape" && this.state?.[f.key]) this.shell.update({ [f.key]: "" }, true);
      });
      this.inputs.set(f.key, input);
      label.append(document.createTextNode(`${f.label} `), input);
      this.coefficients.append(label);
    }
    const reset = el("button", "link energy-coef-reset", "server defaults");
    reset.title = "use the server's coefficients (its --pue, --carbon-intensity and --price-per-kwh)";
    reset.addEventListener("click", () => this.shell.update({ pue: "", carbon: "", price: "" }, true));
    this.coefficients.append(reset, this.coefError);
    this.controls.append(groups, this.coefficients);
  }

  private applyCoefficient(key: "pue" | "carbon" | "price", text: string): void {
    const field = COEFFICIENT_FIELDS.find((f) => f.key === key)!;
    const parsed = parseCoefficient(field, text);
    if ("error" in parsed) {
      this.coefError.textContent = parsed.error;
      this.inputs.get(key)?.classList.add("invalid");
      return;
    }
    this.coefError.textContent = "";
    this.inputs.get(key)?.classList.remove("invalid");
    if (parsed.value !== this.state?.[key]) this.shell.update({ [key]: parsed.value }, true);
  }

  private chartWidth(): number {
    return Math.max(200, this.chartWrap.clientWidth || this.root.clientWidth || 800);
  }

  show(s: ViewState): void {
    this.state = s;
    this.groupButtons.querySelectorAll<HTMLElement>("button").forEach((b) => b.classList.toggle("active", b.dataset.group === s.egroup));
    for (const f of COEFFICIENT_FIELDS) {
      const input = this.inputs.get(f.key)!;
      if (document.activeElement !== input) input.value = s[f.key];
    }
  }

  async load(s: ViewState, signal: AbortSignal): Promise<void> {
    const now = Date.now();
    const toMs = resolveTime(s.to, now) ?? now;
    const fromMs = Math.min(resolveTime(s.from, now) ?? toMs - 3600e3, toMs - 1);
    const answer = await apiGet<EnergyJson>("/api/v1/energy", energyParams(s, fromMs, toMs), signal);
    if (signal.aborted) return;
    this.answer = answer;
    this.groupBy = s.egroup;
    this.loads++;
  }

  release(): void {
    this.chart?.plot.destroy();
    this.chart = null;
    this.chartWrap.replaceChildren();
    this.chartKey = "";
  }

  searchInfo(s: ViewState): string {
    if (!s.search.trim() || !this.answer) return "";
    return `${filterGroups(this.answer.groups, s.search, this.groupBy).length} of ${this.answer.groups.length} rows`;
  }

  render(s: ViewState): void {
    this.state = s;
    const a = this.answer;
    if (!a) return;
    this.show(s);
    const empty = a.groups.length === 0 || !(a.total.total_joules > 0);
    const src = sourcesOf(a.groups);
    this.totalsEl.innerHTML = empty ? this.emptyHtml(s) : this.totalsHtml(a, src);
    this.usedEl.innerHTML = this.usedHtml(a.coefficients, s);
    for (const f of COEFFICIENT_FIELDS) {
      const input = this.inputs.get(f.key)!;
      input.placeholder = s[f.key] ? "server's" : String(a.coefficients[f.param]);
    }
    this.renderChart(a, empty);
    const shown = filterGroups(a.groups, s.search, this.groupBy);
    this.tableEl.innerHTML = empty ? "" : this.tableHtml(a, shown, src, s);
    const r = this.root.dataset;
    r.version = String(++this.version);
    r.state = empty ? "empty" : "shown";
    r.groupBy = this.groupBy;
    r.groups = String(a.groups.length);
    r.rows = String(Math.min(shown.length, MAX_ROWS));
    r.totalJoules = String(a.total.total_joules);
    r.gpuJoules = String(a.total.gpu_joules);
    r.gpuIdleJoules = String(a.total.gpu_idle_joules);
    r.cpuJoules = String(a.total.cpu_joules);
    r.kwh = String(a.total.kwh);
    r.co2Grams = String(a.total.co2_grams);
    r.cost = String(a.total.cost);
  }

  // A figure as text with its mark: ≈ and a dotted underline when
  // estimated; the tooltip says where it came from or how it was estimated.
  private fig(text: string, status: FigureStatus, why: string, cls = ""): string {
    const title = why ? ` title="${escapeHtml(why)}"` : "";
    return `<span class="fig${status ? ` fig-${status}` : ""}${cls ? ` ${cls}` : ""}"${title}>${
      status === "estimated" ? `<span class="est-mark" aria-label="estimated">≈</span>` : ""
    }${escapeHtml(text)}</span>`;
  }

  private totalsHtml(a: EnergyJson, src: Sources): string {
    const t = a.total;
    const c = a.coefficients;
    const fig = (f: Figure, text: string, cls: string) => {
      const status = totalStatus(a.groups, f);
      return this.fig(text, status, figureWhy(f, status, src, c), cls);
    };
    const busyShare = t.gpu_joules > 0 ? Math.min(1, Math.max(0, t.gpu_busy_joules / t.gpu_joules)) : 0;
    const dram = hasDram(a)
      ? `<div class="energy-figure"><b>${fig("dram_joules", formatJoules(t.dram_joules ?? 0), "total-dram")}</b><span>DRAM</span></div>`
      : "";
    return `<div class="energy-figures">
        <div class="energy-figure main"><b>${fig("kwh", formatKwh(t.kwh), "total-kwh")}</b><span>energy · ${escapeHtml(formatJoules(t.total_joules))}</span></div>
        <div class="energy-figure gpu"><b>${fig("gpu_joules", formatJoules(t.gpu_joules), "total-gpu")}</b><span>GPU</span>
          <span class="energy-split" title="${escapeHtml(
            `busy ${formatJoules(t.gpu_busy_joules)}, idle ${formatJoules(t.gpu_idle_joules)}: the joules of steps whose utilization averaged below ${c.idle_utilization_percent ?? 1} % are idle`,
          )}"><i class="busy" style="width:${(100 * busyShare).toFixed(1)}%"></i><i class="idle" style="width:${(100 * (1 - busyShare)).toFixed(1)}%"></i></span>
          <span class="energy-split-text">busy ${fig("gpu_busy_joules", formatJoules(t.gpu_busy_joules), "total-gpu-busy")} · idle ${fig(
            "gpu_idle_joules",
            formatJoules(t.gpu_idle_joules),
            "total-gpu-idle",
          )}</span></div>
        <div class="energy-figure"><b>${fig("cpu_joules", formatJoules(t.cpu_joules), "total-cpu")}</b><span>CPU</span></div>
        ${dram}
        <div class="energy-figure"><b>${fig("co2_grams", formatCo2(t.co2_grams), "total-co2")}</b><span>CO₂e</span></div>
        <div class="energy-figure"><b>${fig("cost", formatCost(t.cost), "total-cost")}</b><span>cost</span></div>
      </div>
      <p class="energy-range muted small">${escapeHtml(formatTime(a.from))} – ${escapeHtml(formatTime(a.to))}${
        this.state?.selector ? ` for <code>${escapeHtml(this.state.selector)}</code>` : ""
      }. <span class="fig fig-estimated"><span class="est-mark">≈</span>estimated</span> figures are marked; hover any figure for where it came from or how it was estimated.</p>`;
  }

  private emptyHtml(s: ViewState): string {
    return `<div class="energy-empty">
        <h3>No energy in this range${s.selector ? " for this selector" : ""}</h3>
        <p>GPU joules come from the NVML metrics <code>warpscope-agent run</code> collects on machines with an NVIDIA driver
          (the energy counter <code>gpu_energy</code>, and <code>gpu_power</code>); CPU joules from the CPU samples. Try a longer
          range (24h)${s.selector ? " or clear the selector" : ""}. A process selector keeps that process's series but none of
          its GPUs': group by process with a node selector instead.</p>
      </div>`;
  }

  // The coefficients the answer used; those passed in the URL say so.
  private usedHtml(c: EnergyCoefficientsJson, s: ViewState): string {
    const mine = (key: "pue" | "carbon" | "price") => (s[key] ? ` <span class="energy-yours" title="set here, not the server's default">(set here)</span>` : "");
    const n = (v: number) => escapeHtml(v.toLocaleString("en-US", { maximumSignificantDigits: 6 }));
    return `Coefficients: PUE <b>${n(c.pue)}</b>${mine("pue")} · <b>${n(c.carbon_intensity)}</b> gCO₂e/kWh${mine("carbon")} ·
      <b>${n(c.price_per_kwh)}</b> per kWh${mine("price")} · CPU <b>${n(c.cpu_watts_per_core)}</b> W per core · a GPU is idle below
      <b>${n(c.idle_utilization_percent ?? 1)}</b> % utilization. See docs/design/energy.md for where the defaults come from.`;
  }

  private renderChart(a: EnergyJson, empty: boolean): void {
    const key = `${this.loads}`;
    if (key === this.chartKey) return;
    this.release();
    this.chartKey = key;
    const data = empty ? null : energyChart(a.total.steps, a.to);
    if (!data) {
      if (!empty) this.chartWrap.innerHTML = `<p class="muted small energy-no-steps">No per-step series in this answer (the server did not send <code>steps</code>).</p>`;
      return;
    }
    this.chart = drawEnergyChart(data, {
      fromMs: a.from,
      toMs: a.to,
      width: this.chartWidth(),
      onSelect: (from, to) => this.shell.update({ from: String(from), to: String(to), live: false }, true),
    });
    this.chartWrap.append(this.chart.el);
  }

  private columns(a: EnergyJson): Column[] {
    const cols: Column[] = [
      { figure: "gpu_busy_joules", head: "GPU busy", title: "GPU joules of the steps the GPU was busy", format: formatJoules },
      { figure: "gpu_idle_joules", head: "GPU idle", title: "GPU joules of the steps the GPU was idle (no kernel ran)", format: formatJoules },
      { figure: "gpu_joules", head: "GPU", title: "GPU joules, busy and idle", format: formatJoules },
      { figure: "cpu_joules", head: "CPU", title: "CPU joules", format: formatJoules },
    ];
    if (hasDram(a)) cols.push({ figure: "dram_joules", head: "DRAM", title: "DRAM joules (RAPL)", format: formatJoules });
    cols.push(
      { figure: "total_joules", head: "Total", title: "GPU + CPU joules", format: formatJoules },
      { figure: "kwh", head: "Energy", title: "kWh", format: formatKwh },
      { figure: "co2_grams", head: "CO₂e", title: "grams CO₂-equivalent", format: formatCo2 },
      { figure: "cost", head: "Cost", title: "in the price's currency", format: formatCost },
    );
    return cols;
  }

  private tableHtml(a: EnergyJson, shown: EnergyGroupJson[], src: Sources, s: ViewState): string {
    const cols = this.columns(a);
    const drawn = shown.slice(0, MAX_ROWS);
    const max = drawn.reduce((m, g) => Math.max(m, g.total_joules), 0);
    this.rowLinks = [];
    this.gpuLinks = [];
    const cell = (g: EnergyFiguresJson, col: Column, status: FigureStatus, why: string) =>
      `<td class="num">${this.fig(col.format((g as unknown as Record<string, number>)[col.figure] ?? 0), status, why)}</td>`;
    const rows = drawn.map((g, i) => {
      const kind = groupKind(g.labels, this.groupBy);
      const { title, detail } = groupTitle(g.labels, this.groupBy);
      const own = { gpu_source: g.gpu_source ?? "", cpu_source: g.cpu_source ?? "", gpu_apportioned_by: g.gpu_apportioned_by ?? "" };
      const flame = flameLinkOf(g.labels, this.groupBy);
      const gpu = (kind === "node" || kind === "gpu" || kind === "gpu-rest") && g.labels.node && g.gpu_joules > 0
        ? { view: "gpu" as const, gpunode: g.labels.node, gpu: g.labels.gpu ?? "", gpupid: "" }
        : null;
      this.rowLinks.push(flame ? { ...flame, from: s.from, to: s.to } : null);
      this.gpuLinks.push(gpu);
      const links = [
        flame
          ? `<button class="link energy-flame" data-index="${i}" title="${escapeHtml(
              `the flame graph of ${flame.selector}'s GPU energy over this range: joules per kernel and per calling function (type gpu_energy)`,
            )}">GPU energy flame graph →</button>`
          : "",
        gpu ? `<button class="link energy-gpu" data-index="${i}" title="the GPU charts of this node${g.labels.gpu ? `'s GPU ${escapeHtml(g.labels.gpu)}` : ""}">GPU charts →</button>` : "",
      ].join(" ");
      const labels = Object.entries(g.labels)
        .map(([k, v]) => `${k}="${v}"`)
        .join(", ");
      return `<tr class="energy-row" data-key="${escapeHtml(groupKey(g.labels))}" data-kind="${kind}" data-total-joules="${g.total_joules}"
          data-gpu-joules="${g.gpu_joules}" data-cpu-joules="${g.cpu_joules}" data-measured="${escapeHtml((g.measured ?? []).join(","))}"
          data-estimated="${escapeHtml((g.estimated ?? []).join(","))}">
        <td class="energy-name" title="${escapeHtml(`{${labels}}`)}"><span class="energy-title">${escapeHtml(title)}</span>${
          detail ? ` <span class="muted small">${escapeHtml(detail)}</span>` : ""
        }</td>
        ${cols
          .map((col) => {
            const status = figureStatus(g, col.figure);
            return cell(g, col, status, figureWhy(col.figure, status, own, a.coefficients));
          })
          .join("")}
        <td class="energy-share"><span class="energy-share-bar" style="width:${max > 0 ? ((100 * g.total_joules) / max).toFixed(1) : 0}%"></span></td>
        <td class="energy-links">${links}</td>
      </tr>`;
    });
    const total = `<tr class="energy-total"><td><b>Total</b> <span class="muted small">${a.groups.length} row${a.groups.length === 1 ? "" : "s"}</span></td>${cols
      .map((col) => {
        const status = totalStatus(a.groups, col.figure);
        return cell(a.total, col, status, figureWhy(col.figure, status, src, a.coefficients));
      })
      .join("")}<td></td><td></td></tr>`;
    const more = shown.length > drawn.length ? `<p class="muted small">${shown.length - drawn.length} more rows not shown.</p>` : "";
    const none = shown.length === 0 ? `<tr><td colspan="${cols.length + 3}" class="empty">No row matches “${escapeHtml(s.search)}”.</td></tr>` : "";
    const group = GROUP_CHOICES.find((g) => g.value === this.groupBy);
    return `<div class="table-wrap"><table class="top energy"><thead><tr><th>${escapeHtml(group ? `By ${group.label}` : "Group")}</th>${cols
      .map((c) => `<th class="num" title="${escapeHtml(c.title)}">${escapeHtml(c.head)}</th>`)
      .join("")}<th>share</th><th></th></tr></thead><tbody>${rows.join("")}${none}</tbody><tfoot>${total}</tfoot></table></div>${more}`;
  }

  private onTableClick(e: MouseEvent): void {
    const b = (e.target as HTMLElement).closest<HTMLElement>("button[data-index]");
    if (!b) return;
    const i = Number(b.dataset.index);
    const patch = b.classList.contains("energy-flame") ? this.rowLinks[i] : this.gpuLinks[i];
    if (patch) this.shell.update(patch, true);
  }
}
