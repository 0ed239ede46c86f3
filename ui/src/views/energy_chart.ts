// The energy view's chart: GPU busy, GPU idle and CPU power per step over the
// range, stacked (uPlot, the library of the timeline and the GPU charts),
// with a legend that follows the cursor (the step's watts and joules) and
// shows the range's joules otherwise. Its x range and its 50 px axis match
// the timeline's, whose cursor it shares; a drag across it selects a range.
// The series: energy_model.ts energyChart.
import uPlot from "uplot";
import { escapeHtml } from "../base/dom";
import { readTheme } from "../gpu/charts";
import { syncCursor } from "../timeline";
import { formatDuration } from "../time";
import { formatJoules } from "../units";
import { EnergyChartData, formatWatts } from "./energy_model";

const PLOT_HEIGHT = 160;
const AXIS_SIZE = 50; // the timeline's: the plot lines up under it

export interface EnergyChartContext {
  fromMs: number;
  toMs: number;
  width: number;
  onSelect: (fromMs: number, toMs: number) => void;
}

export interface DrawnEnergyChart {
  el: HTMLElement;
  plot: uPlot;
  series: number;
  points: number;
}

// Each layer's colour (style.css, light and dark).
function layerColor(key: string): string {
  const css = getComputedStyle(document.documentElement);
  const v = css.getPropertyValue(`--energy-${key.replace("_", "-")}`).trim();
  return v || { gpu_busy: "#8e44ad", gpu_idle: "#d7bde2", cpu: "#e67e22" }[key] || "#888";
}

// Watts in at most 5 characters: "610W", "1.2kW".
function compactWatts(w: number): string {
  const a = Math.abs(w);
  if (a === 0) return "0";
  const trim = (x: number, unit: string) => `${+x.toFixed(x < 10 ? 1 : 0)}${unit}`;
  if (a >= 1e6) return trim(w / 1e6, "MW");
  if (a >= 1e3) return trim(w / 1e3, "kW");
  return trim(w, "W");
}

export function drawEnergyChart(d: EnergyChartData, ctx: EnergyChartContext): DrawnEnergyChart {
  const theme = readTheme();
  const el = document.createElement("div");
  el.className = "energy-chart";
  const head = document.createElement("div");
  head.className = "energy-chart-head";
  head.innerHTML = `<span class="energy-chart-title">Power over the range <span class="muted">W, stacked; steps of ${escapeHtml(
    formatDuration(d.stepMs),
  )}</span></span>`;
  const legend = document.createElement("span");
  legend.className = "energy-legend";
  head.append(legend);
  const plotEl = document.createElement("div");
  plotEl.className = "energy-plot";
  el.append(head, plotEl);

  // Top layer first: each fills down to zero over the ones drawn before it,
  // so every band shows its own layer.
  const layers = [...d.layers].reverse();
  // One more point at the range's end, so the last step is drawn to it.
  const xs = [...d.xs, Math.max(d.xs[d.xs.length - 1] ?? 0, ctx.toMs / 1000)];
  const ys = layers.map((l) => [...l.top, l.top[l.top.length - 1] ?? 0]);
  const axis = { stroke: theme.muted, grid: { stroke: theme.grid, width: 1 }, ticks: { stroke: theme.grid, width: 1 } };
  const stepped = uPlot.paths.stepped!({ align: 1 });
  const opts: uPlot.Options = {
    width: ctx.width,
    height: PLOT_HEIGHT,
    cursor: { sync: syncCursor(), drag: { x: true, y: false, setScale: false }, y: false, points: { show: false } },
    select: { show: true, left: 0, top: 0, width: 0, height: 0 },
    legend: { show: false },
    scales: {
      x: { time: true, range: () => [ctx.fromMs / 1000, ctx.toMs / 1000] },
      y: { range: (_u, _min, max) => [0, (max || 0) > 0 ? max * 1.08 : 1] },
    },
    axes: [
      { ...axis, size: 24, space: 80 },
      { ...axis, size: AXIS_SIZE, space: 24, values: (_u, splits) => splits.map(compactWatts) },
    ],
    series: [
      {},
      ...layers.map((l) => {
        const color = layerColor(l.key);
        return { label: l.label, stroke: color, fill: color, width: 1, paths: stepped, points: { show: false } };
      }),
    ],
    hooks: {
      setSelect: [
        (u) => {
          if (u.select.width < 3) return;
          const from = u.posToVal(u.select.left, "x") * 1000;
          const to = u.posToVal(u.select.left + u.select.width, "x") * 1000;
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          ctx.onSelect(Math.round(from), Math.round(to));
        },
      ],
    },
  };

  // The legend, bottom layer first: the step's watts and joules under the
  // cursor, else the range's joules.
  const values: HTMLElement[] = [];
  for (const l of d.layers) {
    const item = document.createElement("span");
    item.className = "energy-legend-item";
    item.dataset.layer = l.key;
    const swatch = document.createElement("i");
    swatch.className = "swatch";
    swatch.style.background = layerColor(l.key);
    const name = document.createElement("span");
    name.textContent = l.label;
    const val = document.createElement("span");
    val.className = "val";
    item.append(swatch, name, val);
    legend.append(item);
    values.push(val);
  }
  const totals = d.layers.map((l) => l.joules.reduce((s, j) => s + j, 0));
  // The step under the cursor (a step's value holds until the next step), or -1.
  const stepAt = (u: uPlot | null): number => {
    const left = u?.cursor.left;
    if (!u || left == null || left < 0 || !d.xs.length) return -1;
    const i = Math.floor((u.posToVal(left, "x") * 1000 - d.xs[0] * 1000) / d.stepMs);
    return i >= 0 && i < d.xs.length ? i : -1;
  };
  const showValues = (u: uPlot | null) => {
    const k = stepAt(u);
    d.layers.forEach((l, i) => {
      values[i].textContent = k >= 0 ? `${formatWatts(l.watts[k])} (${formatJoules(l.joules[k])})` : formatJoules(totals[i]);
    });
  };
  showValues(null);
  opts.hooks!.setCursor = [(u) => showValues(u)];

  const plot = new uPlot(opts, [xs, ...ys] as unknown as uPlot.AlignedData, plotEl);
  const points = d.xs.length;
  el.dataset.points = String(points);
  el.dataset.series = String(d.layers.length);
  el.dataset.stepMs = String(d.stepMs);
  return { el, plot, series: d.layers.length, points };
}
