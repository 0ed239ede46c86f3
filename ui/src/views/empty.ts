// The messages of views with nothing to show: either no agent has sent
// anything yet (/api/v1/types lists no type), or the range and selector hold
// nothing, which the view words itself.
import { apiGet } from "../api/client";
import type { TypesJson } from "../api/types";
import { escapeHtml } from "../base/dom";

// The command that starts an agent reporting to this server.
export function agentCommandHtml(): string {
  return `<pre>sudo warpscope-agent run --server ${escapeHtml(location.origin)}</pre>`;
}

export async function emptyMessage(noSamples: string, signal: AbortSignal): Promise<string> {
  const types = await apiGet<TypesJson>("/api/v1/types", {}, signal);
  if (types.types.length > 0) return noSamples;
  return `<b>No agent has sent data yet.</b> Start one on each machine to profile:${agentCommandHtml()}`;
}

// "No samples in this range (for this selector)." and what to try (clearing the selector, if any) and why.
export function noSamplesHtml(selector: string, tryInstead: string, end: string): string {
  return `<b>No samples in this range${selector ? " for this selector" : ""}.</b> ${tryInstead}${selector ? " or clear the selector" : ""}${end}`;
}
