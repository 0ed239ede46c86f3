// The flame chart on canvases: one lane per thread, stacked vertically, each
// a one-line header and its stacks icicle style (root row on top), with x the
// time across the panel's width from the answer's from_ms to its to_ms.
//
// The boxes are merged once per answer (chartmodel.ts); drawing is one pass
// per lane over them, skipping boxes narrower than MIN_WIDTH and writing
// labels only into boxes wide enough, like the flame graph. The panel's
// data-* attributes say what the last draw showed (the end-to-end test
// reads them): data-version, data-lanes, data-boxes, data-total, data-matched.
import { Palette, framePalette } from "./colors";
import { KIND_NAMES } from "./model";
import { nameMatcher } from "./analysis";
import { escapeHtml, onSchemeChange, placeTooltip } from "../base/dom";
import { ChartData, boxAt, spanRange, bucketSpan } from "./chartmodel";
import { formatTime } from "../time";
import { formatMicrojoules, laneNoun, timeNoun } from "../units";

const ROW = 14;
const AXIS = 18;
const MIN_WIDTH = 0.3; // px: narrower boxes are not drawn
const FONT = '10.5px ui-monospace, "DejaVu Sans Mono", Menlo, monospace';
const TICK_STEPS_MS = [10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3];

export interface FlameChartOptions {
  // A click on a box: its time span, on bucket boundaries, at least 2 buckets.
  onSelectRange: (fromMs: number, toMs: number) => void;
  // A right-click on a box: its function.
  onContext?: (name: string, binary: string) => void;
}

export class FlameChart {
  private data: ChartData | null = null;
  private colors: Palette | null = null;
  private colorMode: "binary" | "kind" = "binary";
  private query = "";
  private frameMatched: Uint8Array | null = null;
  private axis: HTMLCanvasElement;
  private lanesEl: HTMLDivElement;
  private moreEl: HTMLDivElement;
  private tooltip: HTMLDivElement;
  private canvases: HTMLCanvasElement[] = [];
  private cssWidth = 0;
  private charWidth = 6.5;
  version = 0;
  lastDrawMs = 0;
  boxesDrawn = 0;
  matchedDrawn = 0;

  constructor(
    private panel: HTMLElement,
    private options: FlameChartOptions,
  ) {
    this.axis = document.createElement("canvas");
    this.axis.className = "flamechart-axis";
    this.lanesEl = document.createElement("div");
    this.lanesEl.className = "flamechart-lanes";
    this.moreEl = document.createElement("div");
    this.moreEl.className = "flamechart-more muted";
    this.moreEl.hidden = true;
    this.tooltip = document.createElement("div");
    this.tooltip.className = "tooltip";
    this.tooltip.hidden = true;
    panel.append(this.axis, this.lanesEl, this.moreEl, this.tooltip);
    new ResizeObserver(() => {
      if (this.data && this.panel.clientWidth !== this.cssWidth && this.panel.clientWidth > 0) this.draw();
    }).observe(panel);
    onSchemeChange(() => {
      const d = this.data;
      if (!d) return;
      this.colors = framePalette(d.frameName.length, d.binaries, d.frameBinary, d.frameKind, this.colorMode);
      this.draw();
    });
  }

  setData(d: ChartData | null, colorMode: "binary" | "kind"): void {
    this.data = d;
    this.colorMode = colorMode;
    this.colors = d ? framePalette(d.frameName.length, d.binaries, d.frameBinary, d.frameKind, colorMode) : null;
    this.tooltip.hidden = true;
    this.lanesEl.replaceChildren();
    this.canvases = [];
    this.matchFrames();
    if (!d) {
      this.moreEl.hidden = true;
      return;
    }
    d.lanes.forEach((lane, i) => {
      const box = document.createElement("div");
      box.className = "flamechart-lane";
      const head = document.createElement("div");
      head.className = "flamechart-lane-head";
      head.textContent = `${lane.title} — ${this.amount(lane.total, true)}`;
      head.title = `${lane.title}: ${lane.total.toLocaleString("en-US")} ${d.unit}`;
      const canvas = document.createElement("canvas");
      canvas.className = "flamechart-canvas";
      canvas.addEventListener("mousemove", (e) => this.onMove(e, i));
      canvas.addEventListener("mouseleave", () => (this.tooltip.hidden = true));
      canvas.addEventListener("click", (e) => this.onClick(e, i));
      canvas.addEventListener("contextmenu", (e) => this.onContext(e, i));
      box.append(head, canvas);
      this.lanesEl.append(box);
      this.canvases.push(canvas);
    });
    const more = d.truncatedLanes;
    const rest = d.truncatedTotal > 0 ? ` (${this.amount(d.truncatedTotal, true)})` : "";
    this.moreEl.textContent = more > 0 ? `${more.toLocaleString("en-US")} more thread${more === 1 ? "" : "s"} not shown${rest}` : "";
    this.moreEl.hidden = more <= 0;
  }

