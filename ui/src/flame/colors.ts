// Box colours. By binary (default): a stable warm hue per binary name, so one
// library reads as one colour across views. By kind: native, kernel, Python.
// Diff: red grew, green shrank (share of each side's total).
import { FlameData, GROUP_LABEL, KIND_NAMES } from "./model";

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

const dark = () => matchMedia("(prefers-color-scheme: dark)").matches;

// The lightness of boxes (and of their faded look) in each scheme: the
// palettes' and the legend's.
const LIGHTNESS = { light: 68, dark: 38 };
const FADED_LIGHTNESS = { light: 88, dark: 22 };

// native blue, kernel orange, Python green, other grey, CUDA kernel purple,
// a group's label (group by process or thread) teal; inside a kernel (gpu_pc):
// source line violet, SASS instruction lilac, stall reason pink
const KIND_HUES = [210, 25, 130, 0, 275, 180, 295, 250, 330];
// CUDA kernels (the leaves of GPU-time stacks), the frames inside them and
// group labels keep their own colour in every mode.
const CUDA_KERNEL = 4;
const INSIDE_KERNEL = [6, 7, 8];

// A binary's hue, saturation and lightness offset: warm hues (red..yellow)
// like classic flame graphs, with a little variety.
function binaryHue(b: string): [number, number, number] {
  const h = hash(b);
  return [h % 55, 65 + ((h >>> 8) % 25), ((h >>> 16) % 9) - 4];
}

export interface Palette {
  // One colour per node, as an index into `styles`, so drawing changes
  // fillStyle only when the colour changes.
  styles: string[];
  faded: string[];
  nodeStyle: Uint16Array;
  text: string;
  highlight: string;
}

export function palette(d: FlameData, mode: "binary" | "kind"): Palette {
  if (d.diff) return diffPalette(d, dark());
  return framePalette(d.n, d.binaries, d.binary, d.kind, mode);
}

// One colour per item (a flame graph's node, a flame chart's frame) from its
// binary and kind: both views give one binary the same colour.
export function framePalette(
  n: number,
  binaries: string[],
  binary: ArrayLike<number>,
  kind: ArrayLike<number>,
  mode: "binary" | "kind",
): Palette {
  const isDark = dark();
  const light = isDark ? LIGHTNESS.dark : LIGHTNESS.light;
  const fadedLight = isDark ? FADED_LIGHTNESS.dark : FADED_LIGHTNESS.light;
  const styles: string[] = [];
  const faded: string[] = [];
  const nodeStyle = new Uint16Array(n);
  const push = (h: number, s: number, jitter: number) => {
    styles.push(`hsl(${h},${s}%,${light + jitter}%)`);
    faded.push(`hsl(${h},${Math.round(s / 3)}%,${fadedLight}%)`);
    return styles.length - 1;
  };
  if (mode === "kind") {
    const byKind = KIND_HUES.map((h, k) => push(h, k === 3 ? 0 : 60, 0));
    for (let i = 0; i < n; i++) nodeStyle[i] = byKind[kind[i] < KIND_HUES.length ? kind[i] : 3];
  } else {
    const byBinary = binaries.map((b) => {
      if (!b) return push(0, 0, 0);
      const [h, sat, jitter] = binaryHue(b);
      return push(h, sat, jitter);
    });
    const grey = push(0, 0, 0);
    const cuda = push(KIND_HUES[CUDA_KERNEL], 55, 0);
    const group = push(KIND_HUES[GROUP_LABEL], 45, 0);
    const inside = INSIDE_KERNEL.map((k) => push(KIND_HUES[k], 55, 0));
    for (let i = 0; i < n; i++) {
      const k = kind[i];
      const within = INSIDE_KERNEL.indexOf(k);
      nodeStyle[i] =
        k === 3 ? grey : k === CUDA_KERNEL ? cuda : k === GROUP_LABEL ? group : within >= 0 ? inside[within] : (byBinary[binary[i]] ?? grey);
    }
  }
  return {
    styles,
    faded,
    nodeStyle,
    text: isDark ? "#f2f2f2" : "#111",
    highlight: isDark ? "#d05ce3" : "#e040fb",
  };
}

// The GPU trace's bars: kernels in the CUDA-kernel frames' colour (as in the
// flame graph, either mode), memcpy teal, memset amber; faded for bars of
// other kernels while one is selected, and the search highlight.
export interface ActivityColors {
  kinds: string[]; // by trace kind: 0 kernel, 1 memcpy, 2 memset
  faded: string[];
  highlight: string;
  incomplete: string;
  idle: string; // a GPU with nothing running
  launch: string; // a launch call on a CPU thread
  link: string; // launch -> kernel arrows
}

