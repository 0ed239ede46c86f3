// The speedscope export (flame/analysis.ts toSpeedscope) against the file
// format's JSON schema as the speedscope npm package ships it, so an export
// that speedscope would refuse fails here first.
import assert from "node:assert/strict";
import { test } from "node:test";
import Ajv from "ajv";
import schema from "speedscope/dist/release/file-format-schema.json";
import { toSpeedscope } from "../src/flame/analysis.ts";
import { fromProfile } from "../src/flame/model.ts";

const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

function assertValid(doc) {
  const ok = validate(doc);
  assert.ok(ok, JSON.stringify(validate.errors, null, 1));
}

// total → main → {spin → spin, [kernel] do_syscall}, a Python frame, a group label
const profile = (unit, period) =>
  fromProfile({
    version: 1,
    type: unit === "samples" ? "cpu" : "gpu_time",
    unit,
    period_nanos: period,
    total: 12,
    truncated: 0,
    names: ["total", "comm=app", "main", "spin", "do_syscall", "step"],
    binaries: ["", "app", "[kernel.kallsyms]", "train.py"],
    nodes: [
      [-1, 0, 0, 3, 0, 12],
      [0, 1, 0, 5, 0, 12],
      [1, 2, 1, 0, 1, 12],
      [2, 3, 1, 0, 2, 6],
      [3, 3, 1, 0, 4, 4],
      [2, 4, 2, 1, 3, 3],
      [2, 5, 3, 2, 2, 2],
    ],
  });

test("a CPU profile's export, whole and zoomed, is a valid speedscope file", () => {
  const d = profile("samples", 10_000_000);
  const whole = toSpeedscope(d, 0, "cpu");
  assertValid(whole);
  assert.equal(whole.profiles[0].unit, "nanoseconds");
  assertValid(toSpeedscope(d, 3, "cpu zoomed"));
});

test("a GPU-time profile (nanoseconds) and an empty one are valid speedscope files", () => {
  assertValid(toSpeedscope(profile("nanoseconds", 0), 0, "gpu_time"));
  const empty = fromProfile({ version: 1, type: "cpu", unit: "samples", period_nanos: 0, total: 0, truncated: 0, names: ["total"], binaries: [""], nodes: [[-1, 0, 0, 3, 0, 0]] });
  assertValid(toSpeedscope(empty, 0, "empty"));
});

test("the schema check itself refuses a broken file", () => {
  const d = profile("samples", 10_000_000);
  const broken = JSON.parse(JSON.stringify(toSpeedscope(d, 0, "cpu")));
  broken.profiles[0].type = "nonsense";
  assert.equal(validate(broken), false);
});
