// The insights view's words and numbers (/api/v1/insights, docs/api.md):
// each kind in plain words, an insight's key (its card in the URL), its
// target, savings and ranges as text, the buttons that open its evidence
// (the API's links, as view states), its sparkline as an SVG path, the
// thresholds explained, and the marks the timeline and the GPU charts draw
// over its ranges. Kinds it does not know read from the answer's own fields.
// Pure (no DOM): the unit tests run it in Node.
import type { InsightFunctionJson, InsightJson, InsightLinkJson, InsightsJson } from "../api/types";
import type { ViewName, ViewState } from "../state";
import { formatDuration, formatTime } from "../time";

export interface KindInfo {
  title: string; // the card's heading
  short: string; // a mark's label on the charts
  what: string; // the heading's tooltip ("" when the summary says it all)
}

const KINDS: Record<string, KindInfo> = {
  gpu_starved_by_cpu: {
    title: "GPU starved by the CPU",
    short: "GPU starved by CPU",
    what: "The GPU sat idle while a thread of its process was busy on the CPU: the GPU waits for the CPU to prepare its next work.",
  },
  sync_heavy: {
    title: "Blocked in CUDA synchronisation",
    short: "CUDA sync waits",
    what: "A thread spent a large share of the time inside CUDA synchronisation calls (cudaStreamSynchronize, .item(), synchronous copies); while it waits it launches nothing.",
  },
  launch_bound: {
    title: "Bound by kernel launches",
    short: "launch-bound",
    what: "Most kernels ran shorter than their own launch call, at a high launch rate, and the GPU waited for the launches: the CPU's launch overhead sets the pace.",
  },
  fusion_candidate: {
    title: "Small kernels worth fusing",
    short: "fusion candidate",
    what: "A thread launches the same run of small kernels back to back, many times a second; fused into one kernel, the idle time between them goes away.",
  },
  throttled: {
    title: "GPU clocks held down",
    short: "throttled",
    what: "A busy GPU ran below its clocks because of its power limit, heat or a hardware slowdown (NVML's clock event reasons).",
  },
  transfer_bound: {
    title: "Bound by host–device copies",
    short: "transfer-bound",
    what: "Copies alone kept the GPU busy for much of the time while compute ran less than half of it.",
  },
  memory_bound: {
    title: "Bound by memory bandwidth",
    short: "memory-bound",
    what: "A busy GPU near its DRAM bandwidth with idle tensor cores (NVML's GPM metrics): a hint, its saving is not estimated.",
  },
};

// "memory_bound" → "Memory bound".
function words(kind: string): string {
  const w = kind.replace(/[_-]+/g, " ").trim();
  return w ? w[0].toUpperCase() + w.slice(1) : "Insight";
}

export function kindInfo(kind: string): KindInfo {
  return KINDS[kind] ?? { title: words(kind), short: words(kind).toLowerCase(), what: "" };
}

// A card's identity, stable across reloads of one range: the kind and its
// target's labels ("sync_heavy|comm=python3,node=n1,pid=42,thread=main").
export function insightKey(x: Pick<InsightJson, "kind" | "target">): string {
  const labels = Object.keys(x.target ?? {})
    .sort()
    .map((k) => `${k}=${x.target[k]}`)
    .join(",");
  return `${x.kind}|${labels}`;
}

// As the API sorts them: the GPU time each could save, then its share; a stable sort keeps the API's order otherwise.
export function sortInsights(xs: InsightJson[]): InsightJson[] {
  return [...xs].sort((a, b) => (b.saving_gpu_seconds ?? 0) - (a.saving_gpu_seconds ?? 0) || (b.saving_share ?? 0) - (a.saving_share ?? 0));
}

// "python3 (pid 4747) · thread train_loop · GPU 0 · node n1"; other labels as name=value.
export function targetText(target: Record<string, string>): string {
  const t = target ?? {};
  const parts: string[] = [];
  if (t.pid) parts.push(t.comm ? `${t.comm} (pid ${t.pid})` : `pid ${t.pid}`);
  else if (t.comm) parts.push(t.comm);
  if (t.thread) parts.push(`thread ${t.thread}`);
  if (t.gpu) parts.push(`GPU ${t.gpu}`);
  for (const k of Object.keys(t).sort()) {
    if (!["pid", "comm", "thread", "gpu", "node"].includes(k)) parts.push(`${k}=${t[k]}`);
  }
  if (t.node) parts.push(`node ${t.node}`);
  return parts.join(" · ");
}