  getData(): ChartData | null {
    return this.data;
  }

  setColorMode(mode: "binary" | "kind"): void {
    if (mode === this.colorMode || !this.data) return;
    this.colorMode = mode;
    const d = this.data;
    this.colors = framePalette(d.frameName.length, d.binaries, d.frameBinary, d.frameKind, mode);
  }

  // Case-insensitive substring (or /regex/), like the flame graph's search.
  setSearch(query: string): void {
    if (query === this.query) return;
    this.query = query;
    this.matchFrames();
  }

  private matchFrames(): void {
    const d = this.data;
    const m = nameMatcher(this.query);
    if (!d || !m) {
      this.frameMatched = null;
      return;
    }
    const byName = d.names.map(m);
    const fm = new Uint8Array(d.frameName.length);
    for (let f = 0; f < fm.length; f++) fm[f] = byName[d.frameName[f]] ? 1 : 0;
    this.frameMatched = fm;
  }

  // The share of the shown lanes' samples whose stack holds a match.
  searchShare(): number | null {
    const d = this.data;
    const fm = this.frameMatched;
    if (!d || !fm) return null;
    const stackMatched = d.stacks.map((st) => st.some((f) => fm[f] === 1));
    let all = 0;
    let matched = 0;
    for (const lane of d.lanes) {
      for (let i = 0; i < lane.pointStack.length; i++) {
        const v = lane.pointValue[i];
        all += v;
        const s = lane.pointStack[i];
        if (s >= 0 && stackMatched[s]) matched += v;
      }
    }
    return all > 0 ? matched / all : 0;
  }

  // A value as time ("12.3 s CPU") when the unit allows, as joules for
  // microjoules (gpu_energy), else as a count.
  private amount(v: number, cpu: boolean): string {
    const d = this.data;
    if (!d) return String(v);
    if (d.unit === "microjoules") return formatMicrojoules(v);
    const noun = laneNoun(d.type);
    const what = noun ? ` ${noun}` : "";
    if (d.nsPerValue > 0) return `${formatSpan((v * d.nsPerValue) / 1e6)}${cpu ? what : ""}`;
    return `${v.toLocaleString("en-US")} ${d.unit}`;
  }

