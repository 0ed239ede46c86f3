// The flame graph on a canvas. Owned by the UI thread (the only one).
//
// Speed at 50k+ nodes comes from the layout in model.ts: drawing walks the
// preorder arrays once, skips a whole subtree as soon as its box is narrower
// than a pixel or outside the zoomed range, and writes text only into boxes
// wide enough to hold some. Hit-testing walks down from the zoomed node.
import { Palette, palette } from "./colors";
import { FlameData, KIND_NAMES } from "./model";
import { Matches } from "./analysis";
import { escapeHtml, onSchemeChange, placeTooltip } from "../base/dom";

const ROW = 18;
const MIN_WIDTH = 0.4; // px: narrower boxes (and their subtrees) are not drawn
const FONT = '11px ui-monospace, "DejaVu Sans Mono", Menlo, monospace';

export interface FlameGraphOptions {
  onZoom?: (node: number) => void;
  // A right-click on a box other than the root: its frame, and the event
  // (where to open a menu).
  onContext?: (name: string, binary: string, kind: number, e: MouseEvent) => void;
  // Formats a value (samples) for tooltips.
  format: (value: number) => string;
}

export class FlameGraph {
  readonly canvas: HTMLCanvasElement;
  private ctx: CanvasRenderingContext2D;
  private tooltip: HTMLDivElement;
  private data: FlameData | null = null;
  private colors: Palette | null = null;
  private colorMode: "binary" | "kind" = "binary";
  private focus = 0;
  private ancestors: number[] = [0]; // root .. focus
  private subtreeDepth = 0;
  private inverted = false; // flame orientation: root at the bottom
  private matches: Matches | null = null;
  private charWidth = 7;
  private cssWidth = 0;
  lastDrawMs = 0;
  // The box under the mouse (for keys that act on it), -1 when none.
  hovered = -1;

  constructor(
    private container: HTMLElement,
    private options: FlameGraphOptions,
  ) {
    this.canvas = document.createElement("canvas");
    this.canvas.className = "flame-canvas";
    this.tooltip = document.createElement("div");
    this.tooltip.className = "tooltip";
    this.tooltip.hidden = true;
    container.append(this.canvas, this.tooltip);
    this.ctx = this.canvas.getContext("2d", { alpha: false })!;
    this.canvas.addEventListener("mousemove", (e) => this.onMove(e));
    this.canvas.addEventListener("mouseleave", () => {
      this.tooltip.hidden = true;
      this.hovered = -1;
    });
    this.canvas.addEventListener("click", (e) => {
      const node = this.hit(e);
      if (node >= 0) this.options.onZoom?.(node);
    });
    this.canvas.addEventListener("contextmenu", (e) => {
      const node = this.hit(e);
      const d = this.data;
      if (!d || node <= 0 || !this.options.onContext) return;
      e.preventDefault();
      this.tooltip.hidden = true;
      this.options.onContext(d.names[d.name[node]], d.binaries[d.binary[node]] ?? "", d.kind[node], e);
    });
    new ResizeObserver(() => {
      if (this.container.clientWidth !== this.cssWidth) this.draw();
    }).observe(container);
    onSchemeChange(() => {
      if (!this.data) return;
      this.colors = palette(this.data, this.colorMode);
      this.draw();
    });
  }

  setData(d: FlameData | null, colorMode: "binary" | "kind"): void {
    this.data = d;
    this.colorMode = colorMode;
    this.colors = d ? palette(d, colorMode) : null;
    this.matches = null;
    this.focus = 0;
    this.hovered = -1;
    this.updateFocus();
  }

  setColorMode(mode: "binary" | "kind"): void {
    if (mode === this.colorMode || !this.data) return;
    this.colorMode = mode;
    this.colors = palette(this.data, mode);
  }

  setFocus(node: number): void {
    this.focus = this.data && node < this.data.n ? node : 0;
    this.updateFocus();
  }

  getFocus(): number {
    return this.focus;
  }

  setInverted(inverted: boolean): void {
    this.inverted = inverted;
  }

  setMatches(m: Matches | null): void {
    this.matches = m;
  }

  private updateFocus(): void {
    const d = this.data;
    this.ancestors = [];
    if (!d || d.n === 0) return;
    for (let i = this.focus; i >= 0; i = d.parent[i]) this.ancestors.push(i);
    this.ancestors.reverse();
    let deepest = d.depth[this.focus];
    for (let i = this.focus; i < d.end[this.focus]; i++) if (d.depth[i] > deepest) deepest = d.depth[i];
    this.subtreeDepth = deepest - d.depth[this.focus];
  }

  private rows(): number {
    return this.ancestors.length + this.subtreeDepth;
  }

  private rowY(depth: number): number {
    const row = depth;
    return this.inverted ? (this.rows() - 1 - row) * ROW : row * ROW;
  }