// GPU time as "0.4", "54", "16.7 min", "2.5 h" with its unit: seconds of one GPU.
export function formatGpuSeconds(s: number): string {
  const v = Math.max(0, s);
  if (v < 10) return `${+v.toFixed(1)} GPU-s`;
  if (v < 1000) return `${Math.round(v)} GPU-s`;
  if (v < 7200) return `${+(v / 60).toFixed(1)} GPU-min`;
  return `${+(v / 3600).toFixed(1)} GPU-h`;
}

// 0.045 → "4.5%", 0.267 → "27%", 0.0004 → "<0.1%".
export function formatShare(share: number): string {
  const p = 100 * share;
  if (p > 0 && p < 0.1) return "<0.1%";
  return p < 10 ? `${+p.toFixed(1)}%` : `${Math.round(p)}%`;
}

// A duration in seconds as "20 µs", "850 ms", "4.2 s", "180 s", "16.7 min".
export function formatSeconds(s: number): string {
  if (s > 0 && s < 1e-3) return `${+(s * 1e6).toPrecision(3)} µs`;
  if (s < 1) return `${+(s * 1000).toPrecision(3)} ms`;
  if (s < 10) return `${+s.toFixed(1)} s`;
  if (s < 600) return `${Math.round(s)} s`;
  if (s < 7200) return `${+(s / 60).toFixed(1)} min`;
  return `${+(s / 3600).toFixed(1)} h`;
}

// "2026-12-05 15:06:50 – 15:09:50 (3m)": the date once when both ends share it.
export function rangeText(r: { from: number; to: number }): string {
  const a = formatTime(r.from);
  const b = formatTime(r.to);
  const end = a.slice(0, 10) === b.slice(0, 10) ? b.slice(11) : b;
  return `${a} – ${end} (${formatDuration(r.to - r.from)})`;
}

// The named figures of an insight's evidence, as label and text, in the API's order.
const NUMBER_NAMES: Record<string, string> = {
  gpu_utilization_percent: "GPU utilization while starved",
  busiest_thread_cores: "busiest thread",
  process_cores: "whole process",
  starved_seconds: "starved",
  observed_seconds: "seen on the GPU",
  idle_gpu_seconds: "GPU idle while starved",
  wait_seconds: "waiting in all",
  wait_share: "share of the range waiting",
  wait_without_gpu_work_seconds: "waiting while the GPU had no work",
};

function plainNumber(v: number): string {
  if (Number.isInteger(v)) return v.toLocaleString("en-US");
  return Math.abs(v) >= 100 ? Math.round(v).toLocaleString("en-US") : String(+v.toPrecision(3));
}

export function numberRows(numbers: Record<string, number> | undefined): [string, string][] {
  const out: [string, string][] = [];
  for (const [key, v] of Object.entries(numbers ?? {})) {
    if (typeof v !== "number" || !Number.isFinite(v)) continue;
    const m = /^(.*?)_(percent|share|seconds|cores|ms|bytes)$/.exec(key);
    const suffix = m?.[2] ?? "";
    const label = NUMBER_NAMES[key] ?? (m ? m[1] : key).replace(/_/g, " ");
    let text: string;
    if (suffix === "percent") text = `${plainNumber(v)}%`;
    else if (suffix === "share") text = formatShare(v);
    else if (suffix === "seconds") text = formatSeconds(v);
    else if (suffix === "ms") text = formatSeconds(v / 1000);
    else if (suffix === "cores") text = `${v.toFixed(2)} of a core`;
    else if (suffix === "bytes") text = `${+(v / 2 ** 30).toFixed(2)} GiB`;
    else text = plainNumber(v);
    out.push([label, text]);
  }
  return out;
}

