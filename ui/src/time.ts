// The API's time syntax on the client (docs/api.md, "Common query
// parameters"): unix ms, RFC 3339, or now-<duration>. The timeline needs
// absolute times; the URL keeps what the user chose (relative ranges follow now).

const UNIT_MS: Record<string, number> = { ms: 1, s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 604800e3 };

export function parseDurationMs(text: string): number | null {
  const re = /(\d+)(ms|s|m|h|d|w)/g;
  let total = 0;
  let consumed = 0;
  for (const m of text.matchAll(re)) {
    if (m.index !== consumed) return null;
    total += Number(m[1]) * UNIT_MS[m[2]];
    consumed += m[0].length;
  }
  return consumed === text.length && consumed > 0 ? total : null;
}

export function resolveTime(text: string, nowMs: number): number | null {
  const t = text.trim();
  if (t === "now") return nowMs;
  if (t.startsWith("now-")) {
    const d = parseDurationMs(t.slice(4));
    return d === null ? null : nowMs - d;
  }
  if (/^\d+$/.test(t)) return Number(t);
  const parsed = Date.parse(t);
  return Number.isNaN(parsed) ? null : parsed;
}

export function isRelative(text: string): boolean {
  return text.trim().startsWith("now");
}

export function formatDuration(ms: number): string {
  if (ms >= 86400e3 && ms % 3600e3 === 0) return `${+(ms / 86400e3).toFixed(1)}d`;
  if (ms >= 3600e3) return `${+(ms / 3600e3).toFixed(1)}h`;
  if (ms >= 60e3) return `${+(ms / 60e3).toFixed(1)}m`;
  return `${+(ms / 1e3).toFixed(1)}s`;
}

// A duration in the API's syntax, exact to the millisecond: "1h30m",
// "3m18s", "1500ms" reads back as the same length (formatDuration's "1.5h"
// is for people; the server and parseDurationMs take whole numbers only).
export function apiDuration(ms: number): string {
  let rest = Math.max(0, Math.round(ms));
  if (rest === 0) return "0s";
  let out = "";
  for (const [unit, size] of [["d", 86400e3], ["h", 3600e3], ["m", 60e3], ["s", 1e3], ["ms", 1]] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * size;
    }
  }
  return out;
}

// The range [from, to) widened to whole seconds of the Unix clock: what
// per-second data (gpu_time, off_cpu, gpu_wait) can answer. Unchanged when already whole.
export function wholeSeconds(fromMs: number, toMs: number): [number, number] {
  return [Math.floor(fromMs / 1e3) * 1e3, Math.ceil(toMs / 1e3) * 1e3];
}

export function formatTime(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// A time as an <input type="datetime-local" step="1"> holds it (local time,
// "2026-11-29T12:00:05"), and back: null for an empty or invalid text.
export function toLocalInput(ms: number): string {
  return formatTime(ms).replace(" ", "T");
}
export function fromLocalInput(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?$/.exec(text.trim());
  if (!m) return null;
  const [y, mo, d, h, mi, sec = "0", frac = "0"] = m.slice(1);
  const t = new Date(+y, +mo - 1, +d, +h, +mi, +sec, +frac.padEnd(3, "0"));
  return t.getMonth() === +mo - 1 && t.getDate() === +d ? t.getTime() : null;
}

// A duration in nanoseconds in at most 5 characters, for an axis gutter of
// 50 px: "0.2s", "1.5s", "12s", "40ms", "5ms", "800µs", "0".
export function compactNanos(ns: number): string {
  const a = Math.abs(ns);
  if (a === 0) return "0";
  const trim = (x: number, unit: string) => `${+x.toFixed(x < 10 ? 1 : 0)}${unit}`;
  if (a >= 1e8) return trim(ns / 1e9, "s");
  if (a >= 1e6) return trim(ns / 1e6, "ms");
  if (a >= 1e3) return trim(ns / 1e3, "µs");
  return `${Math.round(ns)}ns`;
}

// A duration in nanoseconds at a readable scale: 850 ns, 12.3 µs, 4.56 ms, 1.23 s.
export function formatNanos(ns: number): string {
  const a = Math.abs(ns);
  const fixed = (x: number) => (Math.abs(x) < 10 ? x.toFixed(2) : Math.abs(x) < 100 ? x.toFixed(1) : x.toFixed(0));
  if (a < 1e3) return `${Math.round(ns)} ns`;
  if (a < 1e6) return `${fixed(ns / 1e3)} µs`;
  if (a < 1e9) return `${fixed(ns / 1e6)} ms`;
  return `${fixed(ns / 1e9)} s`;
}
