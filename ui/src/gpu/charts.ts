// The GPU view's charts: uPlot line charts and the clock-event-reasons band
// chart, each in a `.gpu-chart` block with its title and a hand-made legend
// (live values under the cursor, the last values otherwise; a process's item
// focuses it). All of them share the cursor with the main timeline (one
// uPlot sync key) and its x range; a drag across one selects a time range.
// The insights of the node are bands over every chart (insight_marks.ts).
import uPlot from "uplot";
import { escapeHtml } from "../base/dom";
import type { InsightMarks } from "../insight_marks";
import { syncCursor } from "../timeline";
import { ChartSpec, LineChartSpec, Theme, ThrottleChartSpec, withAlpha } from "./chart_specs";
import { Aligned, LineInput, REASON_BITS, Scale, align, formatNumber, formatValue, scaleFor } from "./data";

const PLOT_HEIGHT = 130;
const BAND_ROW_PX = 13;
const AXIS_SIZE = 50; // the main timeline's: the plots line up under it
const X_AXIS_SIZE = 24; // one line of times (the timeline above has the dates)
// Tick steps in the chart's display unit (GiB, GB/s, ...), not in bytes.
const NICE = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2500, 5e3, 1e4, 2e4, 5e4, 1e5];

// Times on one line: seconds when ticks are under a minute apart, dates
// when they are days apart.
function timeValues(_u: uPlot, splits: number[], _axis: number, _space: number, incr: number): string[] {
  const pad = (n: number) => String(n).padStart(2, "0");
  return splits.map((s) => {
    const d = new Date(s * 1000);
    if (incr >= 86400) return `${d.getMonth() + 1}/${d.getDate()}`;
    const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    return incr < 60 ? `${hm}:${pad(d.getSeconds())}` : hm;
  });
}

