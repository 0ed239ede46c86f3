// The small menu a right-click on a flame-graph box opens (`.box-menu`):
// one button per action, each with a key that picks it while the menu is
// open. One menu at a time, in the page's body; a click elsewhere, Esc,
// scrolling or a pick closes it. Runs on the page's one thread.
import { el, escapeHtml } from "../base/dom";

export interface MenuItem {
  label: string;
  key: string; // one lower-case letter
  action: () => void;
}

let open: { menu: HTMLElement; close: () => void } | null = null;

export function closeBoxMenu(): void {
  open?.close();
}

export function openBoxMenu(e: MouseEvent, title: string, items: MenuItem[]): void {
  closeBoxMenu();
  const menu = el("div", "box-menu");
  menu.setAttribute("role", "menu");
  menu.innerHTML = `<div class="box-menu-title">${escapeHtml(title)}</div>`;
  const pick = (item: MenuItem) => {
    close();
    item.action();
  };
  for (const item of items) {
    const b = el("button", "", `${escapeHtml(item.label)}<kbd>${escapeHtml(item.key.toUpperCase())}</kbd>`);
    b.dataset.action = item.key;
    b.setAttribute("role", "menuitem");
    b.addEventListener("click", () => pick(item));
    menu.append(b);
  }
  const onDown = (ev: MouseEvent) => {
    if (!menu.contains(ev.target as Node)) close();
  };
  const onKey = (ev: KeyboardEvent) => {
    const item = items.find((i) => i.key === ev.key.toLowerCase());
    if (ev.key === "Escape" || item) {
      ev.preventDefault();
      ev.stopPropagation();
      if (item) pick(item);
      else close();
    }
  };
  const close = () => {
    menu.remove();
    document.removeEventListener("mousedown", onDown, true);
    document.removeEventListener("keydown", onKey, true);
    window.removeEventListener("scroll", close, true);
    window.removeEventListener("blur", close);
    if (open?.menu === menu) open = null;
  };
  document.body.append(menu);
  // Inside the window: left of the mouse or above it when it would run past an edge.
  const w = menu.offsetWidth;
  const h = menu.offsetHeight;
  menu.style.left = `${Math.max(0, e.clientX + w > innerWidth ? e.clientX - w : e.clientX)}px`;
  menu.style.top = `${Math.max(0, e.clientY + h > innerHeight ? e.clientY - h : e.clientY)}px`;
  document.addEventListener("mousedown", onDown, true);
  document.addEventListener("keydown", onKey, true);
  window.addEventListener("scroll", close, true);
  window.addEventListener("blur", close);
  open = { menu, close };
}

// Copies text to the clipboard: the Clipboard API where the page may use it
// (a secure context: https or localhost), else a selected textarea and
// execCommand("copy"). True when either worked.
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // refused (no permission, no focus): the fallback below
  }
  const area = el("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}
