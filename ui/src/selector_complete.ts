// Completion for the label selector box: what the text typed so far is
// completing (a label name, or a value of a label), and the whole texts the
// box can offer (its <datalist>) from the label APIs' names and values.
// Pure (no DOM): the unit tests run it in Node. The cursor is taken to be at
// the end of the text, where typing happens.

export type Completion =
  | { kind: "name"; prefix: string; partial: string }
  | { kind: "value"; prefix: string; label: string; partial: string };

const NAME = /^\s*([A-Za-z_][A-Za-z0-9_]*)?$/;
const VALUE = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)$/;

export function completionAt(text: string): Completion | null {
  if (!text.includes("{")) {
    const m = NAME.exec(text);
    return m ? { kind: "name", prefix: "{", partial: m[1] ?? "" } : null;
  }
  // The matcher being typed: after the last '{' or ',' outside quotes.
  let start = -1;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === "\\") i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === "{" || c === ",") start = i;
    else if (c === "}") start = -2; // closed: nothing to complete
  }
  if (start < 0) return null;
  const rest = text.slice(start + 1);
  if (quoted) {
    const m = VALUE.exec(rest);
    if (!m) return null;
    return { kind: "value", prefix: text.slice(0, text.length - m[3].length), label: m[1], partial: m[3] };
  }
  const m = NAME.exec(rest);
  if (!m) return null;
  const partial = m[1] ?? "";
  return { kind: "name", prefix: text.slice(0, text.length - partial.length), partial };
}

// The texts to offer, at most `limit`: the prefix with each name that starts
// with what was typed (then `="`), or each such value (closed with `"`).
export function suggestions(c: Completion, options: string[], limit = 50): string[] {
  const p = c.partial.toLowerCase();
  const out: string[] = [];
  for (const o of options) {
    if (!o.toLowerCase().startsWith(p)) continue;
    out.push(c.kind === "name" ? `${c.prefix}${o}="` : `${c.prefix}${o.replace(/["\\]/g, "\\$&")}"`);
    if (out.length >= limit) break;
  }
  return out;
}
