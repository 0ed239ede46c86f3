import assert from "node:assert/strict";
import { test } from "node:test";
import { completionAt, suggestions } from "../src/selector_complete.ts";

test("completionAt: a label name after '{' or ',', a value inside its quotes", () => {
  assert.deepEqual(completionAt(""), { kind: "name", prefix: "{", partial: "" });
  assert.deepEqual(completionAt("no"), { kind: "name", prefix: "{", partial: "no" });
  assert.deepEqual(completionAt("{"), { kind: "name", prefix: "{", partial: "" });
  assert.deepEqual(completionAt('{node="a", co'), { kind: "name", prefix: '{node="a", ', partial: "co" });
  assert.deepEqual(completionAt('{node="gp'), { kind: "value", prefix: '{node="', label: "node", partial: "gp" });
  assert.deepEqual(completionAt('{node="a",comm=~"py'), { kind: "value", prefix: '{node="a",comm=~"', label: "comm", partial: "py" });
  // A comma or brace inside a value is part of it.
  assert.deepEqual(completionAt('{exe="/a,b{c'), { kind: "value", prefix: '{exe="', label: "exe", partial: "/a,b{c" });
});

test("completionAt: nothing to complete after a closed selector, a bare value or an operator", () => {
  assert.equal(completionAt('{node="a"}'), null);
  assert.equal(completionAt('{node="a" '), null);
  assert.equal(completionAt("{node="), null);
  assert.equal(completionAt("{9x"), null);
});

test("suggestions: the whole text with each match, names opening their value, values closed and escaped", () => {
  const name = completionAt('{node="a", co');
  assert.deepEqual(suggestions(name, ["comm", "container_id", "node", "Core"]), ['{node="a", comm="', '{node="a", container_id="', '{node="a", Core="']);
  const value = completionAt('{comm="py');
  assert.deepEqual(suggestions(value, ["python3", 'py"q', "bash"]), ['{comm="python3"', '{comm="py\\"q"']);
  assert.equal(suggestions(completionAt("{"), ["a", "b", "c"], 2).length, 2);
});