// The thresholds the finders used (the answer's options), each with its
// query parameter and what it means, grouped by the kind it belongs to: the
// known ones in the order they read as a sentence, then any others by name.
const STARVED = "GPU starved by the CPU";
const LAUNCHES = "Bound by kernel launches";
const BUSY = "Clocks held down, bound by memory bandwidth";
const percent = (v: number) => `${plainNumber(v)}%`;
const THRESHOLDS: [param: string, group: string, meaning: string, format: (v: number) => string][] = [
  ["starved_gpu_percent", STARVED, "the process's GPU utilization is below", percent],
  ["starved_thread_cores", STARVED, "while its busiest thread runs at least", (v) => `${plainNumber(v)} of a core`],
  ["min_share", STARVED, "in at least this share of the steps the process was seen on the GPU (launch-bound too)", formatShare],
  ["min_duration_ms", STARVED, "and for at least (launch-bound too)", (v) => formatSeconds(v / 1000)],
  ["sync_share", "Blocked in CUDA synchronisation", "a thread waits at least this share of the range", formatShare],
  ["min_wait_ms", "Blocked in CUDA synchronisation", "and at least", (v) => formatSeconds(v / 1000)],
  ["short_kernel_share", LAUNCHES, "at least this share of the kernels ran shorter than their launch call", formatShare],
  ["min_launch_rate", LAUNCHES, "at least this many kernels a second", (v) => `${plainNumber(v)}/s`],
  ["launch_idle_share", LAUNCHES, "and the GPU waited for launches this share of the time", formatShare],
  ["min_sequence_rate", "Small kernels worth fusing", "a run of three small kernels at least this often", (v) => `${plainNumber(v)}/s`],
  ["transfer_share", "Bound by host–device copies", "copies alone keep the GPU busy this share of the time", formatShare],
  ["busy_gpu_percent", BUSY, "a GPU counts as busy from", percent],
  ["throttle_share", BUSY, "clocks held down (power, heat, slowdown) in this share of the busy readings", formatShare],
  ["memory_bound_dram_percent", BUSY, "DRAM bandwidth at least", percent],
  ["memory_bound_tensor_percent", BUSY, "while tensor-core activity is at most", percent],
];

export interface ThresholdRow {
  param: string; // the query parameter of GET /api/v1/insights
  group: string; // the kind it belongs to, in plain words
  value: string;
  meaning: string;
}

export function thresholdRows(options: Record<string, number> | undefined): ThresholdRow[] {
  const o = options ?? {};
  const out: ThresholdRow[] = [];
  for (const [param, group, meaning, format] of THRESHOLDS) {
    if (typeof o[param] === "number") out.push({ param, group, value: format(o[param]), meaning });
  }
  for (const param of Object.keys(o).sort()) {
    if (!THRESHOLDS.some((t) => t[0] === param)) out.push({ param, group: "Other kinds", value: plainNumber(o[param]), meaning: param.replace(/_/g, " ") });
  }
  return out;
}

// The kinds beyond the first two, each by a threshold only it has.
const ACTIVITY_KINDS: Record<string, string> = {
  min_launch_rate: "launch_bound",
  min_sequence_rate: "fusion_candidate",
  transfer_share: "transfer_bound",
  throttle_share: "throttled",
  memory_bound_dram_percent: "memory_bound",
};

// The empty state's sentence: what was looked for over which range, in plain words.
export function checkedText(a: Pick<InsightsJson, "from" | "to" | "step_ms" | "options">): string {
  const o = a.options ?? {};
  const checks: string[] = [];
  if ("starved_gpu_percent" in o) {
    checks.push(
      `a GPU below ${plainNumber(o.starved_gpu_percent)}% while its process's busiest thread ran at least ${plainNumber(o.starved_thread_cores ?? 0)} of a core` +
        ` (GPU starved by the CPU: needs GPU metrics from NVML and CPU samples)`,
    );
  }
  if ("sync_share" in o) {
    checks.push(
      `a thread blocked in CUDA synchronisation for ${formatShare(o.sync_share)} of the range or more (needs the GPU-wait profile of the CUDA injection library)`,
    );
  }
  const others = Object.entries(ACTIVITY_KINDS)
    .filter(([param]) => param in o)
    .map(([, kind]) => kindInfo(kind).title)
    .map((t) => (/^[A-Z]{2}/.test(t) ? t : t[0].toLowerCase() + t.slice(1)));
  if (others.length) checks.push(`the kinds from the agent's GPU activity analyses and NVML: ${others.join(", ")}`);
  const known = new Set(THRESHOLDS.map((t) => t[0]));
  if (checks.length && Object.keys(o).some((k) => !known.has(k))) checks.push("the other kinds whose thresholds are listed below");
  const what = checks.length ? checks.join("; ") : "every kind the server knows";
  return `Checked ${formatDuration(a.to - a.from)} in steps of ${formatDuration(a.step_ms)} for ${what}.`;
}

// The evidence's biggest function (the one the flame graph highlights) and kernel.
export function topFunction(x: InsightJson): InsightFunctionJson | null {
  return x.functions?.[0] ?? null;
}