export function activityColors(): ActivityColors {
  const isDark = dark();
  const light = isDark ? LIGHTNESS.dark : LIGHTNESS.light;
  const fadedLight = isDark ? FADED_LIGHTNESS.dark : FADED_LIGHTNESS.light;
  const hues: [number, number][] = [[KIND_HUES[CUDA_KERNEL], 55], [185, 55], [40, 75]];
  return {
    kinds: hues.map(([h, s]) => `hsl(${h},${s}%,${light}%)`),
    faded: hues.map(([h, s]) => `hsl(${h},${Math.round(s / 3)}%,${fadedLight}%)`),
    highlight: isDark ? "#d05ce3" : "#e040fb",
    incomplete: isDark ? "rgba(255,255,255,0.13)" : "rgba(0,0,0,0.10)",
    idle: isDark ? "rgba(255,120,90,0.16)" : "rgba(220,70,40,0.11)",
    launch: `hsl(210,60%,${light}%)`,
    link: isDark ? "rgba(200,210,230,0.55)" : "rgba(40,60,90,0.45)",
  };
}

function diffPalette(d: FlameData, isDark: boolean): Palette {
  const diff = d.diff!;
  const B = diff.baseSum || 1;
  const T = diff.targetSum || 1;
  const styles: string[] = [];
  const faded: string[] = [];
  // 21 steps from green (-1) through neutral to red (+1).
  for (let s = -10; s <= 10; s++) {
    const a = Math.abs(s) / 10;
    const hue = s < 0 ? 120 : 0;
    const sat = Math.round(15 + 70 * a);
    const l = isDark ? Math.round(30 + 10 * a) : Math.round(88 - 28 * a);
    styles.push(s === 0 ? (isDark ? "hsl(0,0%,32%)" : "hsl(0,0%,82%)") : `hsl(${hue},${sat}%,${l}%)`);
    faded.push(isDark ? "hsl(0,0%,20%)" : "hsl(0,0%,92%)");
  }
  const nodeStyle = new Uint16Array(d.n);
  for (let i = 0; i < d.n; i++) {
    const change = diff.targetTotal[i] / T - diff.baseTotal[i] / B;
    const rel = change / Math.max(diff.targetTotal[i] / T, diff.baseTotal[i] / B, 1e-12);
    const step = Math.max(-10, Math.min(10, Math.round(rel * 10)));
    nodeStyle[i] = step + 10;
  }
  return { styles, faded, nodeStyle, text: isDark ? "#f2f2f2" : "#111", highlight: isDark ? "#d05ce3" : "#e040fb" };
}

// The colour legend under a flame graph: what each colour of the mode means.
// By binary: the binaries most stacks go through (the rest, if any, as
// "+N more"), then CUDA kernels when there are any; by kind: native,
// kernel, Python, CUDA kernel, other; both add the group label boxes' colour
// when the graph has them. Each item has its light and dark scheme colour
// ("" for none), so the page's CSS picks one without a redraw.
export interface LegendItem {
  label: string;
  light: string;
  dark: string;
}

export function legendItems(d: FlameData, mode: "binary" | "kind", topBinaries: { binary: string }[], most = 8): LegendItem[] {
  const item = (label: string, h: number, s: number, jitter = 0): LegendItem => ({
    label,
    light: `hsl(${h},${s}%,${LIGHTNESS.light + jitter}%)`,
    dark: `hsl(${h},${s}%,${LIGHTNESS.dark + jitter}%)`,
  });
  let cuda = false;
  let groups = false;
  const insideSeen = new Set<number>();
  for (let i = 1; i < d.n; i++) {
    if (d.kind[i] === CUDA_KERNEL) cuda = true;
    else if (d.kind[i] === GROUP_LABEL) groups = true;
    else if (INSIDE_KERNEL.includes(d.kind[i])) insideSeen.add(d.kind[i]);
  }
  const inside = INSIDE_KERNEL.filter((k) => insideSeen.has(k)).map((k) => item(KIND_NAMES[k], KIND_HUES[k], 55));
  const group = groups ? [item("process / thread", KIND_HUES[GROUP_LABEL], mode === "kind" ? 60 : 45)] : [];
  if (mode === "kind") {
    return [0, 1, 2, 4, 3].map((k) => item(k === 3 ? "other" : KIND_NAMES[k], KIND_HUES[k], k === 3 ? 0 : 60)).concat(inside, group);
  }
  const items = topBinaries.slice(0, most).map(({ binary }) => item(binary, ...binaryHue(binary)));
  if (topBinaries.length > most) items.push({ label: `+${topBinaries.length - most} more`, light: "", dark: "" });
  if (cuda) items.push(item(KIND_NAMES[CUDA_KERNEL], KIND_HUES[CUDA_KERNEL], 55));
  return items.concat(inside, group);
}
