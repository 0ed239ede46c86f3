// The time range's arithmetic behind the toolbar's buttons and the diff's
// base: on the URL's from/to, keeping a range that follows now relative
// (it keeps following), else in unix ms. Pure (no DOM): the unit tests run
// it in Node with a fixed `now`.
import type { ViewState } from "./state";
import { apiDuration, formatDuration, formatTime, isRelative, resolveTime } from "./time";

type Range = Pick<ViewState, "from" | "to">;

// A from or to the API would refuse counts as the default range's end (now-1h, now).
const DEFAULT_SPAN_MS = 3600e3;

function fromMs(r: Range, now: number): number {
  return resolveTime(r.from, now) ?? now - DEFAULT_SPAN_MS;
}

function toMs(r: Range, now: number): number {
  return resolveTime(r.to, now) ?? now;
}

function followsNow(r: Range): boolean {
  return isRelative(r.from) && r.to === "now";
}

export function spanMs(r: Range, now: number): number {
  return toMs(r, now) - fromMs(r, now);
}

// The toolbar's label: "last 1h", or both ends and the length.
export function rangeLabel(r: Range, now: number): string {
  const from = resolveTime(r.from, now);
  const to = resolveTime(r.to, now);
  if (from === null || to === null) return `${r.from} – ${r.to}`;
  if (followsNow(r)) return `last ${formatDuration(to - from)}`;
  return `${formatTime(from)} – ${formatTime(to)} (${formatDuration(to - from)})`;
}

// Twice the range around its middle, never past now; a range that follows now doubles its length.
export function zoomedOut(r: Range, now: number): Partial<ViewState> {
  const from = fromMs(r, now);
  const to = toMs(r, now);
  if (followsNow(r)) return { from: `now-${apiDuration(2 * (to - from))}` };
  const half = (to - from) / 2;
  const newTo = Math.min(now, to + half);
  return { from: String(Math.round(newTo - 4 * half)), to: String(Math.round(newTo)) };
}

// The last minute of the range (the flame chart's answer to one that is too long).
export function lastMinute(r: Range, now: number): Partial<ViewState> {
  if (followsNow(r)) return { from: "now-1m", to: "now" };
  const to = toMs(r, now);
  return { from: String(to - 60e3), to: String(to), live: false };
}

// The same length, ending now (the live checkbox on an absolute range).
export function endingNow(r: Range, now: number): Partial<ViewState> {
  return { from: `now-${apiDuration(spanMs(r, now))}`, to: "now" };
}

// The diff's base: base_from/base_to; else, against another label set
// (base_selector), the same range; else the range of the same length just before.
export function diffBase(
  s: Pick<ViewState, "from" | "to" | "base_from" | "base_to"> & { base_selector?: string },
  now: number,
): [string, string] {
  if (s.base_selector && !s.base_from && !s.base_to) return [s.from, s.to];
  const from = fromMs(s, now);
  const to = toMs(s, now);
  return [s.base_from || String(Math.round(2 * from - to)), s.base_to || String(Math.round(from))];
}
