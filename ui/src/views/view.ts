// What the shell (app.ts) and the views agree on. The shell owns the URL
// state, the header and toolbar, the timeline and the message line; a view
// owns its <section> of the page and the data it fetches.
//
// Per refresh the shell calls load (under the refresh's AbortController: a
// newer refresh aborts it), then emptyMessage, then render; a change that
// needs no fetch (search, colours, zoom, a table's sort) calls render alone.
// Everything runs on the page's one thread.
import type { InsightsCache } from "../insights_cache";
import type { Measurements } from "../perf";
import type { ViewState } from "../state";
import type { Timeline } from "../timeline";
import type { ValueUnit } from "../units";

export interface View {
  load(s: ViewState, signal: AbortSignal): Promise<void>;
  // Draws from the data loaded last.
  render(s: ViewState): void;
  // Another view is shown now: stop what must not go on unseen (the GPU
  // charts following the timeline's cursor, picking the diff's base).
  release(): void;
  // On every state change while the view is shown, before any fetch: lay out, sync its controls.
  show?(s: ViewState): void;
  // After a load: the message to show instead of an empty view, or "".
  emptyMessage?(s: ViewState, signal: AbortSignal): Promise<string>;
  // The toolbar's note on what the search box matches ("" or absent: none).
  searchInfo?(s: ViewState): string;
  // Esc, after the shell has reset the flame graph's zoom.
  escape?(s: ViewState): void;
  // A drag across the timeline: true when the view takes it (the diff's
  // base); otherwise it becomes the range.
  takeTimelineRange?(fromMs: number, toMs: number): boolean;
  // The profile type the timeline shows while the view is (default: the state's type).
  timelineType?(s: ViewState): string;
}

export interface Shell {
  // Applies a change to the state. `push`: a new history entry (ranges,
  // views); `fetch`: load again (default) or only render.
  update(patch: Partial<ViewState>, push: boolean, fetch?: boolean): void;
  // How values read: the data's unit, or (null) the state's type's as /api/v1/types lists it.
  valueUnit(d: { unit: string; periodNanos: number } | null): ValueUnit;
  readonly measurements: Measurements;
  readonly timeline: Timeline;
  // The answers of /api/v1/insights, shared by every view that shows insights.
  readonly insights: InsightsCache;
  // The insights view with the card of `key` (insights_model.ts insightKey) picked.
  openInsight(key: string): void;
}

// A right-click on a box of any flame graph or the flame chart: its function's sandwich.
export function openSandwich(shell: Shell): (name: string, binary: string) => void {
  return (name, binary) => shell.update({ view: "sandwich", fn: name, fnbin: binary }, true);
}