export function kernelsOf(x: InsightJson): InsightFunctionJson[] {
  return x.waited_for ?? x.kernels ?? [];
}

// What the flame chart shows at most (views/flamechart.ts).
const MAX_CHART_MS = 15 * 60e3;
// The GPU charts around a range: this share of it on each side, at least 30 s.
const GPU_CONTEXT = 0.5;
const GPU_CONTEXT_MIN_MS = 30e3;

export interface CardAction {
  action: string; // the button's data-action: flame, gpu, flamechart, kernels, threads, ...
  label: string;
  title: string;
  patch: Partial<ViewState>;
}

const VIEW_NAMES: ViewName[] = ["flame", "flamechart", "threads", "table", "sandwich", "diff", "gpu", "kernels", "targets"];

function quoteSelector(labels: [string, string | undefined][]): string {
  const parts = labels.filter(([, v]) => v).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return parts.length ? `{${parts.join(", ")}}` : "";
}

function evidenceName(type: string | undefined): string {
  switch (type) {
    case "cpu":
      return "CPU";
    case "gpu_wait":
      return "GPU-wait";
    case "gpu_time":
      return "GPU-time";
    case "off_cpu":
      return "off-CPU";
    default:
      return type ?? "";
  }
}

// The buttons of a card: the API's links as view states (the flame graph
// of exactly the evidence's longest range and selector, its top function
// searched for; the flame chart of it, at most 15 minutes), the GPU charts
// around the range (the link's, else one made for a target with a node),
// and the kernel table of the process when the insight names kernels.
// `answer`: the request's range, which the GPU charts' context stays in.
export function cardActions(x: InsightJson, answer: Pick<InsightsJson, "from" | "to">): CardAction[] {
  const out: CardAction[] = [];
  const t = x.target ?? {};
  const fn = topFunction(x);
  const longest = x.links?.[0] ?? (x.ranges?.[0] ? { view: "", from: x.ranges[0].from, to: x.ranges[0].to } : null);
  const reset: Partial<ViewState> = { focus: "", ffocus: "", hide: "", bin: "", norec: "", tree: "", group: "", live: false, insight: "" };
  const gpuAction = (link: Pick<InsightLinkJson, "from" | "to">): CardAction => {
    const pad = Math.max(GPU_CONTEXT_MIN_MS, (link.to - link.from) * GPU_CONTEXT);
    const from = Math.max(answer.from, link.from - pad);
    const to = Math.min(answer.to, link.to + pad);
    return {
      action: "gpu",
      label: "GPU charts",
      title: `The GPU metrics of node ${t.node}${t.gpu ? ` GPU ${t.gpu}` : ""} around ${rangeText(link)}, the insight marked on them`,
      patch: { ...reset, view: "gpu", gpunode: t.node ?? "", gpu: t.gpu ?? "", gpupid: t.pid ?? "", from: String(from), to: String(to) },
    };
  };
  for (const link of x.links ?? []) {
    const range = { from: String(link.from), to: String(link.to) };
    const common = { ...reset, ...range, type: link.type || "cpu", selector: link.selector ?? "" };
    if (link.view === "flame") {
      out.push({
        action: "flame",
        label: `${evidenceName(link.type)} flame graph`,
        title: `The ${evidenceName(link.type)} flame graph of ${link.selector} over ${rangeText(link)}${fn ? `, ${fn.name} highlighted` : ""}`,
        patch: { ...common, view: "flame", search: fn?.name ?? "" },
      });
    } else if (link.view === "flamechart") {
      const to = Math.min(link.to, link.from + MAX_CHART_MS);
      out.push({
        action: "flamechart",
        label: "Flame chart",
        title: `The thread's ${evidenceName(link.type)} samples in time order over ${rangeText({ from: link.from, to })}${
          to < link.to ? " (the first 15 minutes of the range)" : ""
        }`,
        patch: { ...common, view: "flamechart", to: String(to), search: fn?.name ?? "" },
      });
    } else if (link.view === "kernels") {
      const k = kernelsOf(x)[0];
      out.push({
        action: "kernels",
        label: "Kernel table",
        title: `The CUDA kernels of ${link.selector} over ${rangeText(link)}${k ? `, ${k.name} marked` : ""}`,
        patch: { ...common, view: "kernels", kernel: k?.name ?? "", search: "" },
      });
    } else if (link.view === "gpus" || link.view === "gpu") {
      if (t.node) out.push(gpuAction(link));
    } else if ((VIEW_NAMES as string[]).includes(link.view)) {
      out.push({
        action: link.view,
        label: words(link.view),
        title: `${words(link.view)} over ${rangeText(link)}`,
        patch: { ...common, view: link.view as ViewName },
      });
    }
  }
  if (longest && t.node && !out.some((a) => a.action === "gpu")) out.push(gpuAction(longest));
  const kernels = kernelsOf(x);
  if (longest && kernels.length && !out.some((a) => a.action === "kernels")) {
    out.push({
      action: "kernels",
      label: "Kernel table",
      title: `The CUDA kernels of ${targetText({ comm: t.comm ?? "", pid: t.pid ?? "", node: t.node ?? "" })} over ${rangeText(longest)}, ${kernels[0].name} marked`,
      patch: {
        ...reset,
        view: "kernels",
        selector: quoteSelector([
          ["node", t.node],
          ["pid", t.pid],
        ]),
        from: String(longest.from),
        to: String(longest.to),
        kernel: kernels[0].name,
        search: "",
      },
    });
  }
  return out;
}

