// The timeline: samples per step for the current selector (/api/v1/series,
// every series summed), drawn by uPlot. Dragging across it selects a range;
// the app makes that the new [from, to) (or, in the diff view, the base).
// A shaded band can mark another range (the diff's base), and subtle bands
// the insights' ranges (insight_marks.ts: a tooltip names the insight, a
// click opens its card). Its cursor is shared with the GPU view's charts.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { SeriesJson } from "./api/types";
import { onSchemeChange } from "./base/dom";
import { InsightMarks } from "./insight_marks";
import { compactNanos } from "./time";
import type { InsightMark } from "./views/insights_model";
import { ValueUnit, compactMicrojoules, isEnergyUnit, isTimeUnit, valueNoun } from "./units";

// One cursor for the timeline and the GPU view's charts: hovering one shows
// the same time on the others. Only the cursor moves in sync; a drag
// selects on the chart it happens on.
export const SYNC_KEY = "warpscope-time";
export function syncCursor(): uPlot.Cursor.Sync {
  return {
    key: SYNC_KEY,
    scales: ["x", null],
    filters: { pub: (type: string) => type === "mousemove" || type === "mouseleave", sub: () => true },
  };
}

export class Timeline {
  private plot: uPlot | null = null;
  private data: uPlot.AlignedData = [[], []];
  private range: [number, number] = [0, 1]; // seconds, what uPlot's x scale spans
  private shade: [number, number] | null = null; // ms
  private shadeColor = "rgba(30, 132, 73, 0.18)";
  private unit: ValueUnit = { type: "cpu", unit: "samples", periodNanos: 0 }; // the y axis: counts or time
  private marks: InsightMarks;

  // `onOpenInsight`: a click on an insight's band, with its key.
  constructor(
    private container: HTMLElement,
    private onSelect: (fromMs: number, toMs: number) => void,
    onOpenInsight: (key: string) => void,
  ) {
    this.marks = new InsightMarks(onOpenInsight);
    new ResizeObserver(() => this.plot?.setSize(this.size())).observe(container);
    // The axes' and grid's colours are read when the plot is made: a light
    // or dark scheme change makes it again.
    onSchemeChange(() => {
      if (!this.plot) return;
      this.plot.destroy();
      this.plot = null;
      this.create();
    });
  }

  // The content box (clientWidth counts the padding): the plot then lines
  // up with the GPU view's charts below.
  private size() {
    const css = getComputedStyle(this.container);
    const padding = (parseFloat(css.paddingLeft) || 0) + (parseFloat(css.paddingRight) || 0);
    return { width: Math.max(this.container.clientWidth - padding, 100), height: 130 };
  }

  // Steps without samples are absent in the answer: they are zeros here.
  // `unit`: the type's (/api/v1/types); nanoseconds label the axis as time, microjoules as energy.
  setSeries(s: SeriesJson, unit: ValueUnit): number {
    const unitChanged = isTimeUnit(unit) !== isTimeUnit(this.unit) || valueNoun(unit) !== valueNoun(this.unit);
    this.unit = unit;
    const steps = Math.max(1, Math.ceil((s.to_ms - s.from_ms) / s.step_ms));
    const xs = new Float64Array(steps);
    const ys = new Float64Array(steps);
    for (let k = 0; k < steps; k++) xs[k] = (s.from_ms + k * s.step_ms) / 1000;
    let total = 0;
    for (const series of s.series) {
      for (const [t, v] of series.points) {
        const k = Math.floor((t - s.from_ms) / s.step_ms);
        if (k >= 0 && k < steps) ys[k] += v;
        total += v;
      }
    }
    this.data = [Array.from(xs), Array.from(ys)];
    this.range = [s.from_ms / 1000, s.to_ms / 1000];
    if (unitChanged && this.plot) {
      this.plot.destroy();
      this.plot = null;
    }
    if (!this.plot) this.create();
    else this.plot.setData(this.data);
    return total;
  }

  // The insights' ranges as bands over the plot (none: []).
  setInsightMarks(marks: InsightMark[]): void {
    this.marks.set(marks);
    this.container.dataset.insightMarks = String(marks.length);
  }

  // The next drag picks another range than the view's (the diff's base):
  // the container says so (.picking-base, a crosshair and a green selection).
  setPicking(on: boolean): void {
    this.container.classList.toggle("picking-base", on);
  }

  // Marks [fromMs, toMs) on the plot (clipped to it), or nothing.
  setShade(range: [number, number] | null): void {
    const same = range === this.shade || (range && this.shade && range[0] === this.shade[0] && range[1] === this.shade[1]);
    if (same) return;
    this.shade = range;
    this.plot?.redraw(false, false);
  }

  private drawShade(u: uPlot): void {
    if (!this.shade) return;
    const { left, top, width, height } = u.bbox;
    const a = Math.max(left, u.valToPos(this.shade[0] / 1000, "x", true));
    const b = Math.min(left + width, u.valToPos(this.shade[1] / 1000, "x", true));
    if (!(b > a)) return;
    u.ctx.save();
    u.ctx.fillStyle = this.shadeColor;
    u.ctx.fillRect(a, top, b - a, height);
    u.ctx.restore();
  }

  private create(): void {
    const css = getComputedStyle(document.documentElement);
    const fg = css.getPropertyValue("--fg-muted").trim() || "#666";
    const grid = css.getPropertyValue("--border").trim() || "#ddd";
    const accent = css.getPropertyValue("--accent").trim() || "#d35400";
    const shrank = css.getPropertyValue("--shrank").trim();
    if (/^#[0-9a-f]{6}$/i.test(shrank)) this.shadeColor = shrank + "2e";
    const opts: uPlot.Options = {
      ...this.size(),
      cursor: { drag: { x: true, y: false, setScale: false }, y: false, sync: syncCursor() },
      select: { show: true, left: 0, top: 0, width: 0, height: 0 },
      legend: { show: false },
      plugins: [this.marks.plugin(true)],
      scales: { x: { time: true, range: () => this.range }, y: { range: (_u, _min, max) => [0, Math.max(max, 1)] } },
      axes: [
        { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid } },
        { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, size: 50, values: (_u, splits) => splits.map(this.axisValue) },
      ],
      series: [{}, { label: valueNoun(this.unit), stroke: accent, fill: accent + "33", width: 1.5, points: { show: false } }],
      hooks: {
        draw: [(u) => this.drawShade(u)],
        setSelect: [
          (u) => {
            if (u.select.width < 3) return;
            const from = u.posToVal(u.select.left, "x") * 1000;
            const to = u.posToVal(u.select.left + u.select.width, "x") * 1000;
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            this.onSelect(Math.round(from), Math.round(to));
          },
        ],
      },
    };
    this.plot = new uPlot(opts, this.data, this.container);
  }

  // Time per step for nanosecond types ("850 ms"), energy for microjoule
  // types ("12kJ"), else compact counts.
  private axisValue = (v: number): string =>
    isTimeUnit(this.unit) ? compactNanos(v) : isEnergyUnit(this.unit) ? compactMicrojoules(v) : compact(v);
}

// Axis numbers that fit 50 px: 950, 12k, 3.4M, 5.1G.
function compact(v: number): string {
  const a = Math.abs(v);
  for (const [div, suffix] of [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]] as const) {
    if (a >= div) {
      const x = v / div;
      return `${Number.isInteger(x) ? x : x.toFixed(x >= 10 ? 0 : 1)}${suffix}`;
    }
  }
  return String(Number.isInteger(v) ? v : Number(v.toFixed(2)));
}