  draw(): void {
    const t0 = performance.now();
    const d = this.data;
    const dpr = window.devicePixelRatio || 1;
    const width = this.panel.clientWidth;
    this.cssWidth = width;
    const css = getComputedStyle(this.panel);
    const bg = css.getPropertyValue("--bg").trim() || "#fff";
    const grid = css.getPropertyValue("--border").trim() || "#ddd";
    const muted = css.getPropertyValue("--fg-muted").trim() || "#666";
    let boxes = 0;
    let matchedBoxes = 0;
    const ticks = d ? tickTimes(d.fromMs, d.toMs, width) : { step: 1000, times: [] };
    // The time axis.
    this.axis.hidden = !d;
    if (d) {
      const ctx = prepare(this.axis, width, AXIS, dpr, bg);
      ctx.font = FONT;
      ctx.textBaseline = "middle";
      const scale = width / Math.max(d.toMs - d.fromMs, 1);
      for (const t of ticks.times) {
        const x = (t - d.fromMs) * scale;
        ctx.fillStyle = grid;
        ctx.fillRect(x, AXIS - 5, 1, 5);
        ctx.fillStyle = muted;
        const label = clock(t, ticks.step < 1000);
        const w = ctx.measureText(label).width;
        if (x + 3 + w <= width) ctx.fillText(label, x + 3, AXIS / 2 - 1);
      }
    }
    // The lanes.
    if (d && this.colors) {
      const colors = this.colors;
      const fm = this.frameMatched;
      const scale = width / Math.max(d.toMs - d.fromMs, 1);
      // Boxes batched by colour (setting fillStyle parses the colour):
      // slots [0, S) the palette, [S, 2S) faded, 2S the highlight.
      const S = colors.styles.length;
      const batches: number[][] = Array.from({ length: 2 * S + 1 }, () => []);
      const fills = [...colors.styles, ...colors.faded, colors.highlight];
      d.lanes.forEach((lane, li) => {
        const canvas = this.canvases[li];
        const height = Math.max(lane.rows * ROW, 1);
        const ctx = prepare(canvas, width, height, dpr, bg);
        ctx.font = FONT;
        ctx.textBaseline = "middle";
        if (li === 0) this.charWidth = ctx.measureText("MMMMMMMMMM").width / 10;
        ctx.fillStyle = grid;
        for (const t of ticks.times) ctx.fillRect((t - d.fromMs) * scale, 0, 1, height);
        const labels: number[] = [];
        for (let k = 0; k < lane.n; k++) {
          let a = (lane.x0[k] - d.fromMs) * scale;
          let b = (lane.x1[k] - d.fromMs) * scale;
          if (b <= 0 || a >= width) continue;
          if (a < 0) a = 0;
          if (b > width) b = width;
          const w = b - a;
          if (w < MIN_WIDTH) continue;
          const f = lane.frame[k];
          const hit = fm !== null && fm[f] === 1;
          batches[hit ? 2 * S : fm ? S + colors.nodeStyle[f] : colors.nodeStyle[f]].push(a, lane.depth[k] * ROW, w > 1.5 ? w - 0.5 : w);
          boxes++;
          if (hit) matchedBoxes++;
          if (w > 3 * this.charWidth + 6) labels.push(k, a, w);
        }
        for (let slot = 0; slot < batches.length; slot++) {
          const batch = batches[slot];
          if (batch.length === 0) continue;
          ctx.fillStyle = fills[slot];
          for (let j = 0; j < batch.length; j += 3) ctx.fillRect(batch[j], batch[j + 1], batch[j + 2], ROW - 1);
          batch.length = 0;
        }
        ctx.fillStyle = colors.text;
        for (let j = 0; j < labels.length; j += 3) {
          const k = labels[j];
          const name = d.names[d.frameName[lane.frame[k]]] ?? "";
          const fit = Math.floor((labels[j + 2] - 6) / this.charWidth);
          const text = name.length <= fit ? name : name.slice(0, Math.max(fit - 1, 0)) + "…";
          ctx.fillText(text, labels[j + 1] + 3, lane.depth[k] * ROW + ROW / 2);
        }
      });
    }
    this.boxesDrawn = boxes;
    this.matchedDrawn = matchedBoxes;
    this.version++;
    const ds = this.panel.dataset;
    ds.version = String(this.version);
    ds.lanes = String(d ? d.lanes.length : 0);
    ds.boxes = String(boxes);
    ds.total = String(d ? d.total : 0);
    ds.matched = String(matchedBoxes);
    this.lastDrawMs = performance.now() - t0;
  }

  // The lane's box under the mouse, or -1.
  private hit(e: MouseEvent, li: number): number {
    const d = this.data;
    const lane = d?.lanes[li];
    if (!d || !lane) return -1;
    const rect = this.canvases[li].getBoundingClientRect();
    if (rect.width <= 0) return -1;
    const depth = Math.floor((e.clientY - rect.top) / ROW);
    const msPerPx = (d.toMs - d.fromMs) / rect.width;
    const t = d.fromMs + (e.clientX - rect.left) * msPerPx;
    return boxAt(lane, depth, t, 0.5 * msPerPx);
  }

