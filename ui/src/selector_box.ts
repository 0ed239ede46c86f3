// Autocomplete for the label selector box: a <datalist> that offers label
// names after '{' or ',' and a label's values inside its quotes, from
// /api/v1/labels and /api/v1/label_values (each fetched once per page).
// What to offer: selector_complete.ts.
import { apiGet } from "./api/client";
import { completionAt, suggestions } from "./selector_complete";

export function attachSelectorCompletion(input: HTMLInputElement): void {
  const list = document.createElement("datalist");
  list.id = "selector-suggestions";
  input.after(list);
  input.setAttribute("list", list.id);
  let names: Promise<string[]> | null = null;
  const values = new Map<string, Promise<string[]>>();
  let typed = 0;
  input.addEventListener("input", async () => {
    const mine = ++typed;
    const c = completionAt(input.value);
    if (!c) {
      list.replaceChildren();
      return;
    }
    let options: string[];
    if (c.kind === "name") {
      // A failed fetch offers nothing now and is tried again on the next key.
      names ??= apiGet<{ names: string[] }>("/api/v1/labels", {}).then(
        (r) => r.names,
        () => ((names = null), []),
      );
      options = await names;
    } else {
      if (!values.has(c.label)) {
        const label = c.label;
        values.set(
          label,
          apiGet<{ values: string[] }>("/api/v1/label_values", { name: label }).then(
            (r) => r.values,
            () => (values.delete(label), []),
          ),
        );
      }
      options = await values.get(c.label)!;
    }
    if (mine !== typed) return; // typed on meanwhile
    list.replaceChildren(
      ...suggestions(c, options).map((text) => {
        const o = document.createElement("option");
        o.value = text;
        return o;
      }),
    );
  });
}
