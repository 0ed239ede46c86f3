// The DOM helpers every module shares. Nothing here touches the document
// when the module loads, so the unit tests (Node, no DOM) can import it.

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls = "", html = ""): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (html) e.innerHTML = html;
  return e;
}

// Text for innerHTML: every character that could open a tag or close an attribute, as a numeric entity.
export function escapeHtml(s: string | undefined): string {
  return (s ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// What a caught error says (fetch and API errors are Errors; anything else as text).
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

// Shows a tooltip (positioned inside `container`) next to the mouse, on its
// left when it would run past the container's right edge (tooltips are at
// most 320 px wide, style.css).
export function placeTooltip(tooltip: HTMLElement, container: HTMLElement, e: MouseEvent): void {
  tooltip.hidden = false;
  const box = container.getBoundingClientRect();
  let left = e.clientX - box.left + 14;
  if (left + 320 > box.width) left = Math.max(0, e.clientX - box.left - 330);
  tooltip.style.left = `${left}px`;
  tooltip.style.top = `${e.clientY - box.top + 14}px`;
}

// Calls `redraw` when the system's light/dark scheme changes: canvases pick
// their colours when they draw, so they draw again.
export function onSchemeChange(redraw: () => void): void {
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", redraw);
}