// The sparkline as an SVG area in a `width` × `height` box, the API's per-step
// figure drawn as steps against its scale: 1 for shares (every value at most
// 1), 100 for percentages, else the largest value.
export interface Sparkline {
  area: string; // an SVG path ("" when every value is 0)
  top: number; // the value at the box's top
  bands: [number, number][]; // the insight's ranges, x from and to
}

export function sparkline(
  points: [number, number][],
  ranges: { from: number; to: number }[],
  fromMs: number,
  toMs: number,
  stepMs: number,
  width: number,
  height: number,
): Sparkline {
  const span = Math.max(1, toMs - fromMs);
  const x = (t: number) => Math.min(width, Math.max(0, ((t - fromMs) / span) * width));
  const round = (v: number) => Math.round(v * 10) / 10;
  const max = points.reduce((m, p) => Math.max(m, p[1]), 0);
  const top = max <= 1 ? 1 : max <= 100 ? 100 : max;
  let area = "";
  if (max > 0) {
    const parts = [`M${round(x(points[0][0]))} ${height}`];
    for (const [t, v] of points) {
      const y = round(height - (Math.max(0, v) / top) * height);
      parts.push(`L${round(x(t))} ${y}`, `L${round(x(t + stepMs))} ${y}`);
    }
    parts.push(`L${round(x(points[points.length - 1][0] + stepMs))} ${height}Z`);
    area = parts.join("");
  }
  const bands = ranges.map((r): [number, number] => [round(x(r.from)), round(x(r.to))]);
  return { area, top, bands };
}

// What the sparkline's figure is, per kind.
export function sparklineMeaning(kind: string, stepMs: number): string {
  const step = formatDuration(stepMs);
  if (kind === "gpu_starved_by_cpu") return `Per ${step} step: how idle the GPU was while the process's thread was busy on the CPU (0 when it was not starved).`;
  if (kind === "sync_heavy") return `Per ${step} step: the share of the time the thread waited in CUDA synchronisation.`;
  return `Per ${step} step: the figure that makes a step count for this insight.`;
}

// A band over an insight's range on the timeline or a GPU chart.
export interface InsightMark {
  key: string; // insightKey: a click opens this card
  fromMs: number;
  toMs: number;
  label: string;
  severity: string;
  tip: string; // the tooltip's text, one line per fact
}

export function marksOf(insights: InsightJson[], keep: (x: InsightJson) => boolean = () => true): InsightMark[] {
  const out: InsightMark[] = [];
  for (const x of insights) {
    if (!keep(x)) continue;
    const info = kindInfo(x.kind);
    const key = insightKey(x);
    for (const r of x.ranges ?? []) {
      out.push({
        key,
        fromMs: r.from,
        toMs: r.to,
        label: info.short,
        severity: x.severity,
        tip: [info.title, targetText(x.target), rangeText(r), x.saving_gpu_seconds > 0 ? `${formatGpuSeconds(x.saving_gpu_seconds)} could be saved` : "a hint: its saving is not estimated", "Click to open its card"].join("\n"),
      });
    }
  }
  return out;
}

// The GPU charts of one node (and GPU, "" for all) mark the insights of that node, and of that GPU when the insight names one.
export function onGpu(node: string, gpu: string): (x: InsightJson) => boolean {
  return (x) => (x.target?.node ?? "") === node && (!gpu || !x.target?.gpu || x.target.gpu === gpu);
}
