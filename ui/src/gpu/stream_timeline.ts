// The per-stream kernel timeline: one canvas, one row per (process,
// device, stream) over the selected range (at most 10 s), a bar per kernel
// (the CUDA-kernel frames' colour), memcpy and memset; blank lane between
// bars is the stream idle; hatched where the agent's trace budget dropped
// activities (the trace is incomplete there, not idle). Hover: the
// activity; click: select its kernel; drag: select that time range.
// Owned by the UI thread. For the end-to-end test the panel carries
// data-version (each draw), data-rows, data-bars (activities in view) and
// data-incomplete (shaded spans).
import { escapeHtml } from "../base/dom";
import { ActivityColors, activityColors } from "../flame/colors";
import { formatNanos, formatTime } from "../time";
import { ACTIVITY_KINDS } from "./kernel_api";
import { StreamRow, TraceModel, activityAt, busyAlpha } from "./trace_model";

const GUTTER = 50; // px, like the timeline's y axis above: the x ranges line up
const AXIS = 18;
const HEAD = 15; // the row's title
const BAR = 16;
const ROW = HEAD + BAR + 5;
const FONT = '11px ui-monospace, "DejaVu Sans Mono", Menlo, monospace';
const TICK_STEPS_NS = [1, 2, 5].flatMap((m) => [1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9].map((p) => m * p)).sort((a, b) => a - b);

export interface StreamTimelineOptions {
  onSelectRange: (fromMs: number, toMs: number) => void;
  onPick: (name: string) => void; // a click on a bar: its kernel
  describe: (name: string) => string; // tooltip lines for a kernel (grid, block), HTML
}

export class StreamTimeline {
  readonly panel = document.createElement("div");
  private canvas = document.createElement("canvas");
  private tooltip = document.createElement("div");
  private selection = document.createElement("div");
  private data: TraceModel | null = null;
  private match: ((name: string) => boolean) | null = null;
  private nameMatched: Uint8Array | null = null;
  private colors: ActivityColors = activityColors();
  private hatch: CanvasPattern | null = null;
  private cssWidth = 0;
  private dragFrom: number | null = null; // css px
  private version = 0;
  lastDrawMs = 0;

  constructor(private options: StreamTimelineOptions) {
    this.panel.className = "stream-timeline";
    this.canvas.className = "stream-canvas";
    this.tooltip.className = "tooltip";
    this.tooltip.hidden = true;
    this.selection.className = "stream-selection";
    this.selection.hidden = true;
    this.panel.append(this.canvas, this.selection, this.tooltip);
    this.canvas.addEventListener("mousedown", (e) => {
      if (e.button !== 0) return;
      this.dragFrom = this.localX(e);
      e.preventDefault();
    });
    this.canvas.addEventListener("mousemove", (e) => this.onMove(e));
    this.canvas.addEventListener("mouseleave", () => (this.tooltip.hidden = true));
    window.addEventListener("mouseup", (e) => this.onUp(e));
    new ResizeObserver(() => {
      if (this.data && this.panel.clientWidth !== this.cssWidth && this.panel.clientWidth > 0) this.draw();
    }).observe(this.panel);
  }

  setData(d: TraceModel | null): void {
    this.data = d;
    this.tooltip.hidden = true;
    this.colors = activityColors();
    this.matchNames();
  }

  // Bars whose name matches are highlighted, the others faded (null: none).
  setMatch(match: ((name: string) => boolean) | null): void {
    this.match = match;
    this.matchNames();
  }

  private matchNames(): void {
    const d = this.data;
    this.nameMatched = d && this.match ? Uint8Array.from(d.names, (n) => (this.match!(n) ? 1 : 0)) : null;
  }

  private plotWidth(): number {
    return Math.max(this.cssWidth - GUTTER, 1);
  }

  private localX(e: MouseEvent): number {
    return e.clientX - this.canvas.getBoundingClientRect().left;
  }

  // ns from the range's start at css x.
  private timeAt(x: number): number {
    const d = this.data!;
    return ((x - GUTTER) / this.plotWidth()) * d.spanNs;
  }