  draw(): void {
    const t0 = performance.now();
    const d = this.data;
    const dpr = window.devicePixelRatio || 1;
    const width = this.container.clientWidth;
    this.cssWidth = width;
    const rows = d && d.n > 0 ? this.rows() : 0;
    const height = Math.max(rows * ROW, 1);
    this.canvas.style.height = `${height}px`;
    this.canvas.width = Math.max(1, Math.round(width * dpr));
    this.canvas.height = Math.max(1, Math.round(height * dpr));
    const ctx = this.ctx;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const bg = getComputedStyle(this.container).getPropertyValue("--bg").trim() || "#fff";
    ctx.fillStyle = bg;
    ctx.fillRect(0, 0, width, height);
    if (!d || d.n === 0 || !this.colors) return;
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    this.charWidth = ctx.measureText("MMMMMMMMMM").width / 10;
    const colors = this.colors;
    const f = this.focus;
    const fx = d.x[f];
    const scale = width / (d.total[f] || 1);
    const matched = this.matches?.node;
    const labels: number[] = []; // boxes to label, drawn after all fills
    let style = -1;
    let faded = false;
    const box = (i: number, x: number, w: number) => {
      const fade = matched !== undefined && !matched[i];
      const s = matched && matched[i] ? 65535 : colors.nodeStyle[i];
      if (s !== style || fade !== faded) {
        ctx.fillStyle = s === 65535 ? colors.highlight : fade ? colors.faded[s] : colors.styles[s];
        style = s;
        faded = fade;
      }
      ctx.fillRect(x, this.rowY(d.depth[i]), w > 1.5 ? w - 0.5 : w, ROW - 1);
      if (w > 3 * this.charWidth + 6) labels.push(i, x, w);
    };
    // The zoomed node and its ancestors span the whole width.
    for (const a of this.ancestors) box(a, 0, width);
    for (let i = f + 1; i < d.end[f]; ) {
      const w = d.total[i] * scale;
      if (w < MIN_WIDTH) {
        i = d.end[i];
        continue;
      }
      box(i, (d.x[i] - fx) * scale, w);
      i++;
    }
    ctx.fillStyle = colors.text;
    for (let k = 0; k < labels.length; k += 3) {
      const i = labels[k];
      const x = labels[k + 1];
      const w = labels[k + 2];
      const name = d.names[d.name[i]];
      const fit = Math.floor((w - 6) / this.charWidth);
      const text = name.length <= fit ? name : name.slice(0, Math.max(fit - 1, 0)) + "…";
      ctx.fillText(text, x + 3, this.rowY(d.depth[i]) + ROW / 2);
    }
    this.lastDrawMs = performance.now() - t0;
  }

  // The node under the mouse, or -1.
  private hit(e: MouseEvent): number {
    const d = this.data;
    if (!d || d.n === 0) return -1;
    const rect = this.canvas.getBoundingClientRect();
    const px = e.clientX - rect.left;
    const row = Math.floor((e.clientY - rect.top) / ROW);
    const depth = this.inverted ? this.rows() - 1 - row : row;
    if (depth < 0 || depth >= this.rows()) return -1;
    if (depth < this.ancestors.length) return this.ancestors[depth];
    const f = this.focus;
    const v = d.x[f] + (px / rect.width) * d.total[f];
    let cur = f;
    for (let level = d.depth[f] + 1; level <= depth; level++) {
      let next = -1;
      for (let c = cur + 1; c < d.end[cur]; c = d.end[c]) {
        if (v >= d.x[c] && v < d.x[c] + d.total[c]) {
          next = c;
          break;
        }
      }
      if (next < 0) return -1;
      cur = next;
    }
    return cur;
  }

  private onMove(e: MouseEvent): void {
    const i = this.hit(e);
    const d = this.data;
    this.hovered = i;
    if (i < 0 || !d) {
      this.tooltip.hidden = true;
      return;
    }
    const fmt = this.options.format;
    const pct = (v: number, of: number) => (of > 0 ? `${((100 * v) / of).toFixed(2)}%` : "–");
    const name = d.names[d.name[i]];
    const binary = d.binaries[d.binary[i]];
    const kind = KIND_NAMES[d.kind[i]] ?? "";
    let html = `<b>${escapeHtml(name)}</b>`;
    if (binary || kind) html += `<div class="muted">${escapeHtml(binary)}${binary && kind ? " · " : ""}${kind}</div>`;
    if (d.diff) {
      const df = d.diff;
      const b = df.baseTotal[i] / (df.baseSum || 1);
      const t = df.targetTotal[i] / (df.targetSum || 1);
      html += `<table><tr><td>base</td><td>${fmt(df.baseTotal[i])}</td><td>${(100 * b).toFixed(2)}%</td></tr>
        <tr><td>target</td><td>${fmt(df.targetTotal[i])}</td><td>${(100 * t).toFixed(2)}%</td></tr>
        <tr><td>change</td><td></td><td>${t >= b ? "+" : ""}${(100 * (t - b)).toFixed(2)} pp</td></tr></table>`;
    } else {
      const root = d.total[0];
      const f = d.total[this.focus];
      html += `<table><tr><td>total</td><td>${fmt(d.total[i])}</td><td>${pct(d.total[i], root)}</td>${
        this.focus ? `<td>${pct(d.total[i], f)} of zoom</td>` : ""
      }</tr><tr><td>self</td><td>${fmt(d.self[i])}</td><td>${pct(d.self[i], root)}</td></tr></table>`;
    }
    this.tooltip.innerHTML = html;
    placeTooltip(this.tooltip, this.container, e);
  }
}
