// The answers of GET /api/v1/insights, shared by the insights view, the
// landing page's check, the timeline's marks and the GPU charts' marks, so
// a range and selector is asked once: an answer is kept for a while (a
// range relative to now for 15 s, since now moves; an absolute one for a
// minute, since recent data may still arrive) and callers asking at once
// share one request. The request does not take a caller's AbortSignal (the
// other callers still want it); a caller that was aborted drops the answer.
// Owned by the shell (app.ts); everything runs on the page's one thread.
import { apiGet } from "./api/client";
import type { InsightsJson } from "./api/types";
import { isRelative } from "./time";

const RELATIVE_TTL_MS = 15_000;
const ABSOLUTE_TTL_MS = 60_000;
const MAX_ENTRIES = 16;

export interface InsightsQuery {
  from: string;
  to: string;
  selector: string;
}

export class InsightsCache {
  private entries = new Map<string, { at: number; answer: Promise<InsightsJson> }>();

  get(q: InsightsQuery): Promise<InsightsJson> {
    const key = `${q.from}\u0000${q.to}\u0000${q.selector}`;
    const now = Date.now();
    const ttl = isRelative(q.from) || isRelative(q.to) ? RELATIVE_TTL_MS : ABSOLUTE_TTL_MS;
    const hit = this.entries.get(key);
    if (hit && now - hit.at < ttl) return hit.answer;
    const answer = apiGet<InsightsJson>("/api/v1/insights", { from: q.from, to: q.to, selector: q.selector || undefined });
    // A failed answer is not kept: the next caller asks again.
    answer.catch(() => this.entries.get(key)?.answer === answer && this.entries.delete(key));
    this.entries.delete(key);
    this.entries.set(key, { at: now, answer });
    for (const old of this.entries.keys()) {
      if (this.entries.size <= MAX_ENTRIES) break;
      this.entries.delete(old);
    }
    return answer;
  }
}