  draw(): void {
    const t0 = performance.now();
    const d = this.data;
    const width = this.panel.clientWidth;
    this.cssWidth = width;
    const rows = d ? d.rows.length : 0;
    const height = d ? AXIS + rows * ROW : 1;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.style.height = `${height}px`;
    this.canvas.width = Math.max(1, Math.round(width * dpr));
    this.canvas.height = Math.max(1, Math.round(height * dpr));
    const ctx = this.canvas.getContext("2d", { alpha: false })!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const css = getComputedStyle(this.panel);
    const bg = css.getPropertyValue("--bg").trim() || "#fff";
    const lane = css.getPropertyValue("--bg-alt").trim() || "#f4f5f7";
    const grid = css.getPropertyValue("--border").trim() || "#ddd";
    const muted = css.getPropertyValue("--fg-muted").trim() || "#666";
    const fg = css.getPropertyValue("--fg").trim() || "#111";
    ctx.fillStyle = bg;
    ctx.fillRect(0, 0, width, height);
    let bars = 0;
    let shaded = 0;
    if (d) {
      ctx.font = FONT;
      ctx.textBaseline = "middle";
      const pw = this.plotWidth();
      const scale = pw / d.spanNs;
      // Axis: offsets from the range's start.
      const want = Math.max(1, Math.floor(pw / 110));
      const step = TICK_STEPS_NS.find((s) => d.spanNs / s <= want) ?? 1e10;
      for (let t = 0; t <= d.spanNs; t += step) {
        const x = GUTTER + t * scale;
        ctx.fillStyle = grid;
        ctx.fillRect(x, AXIS - 5, 1, height - AXIS + 5);
        ctx.fillStyle = muted;
        const label = t === 0 ? clockMs(d.fromNs / 1e6) : `+${formatNanos(t)}`;
        if (x + 3 + ctx.measureText(label).width <= width) ctx.fillText(label, x + 3, AXIS / 2);
      }
      const hatch = this.hatchPattern(ctx);
      d.rows.forEach((row, r) => {
        const y = AXIS + r * ROW;
        ctx.fillStyle = fg;
        ctx.fillText(fit(ctx, row.title, width - GUTTER - 4), GUTTER, y + HEAD / 2 + 1);
        ctx.fillStyle = muted;
        const busy = `${Math.min(100, Math.round((100 * row.busyNs) / d.spanNs))}%`;
        ctx.fillText(busy, GUTTER - 6 - ctx.measureText(busy).width, y + HEAD + BAR / 2);
        ctx.fillStyle = lane;
        ctx.fillRect(GUTTER, y + HEAD, pw, BAR);
        bars += this.drawBars(ctx, row, y + HEAD, scale);
        for (const gap of row.incomplete) {
          const a = GUTTER + gap.from * scale;
          const w = Math.max((gap.to - gap.from) * scale, 1);
          ctx.fillStyle = this.colors.incomplete;
          ctx.fillRect(a, y + HEAD, w, BAR);
          if (hatch) {
            ctx.fillStyle = hatch;
            ctx.fillRect(a, y + HEAD, w, BAR);
          }
          shaded++;
        }
      });
    }
    this.version++;
    const ds = this.panel.dataset;
    ds.version = String(this.version);
    ds.rows = String(rows);
    ds.bars = String(bars);
    ds.incomplete = String(shaded);
    this.lastDrawMs = performance.now() - t0;
  }

  // One row's bars, at least a pixel wide; neighbours of one colour that
  // fall into the same pixels are merged into one fillRect, drawn as opaque
  // as the share of it the kernels really cover (a stream 1% busy must not
  // look as full as one 15% busy: 100 µs kernels every 5 ms share pixels).
  // Returns the activities drawn.
  private drawBars(ctx: CanvasRenderingContext2D, row: StreamRow, y: number, scale: number): number {
    const c = this.colors;
    const matched = this.nameMatched;
    let style = "";
    let runA = 0;
    let runB = -1;
    let runBusy = 0; // pixels the run's kernels cover, before the 1 px minimum
    const flush = () => {
      if (runB <= runA) return;
      ctx.globalAlpha = busyAlpha(runBusy / (runB - runA));
      ctx.fillRect(runA, y + 1, runB - runA, BAR - 2);
      ctx.globalAlpha = 1;
    };
    let drawn = 0;
    const limit = GUTTER + this.plotWidth();
    for (let i = 0; i < row.n; i++) {
      let a = GUTTER + row.start[i] * scale;
      let b = a + row.dur[i] * scale;
      if (b < GUTTER || a > limit) continue;
      a = Math.max(a, GUTTER);
      const busy = Math.max(0, Math.min(b, limit) - a);
      b = Math.min(Math.max(b, a + 1), limit);
      const k = row.kind[i] < c.kinds.length ? row.kind[i] : 0;
      const s = matched === null ? c.kinds[k] : matched[row.name[i]] ? c.highlight : c.faded[k];
      drawn++;
      if (s === style && a <= runB + 0.5) {
        runB = Math.max(runB, b);
        runBusy += busy;
        continue;
      }
      flush();
      if (s !== style) ctx.fillStyle = style = s;
      runA = a;
      runB = b;
      runBusy = busy;
    }
    flush();
    return drawn;
  }