  private onMove(e: MouseEvent, li: number): void {
    const d = this.data;
    const k = this.hit(e, li);
    if (!d || k < 0) {
      this.tooltip.hidden = true;
      return;
    }
    const lane = d.lanes[li];
    const f = lane.frame[k];
    const name = d.names[d.frameName[f]] ?? "";
    const binary = d.binaries[d.frameBinary[f]] ?? "";
    const kind = KIND_NAMES[d.frameKind[f]] ?? "";
    const x0 = lane.x0[k];
    const x1 = lane.x1[k];
    const v = lane.value[k];
    let html = `<b>${escapeHtml(name)}</b>`;
    if (binary || kind) html += `<div class="muted">${escapeHtml(binary)}${binary && kind ? " · " : ""}${kind}</div>`;
    // Samples are kept per agent bucket (1 s): a box's place inside its
    // bucket is layout, not when it ran. Say which buckets it is in.
    const [b0, b1] = bucketSpan(x0, x1, d.bucketMs, d.originMs);
    const subSecond = d.bucketMs < 1000;
    html += `<div class="muted">${escapeHtml(lane.title)}</div><table>
      <tr><td>in</td><td>${formatTime(Math.floor(b0))}${subSecond ? millis(b0) : ""} – ${clock(b1, subSecond)}</td></tr>
      <tr><td>buckets</td><td>${formatSpan(b1 - b0)} (samples are kept per ${formatSpan(d.bucketMs)})</td></tr>`;
    if (d.unit === "samples") {
      html += `<tr><td>samples</td><td>${v.toLocaleString("en-US")}${d.nsPerValue > 0 ? ` (${this.amount(v, true)})` : ""}</td></tr>`;
    } else {
      const label = d.unit === "microjoules" ? "energy" : d.nsPerValue === 0 ? escapeHtml(d.unit) : timeNoun(d.type);
      html += `<tr><td>${label}</td><td>${this.amount(v, false)}</td></tr>`;
    }
    html += `</table>`;
    this.tooltip.innerHTML = html;
    placeTooltip(this.tooltip, this.panel, e);
  }

  private onClick(e: MouseEvent, li: number): void {
    const d = this.data;
    const k = this.hit(e, li);
    if (!d || k < 0) return;
    const lane = d.lanes[li];
    const [from, to] = spanRange(d, lane.x0[k], lane.x1[k]);
    this.tooltip.hidden = true;
    this.options.onSelectRange(from, to);
  }

  private onContext(e: MouseEvent, li: number): void {
    const d = this.data;
    const k = this.hit(e, li);
    if (!d || k < 0 || !this.options.onContext) return;
    e.preventDefault();
    const f = d.lanes[li].frame[k];
    this.tooltip.hidden = true;
    this.options.onContext(d.names[d.frameName[f]] ?? "", d.binaries[d.frameBinary[f]] ?? "");
  }
}

function prepare(canvas: HTMLCanvasElement, width: number, height: number, dpr: number, bg: string): CanvasRenderingContext2D {
  canvas.style.height = `${height}px`;
  canvas.width = Math.max(1, Math.round(width * dpr));
  canvas.height = Math.max(1, Math.round(height * dpr));
  const ctx = canvas.getContext("2d", { alpha: false })!;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = bg;
  ctx.fillRect(0, 0, width, height);
  return ctx;
}

// Tick times: multiples of a round step, about one per 100 px.
function tickTimes(fromMs: number, toMs: number, width: number): { step: number; times: number[] } {
  const span = Math.max(toMs - fromMs, 1);
  const want = Math.max(1, Math.floor(width / 100));
  const step = TICK_STEPS_MS.find((s) => span / s <= want) ?? TICK_STEPS_MS[TICK_STEPS_MS.length - 1];
  const times: number[] = [];
  for (let t = Math.ceil(fromMs / step) * step; t < toMs && times.length < 200; t += step) times.push(t);
  return { step, times };
}

function millis(ms: number): string {
  return `.${String(Math.floor(ms) % 1000).padStart(3, "0")}`;
}

// Time of day, with milliseconds when asked.
function clock(ms: number, withMillis: boolean): string {
  const text = formatTime(Math.floor(ms)).slice(11);
  return withMillis ? text + millis(ms) : text;
}

// A duration in ms as "340 µs", "12.5 ms", "1.25 s", "12.3 s", "4m 05s".
export function formatSpan(ms: number): string {
  if (ms < 1) return `${Math.round(ms * 1000)} µs`;
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0)} ms`;
  const s = ms / 1000;
  if (s < 10) return `${s.toFixed(2)} s`;
  if (s < 600) return `${s.toFixed(1)} s`;
  const whole = Math.round(s);
  return `${Math.floor(whole / 60)}m ${String(whole % 60).padStart(2, "0")}s`;
}
