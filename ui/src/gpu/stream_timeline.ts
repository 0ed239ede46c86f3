// The per-stream kernel timeline: one canvas, one row per (process,
// device, stream) over the selected range (at most 10 s), a bar per kernel
// (the CUDA-kernel frames' colour), memcpy and memset; shaded where the
// GPU ran nothing of any traced stream (idle); hatched where the agent's
// trace budget dropped activities (the trace is incomplete there, not
// idle). Under the streams, one row per launching CPU thread with its
// launch calls, and a line from each call to the kernel it launched.
// Hover: the activity or call; click: select its kernel; drag: select that
// time range. Owned by the UI thread. For the end-to-end test the panel
// carries data-version (each draw), data-rows, data-bars (activities in
// view), data-incomplete (shaded spans), data-threads, data-calls (calls in
// view), data-links (lines drawn), data-links-hidden (too many to draw) and
// data-idle (idle spans shaded).
import { escapeHtml, onSchemeChange } from "../base/dom";
import { ActivityColors, activityColors } from "../flame/colors";
import { formatNanos, formatTime } from "../time";
import { ACTIVITY_KINDS } from "./kernel_api";
import { StreamRow, ThreadRow, TraceModel, activityAt, busyAlpha, spanAt } from "./trace_model";

const GUTTER = 50; // px, like the timeline's y axis above: the x ranges line up
const AXIS = 18;
const HEAD = 15; // the row's title
const BAR = 16;
const ROW = HEAD + BAR + 5;
const CALL_BAR = 10;
const THREAD_ROW = HEAD + CALL_BAR + 5;
const SECTION = 18; // the "CPU" heading between streams and threads
const MAX_LINKS = 4000; // more in view: none drawn (a hint says so)
const MIN_IDLE_PX = 2; // idle gaps narrower than this are not shaded
const FONT = '11px ui-monospace, "DejaVu Sans Mono", Menlo, monospace';
const TICK_STEPS_NS = [1, 2, 5].flatMap((m) => [1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9].map((p) => m * p)).sort((a, b) => a - b);

