// Insight marks on uPlot charts (the timeline, the GPU charts): a subtle band
// over each insight's range with a thin stripe on top (and, where asked, its
// kind as a label), a tooltip naming the insight when the pointer is over a
// band, and a click (not a drag: drags still select a range) that opens its
// card. The bands are DOM elements inside the plot's .u-over that let the
// pointer through, so uPlot's cursor and drag work over them as elsewhere.
// One InsightMarks holds the marks; its plugin() goes into each chart's
// options. Everything runs on the page's one thread.
import type uPlot from "uplot";
import type { InsightMark } from "./views/insights_model";

// Pixels a press may move and still be a click.
const CLICK_SLOP_PX = 4;

let tipEl: HTMLElement | null = null;
function tooltip(): HTMLElement {
  if (!tipEl) {
    tipEl = document.createElement("div");
    tipEl.className = "insight-tip";
    tipEl.hidden = true;
    document.body.append(tipEl);
  }
  return tipEl;
}

export class InsightMarks {
  private marks: InsightMark[] = [];
  private layers = new Map<uPlot, { el: HTMLElement; labels: boolean }>();

  constructor(private onOpen: (key: string) => void) {}

  // Replaces the marks on every chart that has the plugin.
  set(marks: InsightMark[]): void {
    this.marks = marks;
    for (const [u, layer] of this.layers) this.place(u, layer.el, layer.labels);
  }

  get count(): number {
    return this.marks.length;
  }

  // For a chart's options: `labels` writes each mark's kind on its band.
  plugin(labels: boolean): uPlot.Plugin {
    return {
      hooks: {
        init: [(u: uPlot) => this.attach(u, labels)],
        // After every redraw (a resize, new data, a new x range).
        draw: [
          (u: uPlot) => {
            const layer = this.layers.get(u);
            if (layer) this.place(u, layer.el, layer.labels);
          },
        ],
        destroy: [
          (u: uPlot) => {
            this.layers.delete(u);
            tooltip().hidden = true;
          },
        ],
      },
    };
  }

  private attach(u: uPlot, labels: boolean): void {
    const el = document.createElement("div");
    el.className = "insight-marks";
    u.over.append(el);
    this.layers.set(u, { el, labels });
    let downX: number | null = null;
    const at = (e: MouseEvent): InsightMark | null => {
      const x = e.clientX - u.over.getBoundingClientRect().left;
      for (const m of this.marks) {
        const [a, b] = this.span(u, m);
        if (x >= a - 1 && x <= b + 1) return m;
      }
      return null;
    };
    u.over.addEventListener("mousemove", (e) => {
      const m = at(e);
      u.over.classList.toggle("on-insight", m !== null);
      const tip = tooltip();
      if (!m || e.buttons) {
        tip.hidden = true;
        return;
      }
      tip.textContent = m.tip;
      tip.hidden = false;
      const left = e.clientX + 14 + 340 > window.innerWidth ? e.clientX - 350 : e.clientX + 14;
      tip.style.left = `${Math.max(0, left)}px`;
      tip.style.top = `${e.clientY + 14}px`;
    });
    u.over.addEventListener("mouseleave", () => {
      tooltip().hidden = true;
      u.over.classList.remove("on-insight");
    });
    u.over.addEventListener("mousedown", (e) => (downX = e.clientX));
    u.over.addEventListener("click", (e) => {
      const moved = downX === null || Math.abs(e.clientX - downX) > CLICK_SLOP_PX;
      downX = null;
      const m = moved ? null : at(e);
      if (!m) return;
      tooltip().hidden = true;
      this.onOpen(m.key);
    });
    this.place(u, el, labels);
  }

  // A mark's left and right edge in CSS pixels of the plot area, at least 3 px wide.
  private span(u: uPlot, m: InsightMark): [number, number] {
    const width = u.over.clientWidth;
    const a = Math.max(0, Math.min(width, u.valToPos(m.fromMs / 1000, "x")));
    const b = Math.max(0, Math.min(width, u.valToPos(m.toMs / 1000, "x")));
    if (b - a >= 3) return [a, b];
    const mid = (a + b) / 2;
    return [mid - 1.5, mid + 1.5];
  }

  private place(u: uPlot, el: HTMLElement, labels: boolean): void {
    el.replaceChildren();
    const width = u.over.clientWidth;
    for (const m of this.marks) {
      const [a, b] = this.span(u, m);
      if (b <= 0 || a >= width) continue;
      const band = document.createElement("div");
      band.className = `insight-mark sev-${m.severity}`;
      band.dataset.key = m.key;
      band.style.left = `${a}px`;
      band.style.width = `${b - a}px`;
      if (labels && b - a >= 40) {
        const label = document.createElement("span");
        label.className = "insight-mark-label";
        label.textContent = m.label;
        band.append(label);
      }
      el.append(band);
    }
    el.dataset.marks = String(el.childElementCount);
  }
}