export function readTheme(): Theme {
  const css = getComputedStyle(document.documentElement);
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  const palette: string[] = [];
  for (let i = 1; i <= 10; i++) palette.push(v(`--series-${i}`, ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"][i % 5]));
  return { fg: v("--fg", "#1d1f23"), muted: v("--fg-muted", "#5f6670"), grid: v("--border", "#d9dce1"), warn: v("--grew", "#c0392b"), palette };
}

export interface ChartContext {
  fromMs: number;
  toMs: number;
  stepMs: number;
  width: number;
  theme: Theme;
  onSelect: (fromMs: number, toMs: number) => void;
  onFocusPid: (pid: string) => void;
  insightMarks: InsightMarks; // the node's insights, a band each
  labelMarks: boolean; // write each band's kind on it (the first chart)
}

export interface DrawnChart {
  el: HTMLElement;
  plot: uPlot;
  series: number; // data series plotted (band helpers not counted)
  points: number; // their points
}

function chartBlock(spec: ChartSpec, unitText: string): { el: HTMLElement; legend: HTMLElement; plotEl: HTMLElement } {
  const el = document.createElement("div");
  el.className = "gpu-chart";
  el.dataset.metric = spec.metric;
  el.dataset.metrics = spec.metrics.join(",");
  const head = document.createElement("div");
  head.className = "gpu-chart-head";
  head.innerHTML = `<span class="gpu-chart-title">${escapeHtml(spec.title)}${unitText ? ` <span class="muted">${escapeHtml(unitText)}</span>` : ""}</span>`;
  const legend = document.createElement("span");
  legend.className = "gpu-legend";
  head.append(legend);
  const plotEl = document.createElement("div");
  plotEl.className = "gpu-plot";
  el.append(head, plotEl);
  return { el, legend, plotEl };
}

function baseOptions(ctx: ChartContext, height: number): uPlot.Options {
  const { theme } = ctx;
  const axis = { stroke: theme.muted, grid: { stroke: theme.grid, width: 1 }, ticks: { stroke: theme.grid, width: 1 } };
  return {
    width: ctx.width,
    height,
    cursor: {
      sync: syncCursor(),
      drag: { x: true, y: false, setScale: false },
      y: false,
      hover: { prox: 40 },
    },
    select: { show: true, left: 0, top: 0, width: 0, height: 0 },
    legend: { show: false },
    plugins: [ctx.insightMarks.plugin(ctx.labelMarks)],
    scales: { x: { time: true, range: () => [ctx.fromMs / 1000, ctx.toMs / 1000] } },
    // x: at least 80 px between ticks, so "19:29:10" labels never run into each other.
    axes: [{ ...axis, size: X_AXIS_SIZE, space: 80, values: timeValues }, { ...axis, size: AXIS_SIZE }],
    series: [{}],
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
}

export function drawChart(spec: ChartSpec, ctx: ChartContext): DrawnChart {
  return spec.kind === "lines" ? drawLines(spec, ctx) : drawThrottle(spec, ctx);
}

function drawLines(spec: LineChartSpec, ctx: ChartContext): DrawnChart {
  // Lines first (series 1..n), then each band's max and min.
  const inputs: LineInput[] = spec.lines.map((l) => l.input);
  const bandIdx: [number, number, string][] = [];
  for (const l of spec.lines) {
    if (!l.minMax) continue;
    inputs.push(l.minMax[1], l.minMax[0]);
    bandIdx.push([inputs.length - 1, inputs.length, l.color]);
  }
  const a: Aligned = align(inputs, ctx.stepMs);
  let maxAbs = 0;
  for (const y of a.ys) for (const v of y) if (v !== undefined && Math.abs(v) > maxAbs) maxAbs = Math.abs(v);
  const scale: Scale = scaleFor(spec.unit, maxAbs);
  const { el, legend, plotEl } = chartBlock(spec, scale.suffix);
  const opts = baseOptions(ctx, PLOT_HEIGHT);
  // A line's own breaks (findBreaks), in canvas pixels: uPlot clips them out.
  const gaps = (i: number) => (u: uPlot) =>
    a.breaks[i].map(([x0, x1]): [number, number] => [u.valToPos(x0, "x", true), u.valToPos(x1, "x", true)]);
  spec.lines.forEach((l, i) => {
    opts.series.push({
      label: l.label,
      stroke: l.color,
      width: l.width,
      dash: l.dash,
      points: { show: false },
      gaps: gaps(i),
    });
  });
  for (let i = spec.lines.length; i < inputs.length; i++) {
    opts.series.push({ stroke: "transparent", width: 0, points: { show: false }, gaps: gaps(i) });
  }
  opts.bands = bandIdx.map(([hi, lo, color]) => ({ series: [hi, lo] as [number, number], fill: withAlpha(color, 0.14) }));
  opts.scales!.y = {
    range: (_u, min, max) => {
      if (spec.y === "percent") return [0, Math.max(100, max || 0)];
      if (spec.y === "symmetric") {
        const m = Math.max(Math.abs(min || 0), Math.abs(max || 0)) * 1.1 || 1;
        return [-m, m];
      }
      return [0, (max || 0) > 0 ? max * 1.08 : 1];
    },
  };
  opts.axes![1].incrs = NICE.map((x) => x * scale.div);
  opts.axes![1].space = 22;
  opts.axes![1].values = (_u, splits) => splits.map((v) => formatNumber((spec.magnitude ? Math.abs(v) : v) / scale.div));

  // The legend: one item per line; values follow the cursor.
  const values: HTMLElement[] = [];
  spec.lines.forEach((l) => {
    const item = document.createElement(l.pid ? "button" : "span");
    item.className = `gpu-legend-item${l.pid ? " process" : ""}${l.focused ? " focused" : ""}`;
    const swatch = document.createElement("i");
    swatch.className = "swatch";
    swatch.style.borderTopColor = l.color;
    swatch.style.borderTopStyle = l.dash ? "dashed" : "solid";
    swatch.style.borderTopWidth = `${Math.max(2, Math.round(l.width))}px`;
    const name = document.createElement("span");
    name.textContent = l.label;
    const val = document.createElement("span");
    val.className = "val";
    item.append(swatch, name, val);
    if (l.pid) {
      const pid = l.pid;
      item.dataset.pid = pid;
      item.title = l.focused
        ? "focused: a drag selects this process's CPU samples; click to unfocus"
        : `focus process ${pid}: highlighted here, and a drag opens its CPU flame graph`;
      item.addEventListener("click", () => ctx.onFocusPid(l.focused ? "" : pid));
    }
    values.push(val);
    legend.append(item);
  });
  if (spec.note) {
    const note = document.createElement("span");
    note.className = "muted small";
    note.textContent = spec.note;
    legend.append(note);
  }
  const fmt = (v: number) => formatValue(spec.magnitude ? Math.abs(v) : v, scale);
  const last = a.ys.map((y) => {
    for (let j = y.length - 1; j >= 0; j--) if (y[j] !== undefined) return y[j];
    return undefined;
  });
  const showValues = (u: uPlot | null) => {
    const idx = u?.cursor.idx;
    spec.lines.forEach((_l, i) => {
      let v: number | undefined | null = last[i];
      if (u && idx != null) {
        const j = u.cursor.idxs?.[i + 1];
        v = j == null ? undefined : (a.ys[i][j] as number | undefined);
      }
      values[i].textContent = v == null ? "–" : fmt(v);
    });
  };
  showValues(null);
  opts.hooks!.setCursor = [(u) => showValues(u)];

  const data = [a.xs, ...a.ys] as unknown as uPlot.AlignedData;
  const plot = new uPlot(opts, data, plotEl);
  const points = a.counts.slice(0, spec.lines.length).reduce((s, n) => s + n, 0);
  el.dataset.points = String(points);
  return { el, plot, series: spec.lines.length, points };
}

// Rows per reason bit, coloured over each step whose max bitmask has the bit
// (OR-ed over the GPUs shown); XID errors as red ticks with their code.
function drawThrottle(spec: ThrottleChartSpec, ctx: ChartContext): DrawnChart {
  const { theme } = ctx;
  const a = align(spec.reasons, ctx.stepMs);
  const masks: number[] = a.xs.map((_x, j) => {
    let m = 0;
    for (const y of a.ys) if (y[j] !== undefined) m |= y[j]!;
    return m;
  });
  const hasValue = a.xs.map((_x, j) => a.ys.some((y) => y[j] !== undefined));
  const xidEvents: { t: number; label: string }[] = [];
  for (const x of spec.xids) for (const p of x.input.points) if (p[2] > 0) xidEvents.push({ t: p[0] / 1000, label: x.label });
  xidEvents.sort((p, q) => p.t - q.t);

  const rows = REASON_BITS;
  const { el, legend, plotEl } = chartBlock(spec, "");
  const opts = baseOptions(ctx, rows.length * BAND_ROW_PX + X_AXIS_SIZE + 12);
  opts.cursor!.points = { show: false };
  opts.series.push({ label: "reasons", stroke: "transparent", width: 0, points: { show: false }, paths: () => null });
  opts.scales!.y = { range: () => [0, rows.length] };
  opts.axes![1] = {
    ...opts.axes![1],
    grid: { show: false },
    ticks: { show: false },
    font: "10px system-ui, sans-serif",
    gap: 2,
    splits: () => rows.map((_r, i) => rows.length - i - 0.5),
    values: () => rows.map((r) => r.short),
  };
  // A point covers its step, or the agent's interval when that is longer
  // (the median distance between points), like the lines that span it.
  const dts: number[] = [];
  for (let j = 1; j < a.xs.length; j++) dts.push(a.xs[j] - a.xs[j - 1]);
  dts.sort((p, q) => p - q);
  const stepS = Math.max(ctx.stepMs / 1000, dts.length ? dts[dts.length >> 1] : 0);
  opts.hooks!.draw = [
    (u) => {
      const c = u.ctx;
      const { left, top, width, height } = u.bbox;
      c.save();
      c.beginPath();
      c.rect(left, top, width, height);
      c.clip();
      const rowPx = height / rows.length;
      rows.forEach((r, ri) => {
        c.fillStyle = r.faint ? withAlpha(theme.muted, 0.3) : r.color || theme.muted;
        const y0 = top + ri * rowPx + 1;
        const h = Math.max(1, rowPx - 2);
        // Runs of consecutive steps with the bit: one rectangle each.
        let runStart = -1;
        let runEnd = -1;
        const flush = () => {
          if (runStart < 0) return;
          const x0 = u.valToPos(runStart, "x", true);
          const x1 = Math.max(x0 + 1, u.valToPos(runEnd, "x", true));
          c.fillRect(x0, y0, x1 - x0, h);
          runStart = -1;
        };
        for (let j = 0; j < a.xs.length; j++) {
          if (!hasValue[j] || !(masks[j] & r.bit)) continue;
          const x = a.xs[j];
          if (runStart >= 0 && x <= runEnd + stepS * 0.01) runEnd = Math.max(runEnd, x + stepS);
          else {
            flush();
            runStart = x;
            runEnd = x + stepS;
          }
        }
        flush();
      });
      c.strokeStyle = theme.warn;
      c.fillStyle = theme.warn;
      c.lineWidth = Math.max(1, devicePixelRatio);
      c.font = `${Math.round(10 * devicePixelRatio)}px system-ui, sans-serif`;
      c.textBaseline = "top";
      for (const e of xidEvents) {
        const x = Math.round(u.valToPos(e.t, "x", true)) + 0.5;
        c.beginPath();
        c.moveTo(x, top);
        c.lineTo(x, top + height);
        c.stroke();
        c.fillText(e.label, x + 3, top + 1);
      }
      c.restore();
    },
  ];

  // The legend: the reasons at the cursor (or anywhere in the range), XIDs.
  const seen = rows.filter((r) => masks.some((m, j) => hasValue[j] && m & r.bit));
  const atCursor = document.createElement("span");
  atCursor.className = "val";
  legend.append(atCursor);
  const describe = (m: number) =>
    rows
      .filter((r) => m & r.bit)
      .map((r) => r.name)
      .join(", ") || "none";
  const showAt = (u: uPlot | null) => {
    const idx = u?.cursor.idx;
    if (u && idx != null) {
      const j = u.cursor.idxs?.[1] ?? idx;
      atCursor.textContent = j != null && hasValue[j] ? `at cursor: ${describe(masks[j])}` : "at cursor: no data";
    } else {
      atCursor.textContent = seen.length ? `in this range: ${seen.map((r) => r.name).join(", ")}` : "no clock events in this range";
    }
  };
  showAt(null);
  opts.hooks!.setCursor = [(u) => showAt(u)];
  if (xidEvents.length) {
    const counts = new Map<string, number>();
    for (const e of xidEvents) counts.set(e.label, (counts.get(e.label) ?? 0) + 1);
    const x = document.createElement("span");
    x.className = "gpu-xid";
    x.textContent = [...counts].map(([label, n]) => `${label} in ${n} step${n === 1 ? "" : "s"}`).join(" · ");
    legend.append(x);
  }
  if (spec.note) {
    const note = document.createElement("span");
    note.className = "muted small";
    note.textContent = spec.note;
    legend.append(note);
  }

  const data = [a.xs, masks.map((m, j) => (hasValue[j] ? m : undefined))] as unknown as uPlot.AlignedData;
  const plot = new uPlot(opts, data, plotEl);
  const points = hasValue.filter(Boolean).length + xidEvents.length;
  el.dataset.points = String(points);
  return { el, plot, series: 1 + spec.xids.filter((x) => x.input.points.some((p) => p[2] > 0)).length, points };
}