type Hit =
  | { kind: "stream"; row: number; activity: number; t: number }
  | { kind: "thread"; row: number; call: number; t: number };

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
    onSchemeChange(() => {
      this.colors = activityColors();
      this.hatch = null;
      if (this.data) this.draw();
    });
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
    const threads = d ? d.threads.length : 0;
    const height = d ? this.threadsTop() + threads * THREAD_ROW : 1;
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
    let calls = 0;
    let links = 0;
    let linksHidden = 0;
    let idle = 0;
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
        ctx.fillStyle = this.colors.idle;
        for (const gap of row.idle) {
          const w = (gap.to - gap.from) * scale;
          if (w < MIN_IDLE_PX) continue;
          ctx.fillRect(GUTTER + gap.from * scale, y + HEAD, w, BAR);
          idle++;
        }
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
      if (threads > 0) {
        const top = this.threadsTop();
        d.threads.forEach((t, i) => {
          const y = top + i * THREAD_ROW;
          ctx.fillStyle = lane;
          ctx.fillRect(GUTTER, y + HEAD, pw, CALL_BAR);
          calls += this.drawCalls(ctx, t, y + HEAD, scale);
        });
        const drawn = this.drawLinks(ctx, d, scale);
        links = drawn.links;
        linksHidden = drawn.hidden;
        // The texts over the lines, each on a plate of the background.
        const plate = (text: string, x: number, y: number, color: string) => {
          ctx.fillStyle = bg;
          ctx.fillRect(x - 2, y - 6, ctx.measureText(text).width + 4, 12);
          ctx.fillStyle = color;
          ctx.fillText(text, x, y);
        };
        plate("CPU · launching threads (launch calls; lines to the kernels they launched)", GUTTER, top - SECTION / 2, muted);
        d.threads.forEach((t, i) => plate(fit(ctx, t.title, width - GUTTER - 4), GUTTER, top + i * THREAD_ROW + HEAD / 2 + 1, fg));
        if (linksHidden > 0) {
          ctx.fillStyle = muted;
          const note = `${linksHidden.toLocaleString("en-US")} launch → kernel lines not drawn: select a shorter range`;
          ctx.fillText(fit(ctx, note, width - GUTTER - 4), GUTTER, height - 4);
        }
      }
    }
    this.version++;
    const ds = this.panel.dataset;
    ds.version = String(this.version);
    ds.rows = String(rows);
    ds.bars = String(bars);
    ds.incomplete = String(shaded);
    ds.threads = String(threads);
    ds.calls = String(calls);
    ds.links = String(links);
    ds.linksHidden = String(linksHidden);
    ds.idle = String(idle);
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

  private threadsTop(): number {
    const d = this.data;
    if (!d) return AXIS;
    return AXIS + d.rows.length * ROW + (d.threads.length > 0 ? SECTION : 0);
  }

  // One thread's launch calls, at least a pixel wide; returns those in view.
  private drawCalls(ctx: CanvasRenderingContext2D, t: ThreadRow, y: number, scale: number): number {
    const limit = GUTTER + this.plotWidth();
    ctx.fillStyle = this.colors.launch;
    let drawn = 0;
    let lastB = -1;
    for (let i = 0; i < t.n; i++) {
      let a = GUTTER + t.start[i] * scale;
      const b = Math.min(Math.max(a + t.dur[i] * scale, a + 1), limit);
      if (b < GUTTER || a > limit) continue;
      a = Math.max(a, GUTTER);
      drawn++;
      if (b <= lastB) continue; // inside the pixels already filled
      ctx.fillRect(Math.max(a, lastB), y + 1, b - Math.max(a, lastB), CALL_BAR - 2);
      lastB = b;
    }
    return drawn;
  }

  // Launch -> kernel lines of the links in view, from the call's middle to
  // the kernel's start; none when more than MAX_LINKS are in view.
  private drawLinks(ctx: CanvasRenderingContext2D, d: TraceModel, scale: number): { links: number; hidden: number } {
    const limit = GUTTER + this.plotWidth();
    const top = this.threadsTop();
    const inView: number[] = [];
    d.links.forEach((l, i) => {
      const t = d.threads[l.thread];
      const x1 = GUTTER + (t.start[l.call] + t.dur[l.call] / 2) * scale;
      const x2 = GUTTER + d.rows[l.row].start[l.activity] * scale;
      if (Math.max(x1, x2) >= GUTTER && Math.min(x1, x2) <= limit) inView.push(i);
    });
    if (inView.length > MAX_LINKS) return { links: 0, hidden: inView.length };
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER, 0, limit - GUTTER, this.canvas.height);
    ctx.clip();
    ctx.strokeStyle = this.colors.link;
    ctx.fillStyle = this.colors.link;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const i of inView) {
      const l = d.links[i];
      const t = d.threads[l.thread];
      const x1 = GUTTER + (t.start[l.call] + t.dur[l.call] / 2) * scale;
      const y1 = top + l.thread * THREAD_ROW + HEAD;
      const x2 = GUTTER + d.rows[l.row].start[l.activity] * scale;
      const y2 = AXIS + l.row * ROW + HEAD + BAR;
      ctx.moveTo(x1, y1);
      ctx.lineTo(x2, y2);
    }
    ctx.stroke();
    for (const i of inView) {
      const l = d.links[i];
      const x2 = GUTTER + d.rows[l.row].start[l.activity] * scale;
      const y2 = AXIS + l.row * ROW + HEAD + BAR;
      ctx.fillRect(x2 - 1.5, y2 - 1, 3, 3); // the end that is the kernel
    }
    ctx.restore();
    return { links: inView.length, hidden: 0 };
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

  // The stream row and activity, or the thread row and call, under the
  // mouse (activity/call -1: none there).
  private hit(e: MouseEvent): Hit | null {
    const d = this.data;
    if (!d) return null;
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left;
    if (x < GUTTER) return null;
    const t = this.timeAt(x);
    const slack = (3 * d.spanNs) / this.plotWidth();
    const y = e.clientY - rect.top;
    const top = this.threadsTop();
    if (d.threads.length > 0 && y >= top) {
      const r = Math.floor((y - top) / THREAD_ROW);
      if (r >= d.threads.length || y - top - r * THREAD_ROW < HEAD) return null;
      return { kind: "thread", row: r, call: spanAt(d.threads[r].start, d.threads[r].dur, d.threads[r].n, t, slack), t };
    }
    const r = Math.floor((y - AXIS) / ROW);
    if (r < 0 || r >= d.rows.length || y - AXIS - r * ROW < HEAD) return null;
    return { kind: "stream", row: r, activity: activityAt(d.rows[r], t, slack), t };
  }

  // Tooltip lines: what launched activity i of `row`, when known.
  private launchLines(d: TraceModel, row: StreamRow, i: number): string {
    const ti = row.launchThread[i];
    if (ti < 0) return "";
    const t = d.threads[ti];
    const c = row.launchCall[i];
    const api = d.launchApis[t.api[c]] || "launch";
    return `<tr><td>launched by</td><td>${escapeHtml(api)} on thread ${t.tid} at +${formatNanos(t.start[c])}</td></tr>
        <tr><td>launch → start</td><td>${formatNanos(row.start[i] - t.start[c])}</td></tr>`;
  }

  // A stream row's tooltip at the mouse: its activity, else the idle or
  // untraced span there; "" when none.
  private streamTip(d: TraceModel, h: { row: number; activity: number; t: number }): string {
    const row = d.rows[h.row];
    if (h.activity >= 0) {
      const i = h.activity;
      const kind = ACTIVITY_KINDS[row.kind[i]] ?? "kernel";
      const name = d.names[row.name[i]] || kind;
      return `<b>${escapeHtml(name)}</b><div class="muted">${kind} · ${escapeHtml(row.title)}</div><table>
        <tr><td>start</td><td>+${formatNanos(row.start[i])}</td></tr>
        <tr><td>duration</td><td>${formatNanos(row.dur[i])}</td></tr>
        ${kind === "kernel" ? this.options.describe(name) : ""}
        ${this.launchLines(d, row, i)}
        <tr><td>correlation</td><td>${row.correlation[i]}${row.graph[i] ? ` · graph ${row.graph[i]}` : ""}</td></tr></table>`;
    }
    const gap = row.incomplete.find((g) => h.t >= g.from && h.t < g.to);
    if (gap) {
      return `<b>Trace incomplete here</b><div class="muted">${escapeHtml(row.title)}</div>
        <div>The agent kept ${gap.sent.toLocaleString("en-US")} of ${gap.recorded.toLocaleString("en-US")} activities of
        this process in this second; the rest of the second is not idle, just not traced.</div>`;
    }
    const idle = row.idle.find((g) => h.t >= g.from && h.t < g.to);
    if (!idle) return "";
    return `<b>GPU idle for ${formatNanos(idle.to - idle.from)}</b><div class="muted">${escapeHtml(row.title)}</div>
        <div>No traced stream ran a kernel, copy or set on this GPU from +${formatNanos(idle.from)} to
        +${formatNanos(idle.to)}${d.threads.length ? "; the launching threads below show what the CPU launched before and after" : ""}.</div>`;
  }

  private threadTip(d: TraceModel, h: { row: number; call: number }): string {
    const t = d.threads[h.row];
    const c = h.call;
    const api = d.launchApis[t.api[c]] || "launch call";
    let first = Infinity;
    for (const l of d.links) {
      if (l.thread === h.row && l.call === c) first = Math.min(first, d.rows[l.row].start[l.activity]);
    }
    return `<b>${escapeHtml(api)}</b><div class="muted">CPU · ${escapeHtml(t.title)}</div><table>
        <tr><td>start</td><td>+${formatNanos(t.start[c])}</td></tr>
        <tr><td>duration</td><td>${formatNanos(t.dur[c])}</td></tr>
        <tr><td>kernels</td><td>${t.kernels[c]}${Number.isFinite(first) ? `, the first started ${formatNanos(first - t.start[c])} after the call` : ""}</td></tr>
        <tr><td>correlation</td><td>${t.correlation[c]}</td></tr></table>`;
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
    const html = h.kind === "thread" ? (h.call >= 0 ? this.threadTip(d, h) : "") : this.streamTip(d, h);
    if (!html) {
      this.tooltip.hidden = true;
      return;
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
    if (h && h.kind === "stream" && h.activity >= 0) {
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
