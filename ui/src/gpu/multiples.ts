// The GPUs view's small multiples: with three or more GPUs on a node and
// none picked, one tile per GPU above the charts (where a line per GPU on
// every chart stops being readable): its index and model, a sparkline of
// its utilization, the means of utilization and power over the range, its
// memory in use at most, and the process using most of its SMs; a GPU far
// less busy than the node's median is marked (in a job with a rank per GPU,
// the others may be waiting for it, or it for them). A click on
// a tile picks that GPU. Pure (no DOM) but for the SVG text of the
// sparkline: the unit tests run it in Node.
import type { GpuInfo, MetricJson, MetricSeries } from "../api/types";
import { meanOf } from "./data";

export const MULTIPLES_FROM = 3;

export interface GpuTile {
  gpu: string;
  name: string;
  utilization: number | null; // mean, percent
  power: number | null; // mean, watts
  memoryUsed: number | null; // max, bytes
  memoryTotal: number | null;
  process: string | null; // "comm (pid)" of the process with the highest mean SM share
  processShare: number | null;
  spark: [number, number][]; // (ms, utilization) in time order
  lagging: boolean; // utilization under 3/4 of the node's median GPU: a rank that may hold the others back
}

function seriesOf(metric: MetricJson | undefined, gpu: string): MetricSeries[] {
  return metric?.series.filter((s) => s.labels.gpu === gpu && s.points.length > 0) ?? [];
}

function meanOfSeries(metric: MetricJson | undefined, gpu: string): number | null {
  const s = seriesOf(metric, gpu);
  return s.length ? meanOf(s.flatMap((x) => x.points)) : null;
}

function maxOf(metric: MetricJson | undefined, gpu: string): number | null {
  let best: number | null = null;
  for (const s of seriesOf(metric, gpu)) {
    for (const p of s.points) if (p[2] != null && (best === null || p[2] > best)) best = p[2];
  }
  return best;
}

export function gpuTiles(metrics: Map<string, MetricJson>, gpus: GpuInfo[]): GpuTile[] {
  const util = metrics.get("gpu_utilization");
  const tiles = gpus.map((g): GpuTile => {
    let process: string | null = null;
    let processShare: number | null = null;
    for (const s of seriesOf(metrics.get("gpu_process_sm_utilization"), g.gpu)) {
      const m = meanOf(s.points);
      if (processShare === null || m > processShare) {
        processShare = m;
        process = s.labels.comm ? `${s.labels.comm} (${s.labels.pid})` : `pid ${s.labels.pid}`;
      }
    }
    const spark = seriesOf(util, g.gpu)
      .flatMap((s) => s.points)
      .filter((p) => p[3] != null)
      .map((p): [number, number] => [p[0], p[3] as number])
      .sort((a, b) => a[0] - b[0]);
    return {
      gpu: g.gpu,
      name: g.gpu_name || "",
      utilization: meanOfSeries(util, g.gpu),
      power: meanOfSeries(metrics.get("gpu_power"), g.gpu),
      memoryUsed: maxOf(metrics.get("gpu_memory_used"), g.gpu),
      memoryTotal: maxOf(metrics.get("gpu_memory_total"), g.gpu),
      process,
      processShare,
      spark,
      lagging: false,
    };
  });
  const busy = tiles.map((t) => t.utilization).filter((u): u is number => u !== null).sort((a, b) => a - b);
  const median = busy.length ? busy[Math.floor((busy.length - 1) / 2)] : 0;
  for (const t of tiles) t.lagging = t.utilization !== null && median > 0 && t.utilization < 0.75 * median;
  return tiles;
}

// The sparkline's polyline points in a width × height box, over [fromMs, toMs]
// and 0..100 %.
export function sparkPoints(spark: [number, number][], fromMs: number, toMs: number, width: number, height: number): string {
  const span = Math.max(1, toMs - fromMs);
  return spark
    .map(([t, v]) => {
      const x = ((t - fromMs) / span) * width;
      const y = height - (Math.max(0, Math.min(100, v)) / 100) * height;
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    })
    .join(" ");
}
