// The absolute time picker: a button in the header that opens two
// datetime-local fields (local time, to the second) filled with the range
// shown; Apply sets an absolute range (unix ms in the URL), so the link keeps
// those times. Times as text: time.ts toLocalInput / fromLocalInput.
import { el } from "./base/dom";
import { fromLocalInput, toLocalInput } from "./time";

export class RangePicker {
  readonly root = el("div", "range-picker");
  private form = el("form", "range-form");
  private from = el("input", "range-from");
  private to = el("input", "range-to");
  private error = el("span", "range-error small");

  constructor(
    current: () => { from: number; to: number } | null,
    apply: (fromMs: number, toMs: number) => void,
  ) {
    const open = el("button", "range-open", "⌚ …");
    open.type = "button";
    open.title = "pick an absolute time range";
    for (const input of [this.from, this.to]) {
      input.type = "datetime-local";
      input.step = "1";
    }
    const ok = el("button", "range-apply", "Apply");
    ok.type = "submit";
    this.form.append(this.from, document.createTextNode(" – "), this.to, ok, this.error);
    this.form.hidden = true;
    this.root.append(open, this.form);
    open.addEventListener("click", () => {
      this.form.hidden = !this.form.hidden;
      const r = current();
      if (!this.form.hidden && r) {
        this.from.value = toLocalInput(r.from);
        this.to.value = toLocalInput(r.to);
        this.error.textContent = "";
      }
    });
    this.form.addEventListener("submit", (e) => {
      e.preventDefault();
      const f = fromLocalInput(this.from.value);
      const t = fromLocalInput(this.to.value);
      if (f === null || t === null || t <= f) {
        this.error.textContent = "the start must be a time before the end";
        return;
      }
      this.form.hidden = true;
      apply(f, t);
    });
  }
}
