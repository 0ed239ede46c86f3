// Runs the unit tests of the UI's pure modules (test/*.test.mjs) with
// Node's own test runner. Node cannot load the TypeScript sources, so each
// test file is first bundled, with the modules it imports, by esbuild (the
// one Vite depends on, in ui/node_modules) into OUT_DIR: the build tree
// under CTest (ui_unit_test), a temporary folder otherwise.
//   node test/run_unit.mjs [OUT_DIR]      (or: npm run test:unit)
// Times are formatted in UTC (TZ=UTC), so the expected texts hold anywhere.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const testDir = path.dirname(fileURLToPath(import.meta.url));
const tests = fs.readdirSync(testDir).filter((f) => f.endsWith(".test.mjs")).sort();
if (tests.length === 0) {
  console.error(`run_unit: no *.test.mjs in ${testDir}`);
  process.exit(1);
}
const given = process.argv[2];
const outDir = given ? path.resolve(given) : fs.mkdtempSync(path.join(os.tmpdir(), "warpscope-ui-unit-"));
fs.mkdirSync(outDir, { recursive: true });
// Only this runner's own outputs: a test removed from test/ must not run from an older bundle.
for (const f of fs.readdirSync(outDir)) if (f.endsWith(".test.mjs")) fs.rmSync(path.join(outDir, f));

await build({
  entryPoints: tests.map((f) => path.join(testDir, f)),
  outdir: outDir,
  outExtension: { ".js": ".mjs" },
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node18",
  sourcemap: "inline",
  logLevel: "warning",
});
const run = spawnSync(process.execPath, ["--enable-source-maps", "--test", ...tests.map((f) => path.join(outDir, f))], {
  stdio: "inherit",
  env: { ...process.env, TZ: "UTC" },
});
if (!given) fs.rmSync(outDir, { recursive: true, force: true });
process.exit(run.status ?? 1);
