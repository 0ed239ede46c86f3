// The whole view state, mirrored in the URL's query string so a link shows
// the same view (the server answers every non-API path with the app). A URL
// that names no view is the landing page: the app opens on the insights when
// the range has any, else on the flame graph (app.ts), so every URL the app
// writes names its view.
// Pure (no DOM): the unit tests run it in Node.

export type ViewName =
  | "insights"
  | "flame"
  | "flamechart"
  | "threads"
  | "table"
  | "sandwich"
  | "diff"
  | "gpu"
  | "kernels"
  | "energy"
  | "targets";
export type Orientation = "icicle" | "flame";
export type ColorMode = "binary" | "kind";
export type SortKey = "name" | "binary" | "self" | "total";

export interface ViewState {
  view: ViewName;
  type: string;
  from: string;
  to: string;
  selector: string;
  search: string; // highlights in the graphs, filters the table and the targets
  focus: string; // the zoomed node as its path of (name, binary, kind), JSON (flame/model.ts pathOf)
  orient: Orientation;
  color: ColorMode;
  fn: string; // the selected function (top table, sandwich)
  fnbin: string;
  ffocus: string; // the function the flame graph is focused on, JSON [name, binary, kind] (flame/transforms.ts)
  hide: string; // frames taken out of the flame graph's stacks, JSON [[name, binary, kind], …]
  bin: string; // only the frames of matching binaries (flame/transforms.ts filterBinary), "" for all
  norec: string; // "1": consecutive repeats of a frame (recursion) as one node
  sort: SortKey;
  base_from: string;
  base_to: string;
  base_selector: string; // the diff's base label set (empty: the target's selector)
  live: boolean;
  gpunode: string; // the GPU view's node (empty: the first with GPUs)
  gpu: string; // its GPU index (empty: all GPUs of the node)
  gpupid: string; // the process focused in the GPU view's legends
  kernel: string; // the kernel selected in the GPU kernels view
  ksort: string; // the kernel table's sort column (views/kernel_table.ts)
  nodes: string; // "all": flame graphs up to the server's most nodes, else the default limit
  tree: string; // "bottom-up": the flame graph inverted (flame/model.ts inverted), else top-down
  group: string; // "process" or "thread": the flame graph split into one subtree each (GROUPS), else one tree
  lines: string; // "1": one node per function and line (the API's granularity=lines), else per function
  insight: string; // the insight whose card is picked (views/insights_model.ts insightKey)
  egroup: string; // the energy view's groups: node, gpu, process or pod (ENERGY_GROUPS)
  pue: string; // the energy view's coefficients passed to /api/v1/energy ("": the server's)
  carbon: string; // gCO₂e per kWh (the API's carbon_intensity)
  price: string; // price per kWh (the API's price_per_kwh)
}

export const DEFAULTS: ViewState = {
  view: "flame",
  type: "cpu",
  from: "now-1h",
  to: "now",
  selector: "",
  search: "",
  focus: "",
  orient: "icicle",
  color: "binary",
  fn: "",
  fnbin: "",
  ffocus: "",
  hide: "",
  bin: "",
  norec: "",
  sort: "self",
  base_from: "",
  base_to: "",
  base_selector: "",
  live: false,
  gpunode: "",
  gpu: "",
  gpupid: "",
  kernel: "",
  ksort: "total",
  nodes: "",
  tree: "",
  group: "",
  lines: "",
  insight: "",
  egroup: "node",
  pue: "",
  carbon: "",
  price: "",
};

// The flame graph's `group` as the API's group_by (docs/api.md, /api/v1/profile).
export const GROUPS: Record<string, string> = { process: "comm,pid", thread: "comm,pid,thread" };

const VIEWS: ViewName[] = ["insights", "flame", "flamechart", "threads", "table", "sandwich", "diff", "gpu", "kernels", "energy", "targets"];
// The energy view's groupings, the API's group_by (docs/api.md, /api/v1/energy).
export const ENERGY_GROUPS = ["node", "gpu", "process", "pod"];
const KERNEL_SORTS = ["name", "launches", "total", "mean", "p50", "p95", "max"];

// A query string (with or without its "?") as a state: unknown keys are
// ignored, unknown values of the enumerated keys fall back to the defaults.
export function readState(search: string): ViewState {
  const q = new URLSearchParams(search);
  const s: ViewState = { ...DEFAULTS };
  for (const key of Object.keys(DEFAULTS) as (keyof ViewState)[]) {
    const v = q.get(key);
    if (v === null) continue;
    if (key === "live") s.live = v === "1";
    else (s as unknown as Record<string, string>)[key] = v;
  }
  if (!VIEWS.includes(s.view)) s.view = "flame";
  if (s.norec !== "1") s.norec = "";
  if (s.orient !== "flame") s.orient = "icicle";
  if (s.color !== "kind") s.color = "binary";
  if (!["name", "binary", "self", "total"].includes(s.sort)) s.sort = "self";
  if (!KERNEL_SORTS.includes(s.ksort)) s.ksort = "total";
  if (!(s.group in GROUPS)) s.group = "";
  if (s.lines !== "1") s.lines = "";
  if (!ENERGY_GROUPS.includes(s.egroup)) s.egroup = "node";
  return s;
}

// The query string of a state: its view, then only what differs from the
// defaults: "?view=table&search=x". The view is always written, the
// default's too, so a link keeps its view rather than landing (isLanding).
export function writeState(s: ViewState): string {
  const q = new URLSearchParams();
  q.set("view", s.view);
  for (const key of Object.keys(DEFAULTS) as (keyof ViewState)[]) {
    const v = s[key];
    if (key === "view" || v === DEFAULTS[key]) continue;
    q.set(key, typeof v === "boolean" ? (v ? "1" : "0") : v);
  }
  return `?${q.toString()}`;
}

// A URL that names no view (a bare address, or one typed with only a range
// or selector): the app picks the view, insights when the range has any.
export function isLanding(search: string): boolean {
  return !new URLSearchParams(search).has("view");
}

// The API's common query parameters (docs/api.md) of a state; an empty
// selector is left out, and granularity unless it is lines.
export function commonParams(s: ViewState): {
  type: string;
  from: string;
  to: string;
  selector: string | undefined;
  granularity: string | undefined;
} {
  return { type: s.type, from: s.from, to: s.to, selector: s.selector || undefined, granularity: s.lines === "1" ? "lines" : undefined };
}
