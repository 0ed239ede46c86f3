// The numbers the end-to-end test reads (tests/e2e/ui_e2e.mjs, through
// window.__warpscope.perf): how long the last flame graph took to build and
// draw, a range selection to its updated graph, and the page's load to its
// first graph; the same for the flame
// chart (its merged boxes, all lanes) and the GPU views' last render. The
// views write them; main.ts exposes the object.

export interface UiPerf {
  buildMs: number;
  drawMs: number;
  nodes: number;
  selectToFlameMs: number;
  firstFlameMs: number; // from the page's navigation to its first flame graph with data
  flameVersion: number;
  chartBuildMs: number;
  chartDrawMs: number;
  chartBoxes: number;
  gpuDrawMs: number; // the GPUs view's last render (every chart)
  kernelsDrawMs: number; // the GPU kernels view's last render (table and stream timeline)
}

export class Measurements {
  readonly perf: UiPerf = {
    buildMs: 0,
    drawMs: 0,
    nodes: 0,
    selectToFlameMs: 0,
    firstFlameMs: 0,
    flameVersion: 0,
    chartBuildMs: 0,
    chartDrawMs: 0,
    chartBoxes: 0,
    gpuDrawMs: 0,
    kernelsDrawMs: 0,
  };
  private selectT0 = 0;

  // A drag selected a range (the timeline, a GPU chart): the next flame graph drawn ends the measurement.
  selectionStarted(): void {
    this.selectT0 = performance.now();
  }

  // The main flame graph was drawn; its new version (the panel's data-version).
  flameDrawn(drawMs: number): number {
    this.perf.drawMs = drawMs;
    this.perf.flameVersion++;
    if (!this.perf.firstFlameMs && this.perf.nodes > 0) this.perf.firstFlameMs = performance.now();
    if (this.selectT0) {
      this.perf.selectToFlameMs = performance.now() - this.selectT0;
      this.selectT0 = 0;
    }
    return this.perf.flameVersion;
  }
}