  private hatchPattern(ctx: CanvasRenderingContext2D): CanvasPattern | null {
    if (this.hatch) return this.hatch;
    const tile = document.createElement("canvas");
    tile.width = tile.height = 6;
    const t = tile.getContext("2d")!;
    t.strokeStyle = getComputedStyle(this.panel).getPropertyValue("--fg-muted").trim() || "#666";
    t.globalAlpha = 0.55;
    t.beginPath();
    t.moveTo(0, 6);
    t.lineTo(6, 0);
    t.stroke();
    this.hatch = ctx.createPattern(tile, "repeat");
    return this.hatch;
  }

  // The row and activity under the mouse (activity -1: none there).
  private hit(e: MouseEvent): { row: number; activity: number; t: number } | null {
    const d = this.data;
    if (!d) return null;
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left;
    const y = e.clientY - rect.top - AXIS;
    const r = Math.floor(y / ROW);
    if (x < GUTTER || r < 0 || r >= d.rows.length || y - r * ROW < HEAD) return null;
    const t = this.timeAt(x);
    const slack = (3 * d.spanNs) / this.plotWidth();
    return { row: r, activity: activityAt(d.rows[r], t, slack), t };
  }

  private onMove(e: MouseEvent): void {
    if (this.dragFrom !== null) {
      const x = this.localX(e);
      const a = Math.max(GUTTER, Math.min(x, this.dragFrom));
      const b = Math.min(this.cssWidth, Math.max(x, this.dragFrom));
      this.selection.hidden = b - a < 3;
      this.selection.style.left = `${a}px`;
      this.selection.style.width = `${b - a}px`;
      this.tooltip.hidden = true;
      return;
    }
    const h = this.hit(e);
    const d = this.data;
    if (!h || !d) {
      this.tooltip.hidden = true;
      return;
    }
    const row = d.rows[h.row];
    let html = "";
    if (h.activity >= 0) {
      const i = h.activity;
      const kind = ACTIVITY_KINDS[row.kind[i]] ?? "kernel";
      const name = d.names[row.name[i]] || kind;
      html = `<b>${escapeHtml(name)}</b><div class="muted">${kind} · ${escapeHtml(row.title)}</div><table>
        <tr><td>start</td><td>+${formatNanos(row.start[i])}</td></tr>
        <tr><td>duration</td><td>${formatNanos(row.dur[i])}</td></tr>
        ${kind === "kernel" ? this.options.describe(name) : ""}
        <tr><td>correlation</td><td>${row.correlation[i]}${row.graph[i] ? ` · graph ${row.graph[i]}` : ""}</td></tr></table>`;
    } else {
      const gap = row.incomplete.find((g) => h.t >= g.from && h.t < g.to);
      if (!gap) {
        this.tooltip.hidden = true;
        return;
      }
      html = `<b>Trace incomplete here</b><div class="muted">${escapeHtml(row.title)}</div>
        <div>The agent kept ${gap.sent.toLocaleString("en-US")} of ${gap.recorded.toLocaleString("en-US")} activities of
        this process in this second; the rest of the second is not idle, just not traced.</div>`;
    }
    this.tooltip.innerHTML = html;
    this.tooltip.hidden = false;
    const x = this.localX(e);
    const rect = this.canvas.getBoundingClientRect();
    let left = x + 14;
    if (left + 320 > this.cssWidth) left = Math.max(0, x - 330);
    this.tooltip.style.left = `${left}px`;
    this.tooltip.style.top = `${e.clientY - rect.top + 14}px`;
  }

  private onUp(e: MouseEvent): void {
    if (this.dragFrom === null) return;
    const from = this.dragFrom;
    this.dragFrom = null;
    this.selection.hidden = true;
    const d = this.data;
    if (!d) return;
    const to = this.localX(e);
    if (Math.abs(to - from) >= 3) {
      const a = this.timeAt(Math.max(GUTTER, Math.min(from, to)));
      const b = this.timeAt(Math.min(this.cssWidth, Math.max(from, to)));
      const fromMs = Math.floor((d.fromNs + a) / 1e6);
      const toMs = Math.max(fromMs + 1, Math.ceil((d.fromNs + b) / 1e6));
      this.options.onSelectRange(fromMs, toMs);
      return;
    }
    const h = this.hit(e);
    if (h && h.activity >= 0) {
      const row = d.rows[h.row];
      const name = d.names[row.name[h.activity]];
      if (name && row.kind[h.activity] === 0) this.options.onPick(name);
    }
  }
}

// The range's start as time of day with milliseconds: 12:00:01.250.
function clockMs(ms: number): string {
  const whole = Math.floor(ms);
  return `${formatTime(whole).slice(11)}.${String(whole % 1000).padStart(3, "0")}`;
}

function fit(ctx: CanvasRenderingContext2D, text: string, width: number): string {
  if (ctx.measureText(text).width <= width) return text;
  let n = text.length;
  while (n > 1 && ctx.measureText(text.slice(0, n) + "…").width > width) n--;
  return text.slice(0, n) + "…";
}
