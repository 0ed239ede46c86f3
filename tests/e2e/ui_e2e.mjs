// The web UI end to end: a real warpscope-server fed by a real
// agent profiling tests/testprogs/cpu_split, driven in Debian's headless
// Chromium through playwright-core. Checks the workflow (load without
// console errors, drag on the timeline, search, table, sandwich; the
// threads view's on- and off-CPU time on e2e_seed_hour's seeded threads; the
// insights view (landing page, cards, the evidence's flame graph, the bands
// on the GPU charts) on its seeded insights; the energy view (totals, rows,
// group-by, coefficients) and the gpu_energy flame graph on its seeded
// GPU energy; the GPU
// kernels view and the gpu_time flame graph on e2e_seed_hour's seeded GPU
// seconds; the combined GPU timeline and the Chrome trace's CPU side on a
// CUDA application driven by the fake CUPTI through the real injection
// library and agent), saves a screenshot per view, and prints the UI's measurements:
//   flame graph of 50k nodes (build + draw), range selection on 1 h of data
//   to the updated flame graph, and the gzipped bundle.
// Run by CTest as ui_e2e (tests/e2e/CMakeLists.txt sets the WS_* paths).
// Needs root (the agent loads BPF programs); exits 77 (skipped) otherwise.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";

const env = (name) => {
  const v = process.env[name];
  if (!v) fail(`${name} is not set (run through ctest)`);
  return v;
};
function fail(message) {
  console.error(`ui_e2e: FAIL: ${message}`);
  process.exitCode = 1;
  throw new Error(message);
}
const log = (...a) => console.log("ui_e2e:", ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const CHROMIUM = process.env.WS_CHROMIUM || "/usr/bin/chromium";
const TOKEN = "ui-e2e-token";
if (process.getuid() !== 0) {
  console.log("ui_e2e: SKIP: needs root (the agent loads BPF programs)");
  process.exit(77);
}
if (!fs.existsSync(CHROMIUM)) {
  console.error(`ui_e2e: FAIL: no Chromium at ${CHROMIUM}: run scripts/bootstrap.sh (Debian package chromium)`);
  process.exit(1);
}
const require = createRequire(path.join(env("WS_UI_DIR"), "package.json"));
const { chromium } = require("playwright-core");

const artifacts = env("WS_ARTIFACTS");
fs.rmSync(artifacts, { recursive: true, force: true });
fs.mkdirSync(artifacts, { recursive: true });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui_e2e-"));
const children = [];

function start(cmd, args, name) {
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
  child.output = "";
  child.stdout.on("data", (d) => (child.output += d));
  child.stderr.on("data", (d) => (child.output += d));
  child.on("exit", (code, signal) => (child.exited = { code, signal }));
  child.label = name;
  children.push(child);
  return child;
}

async function waitFor(what, fn, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) fail(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

async function api(url, pathAndQuery) {
  const res = await fetch(url + pathAndQuery, { headers: { Authorization: `Bearer ${TOKEN}` } });
  if (!res.ok) fail(`${pathAndQuery}: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}

// A synthetic flame graph answer with `count` nodes (docs/api.md's format).
// A flame-chart answer (docs/api.md) at the view's limit: `lanes` threads
// over `seconds` (15 min), `perSecond` stacks per thread per second, drawn
// from 400 stacks that share prefixes like real ones.
function syntheticChart(fromMs, lanes, seconds, perSecond) {
  let seed = 777;
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
  const names = [];
  for (let i = 0; i < 300; i++) names.push(`synthetic::chart_${i}`);
  const binaries = ["", "libchart.so"];
  const frames = names.map((_, i) => [i, 1, 0]);
  const stacks = [];
  for (let i = 0; i < 400; i++) {
    const base = i < 20 ? [] : stacks[rand(stacks.length)].slice(0, 3 + rand(15));
    while (base.length < 8 + rand(25)) base.push(rand(300));
    stacks.push(base);
  }
  const out = { version: 1, type: "cpu", unit: "samples", period_nanos: 52631578, from_ms: fromMs, to_ms: fromMs + seconds * 1000,
    total: 0, names, binaries, frames, stacks, lanes: [], truncated_lanes: 0, truncated_total: 0 };
  for (let l = 0; l < lanes; l++) {
    const points = [];
    let total = 0;
    for (let t = 0; t < seconds; t++) {
      const picked = new Set();
      while (picked.size < perSecond) picked.add(rand(400));
      for (const st of [...picked].sort((a, b) => a - b)) {
        const v = 1 + rand(3);
        points.push([fromMs + t * 1000, st, v]);
        total += v;
      }
    }
    out.lanes.push({ labels: { pid: String(1000 + l), comm: "synthetic", thread: `worker-${l}` }, total, points });
    out.total += total;
  }
  return out;
}

function syntheticProfile(count) {
  const names = ["total"];
  for (let i = 0; i < 5000; i++) names.push(`synthetic::module_${i % 97}::function_${i}`);
  const binaries = [""];
  for (let i = 0; i < 20; i++) binaries.push(`libsynthetic_${i}.so`);
  let seed = 12345;
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
  const nodes = [[-1, 0, 0, 3, 0, 0]];
  const depth = [0];
  const children = [[]];
  // Each new node hangs under a random recent node, at most 30 deep.
  while (nodes.length < count) {
    let parent = nodes.length < 50 ? rand(nodes.length) : nodes.length - 1 - rand(Math.min(nodes.length, 400));
    while (depth[parent] >= 30) parent = nodes[parent][0];
    nodes.push([parent, 1 + rand(5000), 1 + rand(20), 0, 1 + rand(50), 0]);
    depth.push(depth[parent] + 1);
    children.push([]);
    children[parent].push(nodes.length - 1);
  }
  // Re-emit in preorder with sorted siblings, totals bottom-up.
  const out = [];
  const visit = (i, parent) => {
    const k = out.length;
    const [, name, binary, kind, self] = nodes[i];
    out.push([parent, name, binary, kind, i === 0 ? 0 : self, 0]);
    const kids = children[i].slice().sort((a, b) => names[nodes[a][1]].localeCompare(names[nodes[b][1]]));
    for (const c of kids) visit(c, k);
  };
  visit(0, -1);
  for (let i = out.length - 1; i >= 0; i--) {
    out[i][5] += out[i][4];
    if (out[i][0] >= 0) out[out[i][0]][5] += out[i][5];
  }
  return { version: 1, type: "cpu", unit: "samples", period_nanos: 10101010, total: out[0][5], truncated: 0, names, binaries, nodes: out };
}

function bundleGzipBytes(dist) {
  let total = 0;
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else total += zlib.gzipSync(fs.readFileSync(p), { level: 9 }).length;
    }
  };
  walk(dist);
  return total;
}

const t0 = Date.now();
let browser;
let lastPage; // screenshotted when the test fails
const metrics = {};
try {
  // The server, the workload, the agent, and the synthetic hour.
  const server = start(env("WS_SERVER_BIN"), ["--listen", "127.0.0.1:0", "--data-dir", `${dir}/data`, "--token", TOKEN], "server");
  const url = await waitFor("the server's address", () => /serving on (http:\/\/127\.0\.0\.1:\d+)/.exec(server.output)?.[1] ?? (server.exited && fail(`server exited: ${server.output}`)), 20000);
  const port = url.split(":").pop();
  const workload = start(path.join(env("WS_TESTPROGS_DIR"), "cpu_split"), ["20"], "cpu_split");
  const cudaSocket = `${dir}/cuda.sock`;
  const agent = start(env("WS_AGENT_BIN"), ["run", "--server", url, "--token", TOKEN, "--frequency", "99", "--upload-interval", "2s",
    "--state-dir", `${dir}/agent`, "--node-name", "e2e-node", "--cuda-socket", cudaSocket, "--gpu-time-mode", "exact"], "agent");
  const seed = start(env("WS_SEED_BIN"), [port, TOKEN, "e2e-synthetic"], "seed");
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"], headless: true });

  const pidSelector = `{pid="${workload.pid}"}`;
  const q = (s) => encodeURIComponent(s);
  // Enough of the workload at the server: a few upload windows.
  const firstMs = Date.now();
  await waitFor("the agent's samples of cpu_split", async () => {
    if (agent.exited) fail(`agent exited: ${agent.output}`);
    const top = await api(url, `/api/v1/top?from=${firstMs - 60000}&to=now&selector=${q(pidSelector)}&limit=0`);
    return top.total >= 500 ? top : null;
  }, 30000);
  // The agent stamps samples with their second: wait for a few seconds of
  // them, so the drag below can take some of the seconds and leave others.
  const times = await waitFor("four seconds of the workload", async () => {
    const from = Math.floor(firstMs / 1000) * 1000 - 60000; // steps on whole seconds, like the agent's
    const series = await api(url, `/api/v1/series?from=${from}&to=now&selector=${q(pidSelector)}&step=1s`);
    const t = [...new Set(series.series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
    return t.length >= 4 ? t : null;
  }, 30000);
  // A CUDA application on the fake CUPTI: the real injection library, the
  // real agent's socket and uprobe; 400 launches from one thread.
  const cudaFromMs = Date.now();
  const cudaApp = spawn("/usr/bin/env", [`WARPSCOPE_CUPTI_PATH=${env("WS_FAKE_CUPTI")}`, `WARPSCOPE_AGENT_SOCKET=${cudaSocket}`,
    path.join(env("WS_TESTPROGS_DIR"), "cuda_launch_sites"), env("WS_CUDA_LIBRARY"), "200"], { stdio: ["ignore", "pipe", "pipe"] });
  cudaApp.output = "";
  cudaApp.stdout.on("data", (d) => (cudaApp.output += d));
  cudaApp.stderr.on("data", (d) => (cudaApp.output += d));
  cudaApp.on("exit", (code) => (cudaApp.exited = { code, toMs: Date.now() }));
  cudaApp.label = "cuda_launch_sites";
  children.push(cudaApp);
  await waitFor("the synthetic hour", () => seed.exited && (seed.exited.code === 0 || fail(`seed failed: ${seed.output}`)), 30000);
  const dataFrom = times[0];
  const dataTo = times[times.length - 1] + 1000;
  const dragTo = times[Math.floor(times.length / 2)] - 500; // between two seconds with samples
  log(`workload data ${((dataTo - dataFrom) / 1000).toFixed(0)} s; setup ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  // The login prompt: a token-protected server asks once, then loads.
  {
    const page = await browser.newPage();
    lastPage = page;
    await page.goto(`${url}/?view=targets&from=now-5m`);
    await page.locator(".modal input[type=password]").fill(TOKEN);
    await page.locator(".modal button[type=submit]").click();
    await page.locator(".target-node h3", { hasText: "e2e-node" }).waitFor({ timeout: 10000 });
    await page.close();
  }

  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, colorScheme: "light" });
  await context.addInitScript((token) => sessionStorage.setItem("warpscope.token", token), TOKEN);
  const page = await context.newPage();
  lastPage = page;
  const consoleErrors = [];
  page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
  const flameVersion = () => page.locator(".view-flame .flame-panel, .view-table .flame-panel").first().getAttribute("data-version").then(Number);
  const flameTotal = () => page.locator(".flame-panel").first().getAttribute("data-total").then(Number);
  // Each screenshot in the light scheme, then the dark one (NAME_dark.png):
  // the canvases draw again when the scheme changes.
  const frames = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  // Back to the workload's graph (a URL of step 1's) for what follows.
  const backTo = async (workloadUrl) => {
    await page.goto(workloadUrl);
    await waitFor("the workload's graph again", async () => (await flameTotal()) > 81, 10000);
  };
  const shot = async (name) => {
    await page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });
    await page.emulateMedia({ colorScheme: "dark" });
    await frames();
    await page.screenshot({ path: path.join(artifacts, `${name}_dark.png`), fullPage: true });
    await page.emulateMedia({ colorScheme: "light" });
    await frames();
  };

  // 1. The flame graph of the workload's whole range.
  const from = dataFrom - 10000;
  const to = dataTo + 2000;
  await page.goto(`${url}/?from=${from}&to=${to}&selector=${q(pidSelector)}`);
  await waitFor("the first flame graph", async () => (await flameVersion()) >= 1 && (await flameTotal()) > 0, 15000);
  const totalBefore = await flameTotal();
  await shot("flame");

  // 2. Drag across the first half of the data on the timeline.
  const over = await page.locator(".timeline .u-over").boundingBox();
  const xAt = (t) => over.x + (over.width * (t - from)) / (to - from);
  const versionBefore = await flameVersion();
  await page.mouse.move(xAt(from) + 2, over.y + over.height / 2);
  await page.mouse.down();
  await page.mouse.move(xAt(dragTo), over.y + over.height / 2, { steps: 8 });
  await page.mouse.up();
  await waitFor("the flame graph after the drag", async () => (await flameVersion()) > versionBefore, 10000);
  const totalAfter = await flameTotal();
  log(`drag: flame graph total ${totalBefore} -> ${totalAfter} samples; URL ${new URL(page.url()).search}`);
  if (!(totalAfter > 0 && totalAfter < totalBefore)) fail(`dragging on the timeline should narrow the flame graph (${totalBefore} -> ${totalAfter})`);
  if (!/from=\d+&to=\d+/.test(page.url())) fail(`the URL should hold the selected range: ${page.url()}`);

  // 3. Search: "/" focuses the box; the matches' share is shown.
  await page.goto(`${url}/?from=${from}&to=${to}&selector=${q(pidSelector)}`);
  await waitFor("the flame graph", async () => (await flameTotal()) > 0, 10000);
  await page.keyboard.press("/");
  await page.keyboard.type("hot_three_quarters");
  const info = await waitFor("the search share", async () => {
    const t = await page.locator(".search-info").textContent();
    return /% of total/.test(t) ? t : null;
  }, 5000);
  const searchShare = Number(/([\d.]+)% of total/.exec(info)[1]);
  log(`search "hot_three_quarters": ${info}`);
  if (!(searchShare > 55 && searchShare < 92)) fail(`hot_three_quarters should be about 75% of cpu_split, found ${searchShare}%`);
  if (!page.url().includes("search=hot_three_quarters")) fail("the URL should hold the search");
  await shot("search");

  // Click to zoom into a box of the second row, then Esc resets.
  const canvas = await page.locator(".view-flame .flame-canvas").boundingBox();
  await page.locator(".view-flame .flame-canvas").click({ position: { x: canvas.width / 2, y: 18 * 1.5 } });
  await waitFor("zoom in the URL", () => page.url().includes("focus="), 3000);
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("Escape");
  await waitFor("Esc resetting the zoom", () => !page.url().includes("focus="), 3000);

  // 3b. Two subtrees that share names (e2e_seed_hour's "-dup" node): python3
  // runs other.py's <module> (3 samples) and train.py's (78). A click on
  // train.py's box zooms there; the URL names that node by its identity, and
  // a reload of the link finds the same node, not the first "<module>".
  {
    const dupNode = '{node="e2e-synthetic-dup"}';
    const before = page.url();
    const focusTotal = () => page.locator(".flame-panel").first().getAttribute("data-focus-total").then(Number);
    await page.goto(`${url}/?selector=${q(dupNode)}`);
    await waitFor("the duplicate-names graph", async () => (await flameTotal()) === 81, 10000);
    const dc = await page.locator(".view-flame .flame-canvas").boundingBox();
    await page.locator(".view-flame .flame-canvas").click({ position: { x: dc.width * 0.6, y: 18 * 2.5 } });
    await waitFor("the zoom into train.py's <module>", () => page.url().includes("focus="), 3000);
    const focus = JSON.parse(new URL(page.url()).searchParams.get("focus"));
    if (focus.length !== 2 || focus[1][0] !== "<module>" || !String(focus[1][1]).endsWith("train.py")) {
      fail(`the URL should name train.py's <module>: ${JSON.stringify(focus)}`);
    }
    if ((await focusTotal()) !== 78) fail(`the zoomed node should hold 78 samples, found ${await focusTotal()}`);
    const crumb = await page.locator(".view-flame .breadcrumb").innerText();
    if (!crumb.includes("<module>")) fail(`the breadcrumb should end at <module>: ${crumb}`);
    await page.reload();
    await waitFor("the reloaded zoom", async () => (await flameTotal()) === 81 && (await focusTotal()) !== 81, 10000);
    if ((await focusTotal()) !== 78) fail(`after a reload the zoom should still hold 78 samples, found ${await focusTotal()}`);
    log(`zoom with shared names: ${JSON.stringify(focus)} holds ${await focusTotal()} of 81`);
    await shot("zoom_same_names");
    // The bottom-up tree of the same data: the functions where samples were
    // taken (setup 3, train_step 78) on the first row, their callers below.
    await page.locator("button.tree-toggle").click();
    await waitFor("the bottom-up tree in the URL", () => page.url().includes("tree=bottom-up") && !page.url().includes("focus="), 3000);
    if ((await flameTotal()) !== 81) fail(`the bottom-up tree should keep the total of 81, found ${await flameTotal()}`);
    await page.locator(".view-flame .flame-canvas").click({ position: { x: dc.width * 0.6, y: 18 * 1.5 } });
    await waitFor("the zoom into the bottom-up train_step", () => page.url().includes("focus="), 3000);
    const upFocus = JSON.parse(new URL(page.url()).searchParams.get("focus"));
    if (upFocus.length !== 1 || upFocus[0][0] !== "train_step") fail(`bottom-up, the first row should be train_step: ${JSON.stringify(upFocus)}`);
    if ((await focusTotal()) !== 78) fail(`bottom-up train_step should hold 78 samples, found ${await focusTotal()}`);
    await shot("bottom_up");
    await backTo(before);
  }

  // 3c. Group by process: one subtree per (comm, pid) under label boxes; the
  // total stays, and a click on the first row zooms into the process's box.
  {
    const before = page.url();
    const version = await flameVersion();
    await page.locator("select.group-select").selectOption("process");
    await waitFor("the grouped graph", async () => page.url().includes("group=process") && (await flameVersion()) > version, 10000);
    // The agent is still sending this range: the grouped total lies between
    // the first graph's and what the server holds ungrouped right after.
    const ungrouped = (await api(url, `/api/v1/profile?from=${from}&to=${to}&selector=${q(pidSelector)}&max_nodes=2`)).total;
    const grouped = await flameTotal();
    if (!(grouped >= totalBefore && grouped <= ungrouped)) fail(`grouping should keep the total: ${totalBefore} <= ${grouped} <= ${ungrouped}`);
    const gc = await page.locator(".view-flame .flame-canvas").boundingBox();
    await page.locator(".view-flame .flame-canvas").click({ position: { x: gc.width / 2, y: 18 * 1.5 } });
    await waitFor("the zoom into the process", () => page.url().includes("focus="), 3000);
    const focus = JSON.parse(new URL(page.url()).searchParams.get("focus"));
    if (focus.length !== 1 || focus[0][0] !== "comm=cpu_split" || focus[0][2] !== 5) fail(`the first row should be the process's label box: ${JSON.stringify(focus)}`);
    const crumb = await page.locator(".view-flame .breadcrumb").innerText();
    if (!crumb.includes("comm=cpu_split")) fail(`the breadcrumb should name the group: ${crumb}`);
    log(`group by process: ${JSON.stringify(focus)}, total ${await flameTotal()}`);
    await shot("group_by_process");
    await backTo(before);
  }

  // 3d. The flame graph's transforms on the synthetic hour (fixed stacks
  // main;serve_k;handle_k;work_s@libwork.so;leaf_k@libc.so.6): the legend
  // names the binaries; a right-click opens the box menu, whose "Focus on
  // function" leaves the stacks through it with its total from
  // /api/v1/top of the same range; `h` over a box hides that frame and
  // collapsing recursion keeps the total; a reload of the link shows the same.
  {
    const before = page.url();
    const hTo = Date.now();
    const hFrom = hTo - 2 * 3600e3;
    const hourSel = q('{node="e2e-synthetic"}');
    const panel = page.locator(".view-flame .flame-panel");
    const nodes = async () => Number(await panel.getAttribute("data-nodes"));
    await page.goto(`${url}/?from=${hFrom}&to=${hTo}&selector=${hourSel}`);
    await waitFor("the hour's flame graph", async () => (await flameTotal()) > 0, 10000);
    const hourTotal = await flameTotal();
    const hourNodes = await nodes();
    const legend = await page.locator(".view-flame .flame-legend").innerText();
    if (!legend.includes("libc.so.6") || !legend.includes("libwork.so")) fail(`the legend should name the hour's binaries: ${legend}`);
    const canvas = page.locator(".view-flame .flame-canvas");
    const hc = await canvas.boundingBox();
    await canvas.click({ button: "right", position: { x: hc.width * 0.5, y: 18 * 5.5 } });
    const items = await page.locator(".box-menu button").allInnerTexts();
    if (items.length !== 4 || !/Sandwich/.test(items[0])) fail(`the box menu should offer sandwich, focus, hide and copy: ${items.join(" | ")}`);
    await page.locator(".box-menu button[data-action=f]").click();
    await waitFor("the focus in the URL", () => page.url().includes("ffocus="), 2000);
    const fn = JSON.parse(new URL(page.url()).searchParams.get("ffocus"));
    const top = await api(url, `/api/v1/top?from=${hFrom}&to=${hTo}&selector=${hourSel}&limit=0`);
    const want = top.functions.find((f) => f.name === fn[0] && f.binary === fn[1] && f.kind === fn[2]);
    if (!want) fail(`/api/v1/top should list the focused function ${JSON.stringify(fn)}`);
    await waitFor("the focused graph", async () => (await flameTotal()) === want.total, 2000);
    const chip = await page.locator(".transform-chips .chip").innerText();
    if (!chip.includes(fn[0])) fail(`a chip should name the focused function: ${chip}`);
    log(`focus on ${JSON.stringify(fn)}: ${await flameTotal()} of ${hourTotal} samples, /api/v1/top says ${want.total}`);
    await shot("focus_function");
    await page.locator(".transform-chips button[data-clear=ffocus]").click();
    await waitFor("the focus cleared", async () => !page.url().includes("ffocus=") && (await flameTotal()) === hourTotal, 2000);
    // Row 2 is a serve_k box: its handle_k move up under main, one node fewer.
    await page.mouse.move(hc.x + hc.width * 0.5, hc.y + 18 * 2.5);
    await page.keyboard.press("h");
    await waitFor("the hidden frame", async () => page.url().includes("hide=") && (await nodes()) === hourNodes - 1, 2000);
    if ((await flameTotal()) !== hourTotal) fail(`hiding a frame should keep the total ${hourTotal}, found ${await flameTotal()}`);
    const hidden = JSON.parse(new URL(page.url()).searchParams.get("hide"));
    if (hidden.length !== 1 || !/^serve_\d$/.test(hidden[0][0])) fail(`row 2 should be a serve_k frame: ${JSON.stringify(hidden)}`);
    await page.locator("button.norec-toggle").click();
    await waitFor("collapsed recursion in the URL", () => page.url().includes("norec=1"), 2000);
    if ((await flameTotal()) !== hourTotal || (await nodes()) !== hourNodes - 1) fail("the hour has no recursion: collapsing should change nothing");
    await page.reload();
    await waitFor("the reloaded transforms", async () => (await flameTotal()) === hourTotal && (await nodes()) === hourNodes - 1, 5000);
    log(`hide ${hidden[0][0]}: ${hourNodes} -> ${await nodes()} nodes, total ${await flameTotal()}; legend: ${legend.replace(/\s+/g, " ")}`);
    await shot("hide_frame");
    // The binary filter: only libwork.so's 240 work_s frames under the root.
    await page.locator("input.bin-filter").fill("libwork");
    await page.locator("input.bin-filter").press("Enter");
    await waitFor("the binary filter", async () => page.url().includes("bin=libwork") && (await nodes()) === 241, 2000);
    if ((await flameTotal()) !== hourTotal) fail(`the binary filter should keep the total ${hourTotal}, found ${await flameTotal()}`);
    // The table under the same transforms: the table of the graph's tree,
    // so only libwork.so's functions, and the total kept.
    {
      const tableUrl = new URL(page.url());
      tableUrl.searchParams.set("view", "table");
      await page.goto(tableUrl.toString());
      const wrap = page.locator(".view-table div.table-wrap");
      await waitFor("the table of the transformed graph", async () => (await wrap.getAttribute("data-source")) === "graph" && Number(await wrap.getAttribute("data-rows")) > 0, 10000);
      const binaries = await page.locator(".view-table table.top tbody tr td:nth-child(6)").allInnerTexts();
      if (!binaries.length || binaries.some((b) => b.trim() !== "libwork.so")) fail(`under bin=libwork the table lists libwork.so only: ${[...new Set(binaries)].join(", ")}`);
      log(`table under the binary filter: ${binaries.length} rows, all libwork.so`);
      await shot("table_transformed");
      await page.goBack();
      await waitFor("the graph again", async () => (await nodes()) === 241, 10000);
    }
    // Copy name (key c in the menu) closes the menu without an error.
    await canvas.click({ button: "right", position: { x: hc.width * 0.5, y: 18 * 1.5 } });
    await page.keyboard.press("c");
    await waitFor("the menu closed", async () => (await page.locator(".box-menu").count()) === 0, 2000);
    await backTo(before);
  }

  // 3e. The selector box completes label values from the label APIs.
  {
    const box = page.locator("input.selector");
    const typedBefore = await box.inputValue();
    await box.fill('{node="e2e-synthetic-d');
    await box.dispatchEvent("input");
    const offered = await waitFor("the selector's suggestions", async () => {
      const values = await page.locator("#selector-suggestions option").evaluateAll((os) => os.map((o) => o.value));
      return values.length ? values : null;
    }, 3000);
    if (!offered.includes('{node="e2e-synthetic-dup"')) fail(`the selector box should offer the -dup node: ${JSON.stringify(offered)}`);
    await box.fill(typedBefore);
    log(`selector completion: ${JSON.stringify(offered)}`);
  }

  // 3f. The absolute time picker: the fields hold the range shown; Apply puts
  // the times typed (local time, to the second) in the URL as unix ms.
  {
    const before = page.url();
    await page.locator("button.range-open").click();
    if (!(await page.locator("input.range-from").inputValue())) fail("the time picker should show the range's start");
    const wantFrom = Math.floor((from - 60000) / 1000) * 1000;
    const wantTo = Math.floor(from / 1000) * 1000;
    const local = await page.evaluate((ts) => ts.map((ms) => {
      const d = new Date(ms);
      const p = (n) => String(n).padStart(2, "0");
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    }), [wantFrom, wantTo]);
    await page.locator("input.range-from").fill(local[0]);
    await page.locator("input.range-to").fill(local[1]);
    await page.locator("button.range-apply").click();
    await waitFor("the picked range in the URL", () => {
      const u = new URL(page.url()).searchParams;
      return u.get("from") === String(wantFrom) && u.get("to") === String(wantTo);
    }, 3000);
    log(`time picker: ${local.join(" – ")} -> ${new URL(page.url()).search}`);
    await backTo(before);
  }

  // 4. The top table: the function's row, linked to the graph.
  await page.locator("button.tab", { hasText: "Top functions" }).click();
  const row = page.locator("table.top tbody tr", { hasText: "hot_three_quarters" }).first();
  await row.waitFor({ timeout: 10000 });
  const cells = await row.locator("td").allTextContents();
  const tableTotalPct = parseFloat(cells[3]);
  log(`table: hot_three_quarters self ${cells[0]} (${cells[1]}), total ${cells[2]} (${cells[3]})`);
  // cpu_split's hot_three_quarters calls its spin loop: its share is in total, not self.
  if (!(tableTotalPct > 55 && tableTotalPct < 92) || Math.abs(tableTotalPct - searchShare) > 1.0) {
    fail(`table total% of hot_three_quarters ${cells[3]} should be about 75% and match the search's ${searchShare}%`);
  }
  await row.click();
  await page.locator("table.top tbody tr.selected", { hasText: "hot_three_quarters" }).waitFor({ timeout: 5000 });
  if (!page.url().includes("fn=hot_three_quarters")) fail("selecting a row should put the function in the URL");
  await shot("table");

  // 5. The sandwich of that function.
  await page.locator("table.top tbody tr.selected button[data-sandwich]").click();
  const numbers = await page.locator(".sandwich-numbers").textContent({ timeout: 10000 });
  log(`sandwich: ${numbers.replace(/\s+/g, " ").trim()}`);
  const pcts = [...numbers.matchAll(/\(([\d.]+)%\)/g)].map((m) => Number(m[1]));
  if (pcts.length !== 2 || Math.abs(pcts[1] - tableTotalPct) > 1.0) fail(`sandwich total% ${pcts[1]} should match the table's ${tableTotalPct}`);
  await shot("sandwich");

  // 5b. The flame chart: the workload's threads, their samples in time
  // order; the search (still in the URL) highlights in it too.
  const chart = page.locator(".view-flamechart .flamechart-panel");
  const chartNumber = async (name) => Number(await chart.getAttribute(`data-${name}`));
  await page.locator("button.tab", { hasText: "Flame chart" }).click();
  await waitFor("the flame chart", async () => (await chartNumber("lanes")) > 0 && (await chartNumber("boxes")) > 0, 10000);
  const laneHeads = await page.locator(".flamechart-lane-head").allTextContents();
  if (!laneHeads.some((t) => t.includes(`pid ${workload.pid}`))) fail(`a flame chart lane should be the workload's (pid ${workload.pid}): ${laneHeads.join(" | ")}`);
  // Its tooltip says which agent buckets a box lies in (samples are kept per
  // bucket), not a span of milliseconds inside one.
  {
    const lb = await page.locator(".flamechart-lanes canvas").first().boundingBox();
    let chartTip = "";
    for (let f = 0.02; f < 1 && !chartTip.includes("kept per"); f += 0.04) {
      await page.mouse.move(lb.x + lb.width * f, lb.y + 9);
      const tip = page.locator(".view-flamechart .flamechart-panel .tooltip");
      chartTip = (await tip.isVisible()) ? await tip.innerText() : "";
    }
    if (!/samples are kept per 1(\.0+)? s/.test(chartTip)) fail(`the flame chart's tooltip should name its 1 s buckets: ${chartTip}`);
    log(`flame chart tooltip: ${chartTip.replace(/\s+/g, " ")}`);
  }
  const chartMatched = await chartNumber("matched");
  if (!(chartMatched > 0)) fail("the search should highlight hot_three_quarters in the flame chart");
  const chartPerf = await page.evaluate(() => window.__warpscope.perf);
  metrics.flame_chart = { lanes: await chartNumber("lanes"), boxes: await chartNumber("boxes"), matched: chartMatched,
    build_ms: Number(chartPerf.chartBuildMs.toFixed(1)), draw_ms: Number(chartPerf.chartDrawMs.toFixed(1)) };
  log(`flame chart: ${JSON.stringify(metrics.flame_chart)}; lanes: ${laneHeads.join(" | ")}`);
  await shot("flamechart");

  // 6. Diff and targets render (screenshots).
  await page.locator("button.tab", { hasText: "Diff" }).click();
  await page.locator(".diff-head p").waitFor({ timeout: 10000 });
  await shot("diff");
  // A diff of two label sets over one range: the "-dup" node's python3 (81
  // samples) against the synthetic hour's node as the base.
  {
    const before = page.url();
    await page.goto(`${url}/?view=diff&selector=${q('{node="e2e-synthetic-dup"}')}&base_selector=${q('{node="e2e-synthetic"}')}`);
    await waitFor("the label-set diff", async () => (await page.locator(".diff-head .target-total").innerText().catch(() => "")) !== "", 10000);
    const target = await page.locator(".diff-head .target-total").innerText();
    const base = await page.locator(".diff-head .base-total").innerText();
    if (target !== "81 samples") fail(`the diff's target should be the -dup node's 81 samples, found ${target}`);
    if (!(Number(base.replace(/[^0-9]/g, "")) > 100000)) fail(`the diff's base should be the synthetic hour's node, found ${base}`);
    if ((await page.locator(".diff-controls .base-selector").inputValue()) !== '{node="e2e-synthetic"}') fail("the base selector box should show the URL's");
    // The table of changes: train_step is 78 of the target's 81 samples and absent from the base.
    const first = await page.locator(".diff-table tbody tr").first().innerText();
    if (!/^train_step\b/.test(first) || !first.includes("+96.30 pp")) fail(`the diff table should lead with train_step at +96.30 pp: ${first}`);
    log(`label-set diff: target ${target}, base ${base}; first change: ${first.replace(/\s+/g, " ")}`);
    await shot("diff_label_sets");
    await page.goto(before);
    await page.locator(".diff-head p").waitFor({ timeout: 10000 });
  }
  // The search box also filters targets: clear it first.
  await page.locator("input.search").fill("");
  await page.locator("button.tab", { hasText: "Targets" }).click();
  await page.locator(".target-node h3", { hasText: "e2e-node" }).waitFor({ timeout: 10000 });
  {
    // The CPU column: the process's share of its node's samples (the selector names one process).
    const cpuCell = await page.locator(".target-node tr[data-pid] td").first().innerText();
    if (!/^\d+(\.\d)?%$/.test(cpuCell)) fail(`the targets' CPU column should show a share, found "${cpuCell}"`);
    log(`targets: cpu_split's CPU share ${cpuCell}`);
  }
  await shot("targets");
  if (consoleErrors.length) fail(`console errors: ${consoleErrors.join(" | ")}`);

  // 6a. The threads view (e2e_seed_hour's ThreadSeconds on node
  // e2e-synthetic-threads, numbers in seed_hour.cc): one row per thread with
  // its on-CPU (samples × 1/19 s) and off-CPU time by wait reason, busiest
  // wall time first, and its GPU wait (part of that time, a column and a line
  // under the bar); a click on a bar's part opens that thread's flame graph
  // of that type, on the GPU-wait number its gpu_wait flame graph, a click
  // elsewhere on the row the type picker's. Then the workload's threads (no
  // off-CPU data in its range) and a server that never stored off_cpu nor
  // gpu_wait: the view says to start the agent with --off-cpu, has no GPU-wait
  // column and asks for no gpu_wait.
  {
    const threadsFromMs = Number(/threads_from_ms=(\d+)/.exec(seed.output)?.[1]);
    if (!(threadsFromMs > 0)) fail(`e2e_seed_hour should print threads_from_ms: ${seed.output}`);
    const threadsNode = '{node="e2e-synthetic-threads"}';
    const threadsUrl = `${url}/?view=threads&from=${threadsFromMs}&to=${threadsFromMs + 4000}&selector=${q(threadsNode)}`;
    const panel = page.locator(".view-threads .threads-panel");
    await page.goto(threadsUrl);
    await waitFor("the threads view", async () => (await panel.getAttribute("data-rows")) === "2", 10000);
    const rows = await panel.locator("tr[data-key]").evaluateAll((trs) => trs.map((tr) => ({
      ...tr.dataset, cells: [...tr.querySelectorAll("td")].slice(2, 6).map((td) => td.innerText.trim()),
      gpuLine: tr.querySelector(".gpu-wait-line") ? [tr.querySelector(".gpu-wait-line").getBoundingClientRect().width,
        [...tr.querySelectorAll(".bar .seg")].reduce((w, seg) => w + seg.getBoundingClientRect().width, 0)] : null })));
    log(`threads view: ${JSON.stringify(rows.map(({ key, ...r }) => r))}`);
    const want = [
      { thread: "data-loader", onNs: "421052624", offNs: "3600000000", wallNs: "4021052624", gpuWaitNs: "0", reasons: "futex=3200000000,disk_io=400000000", cells: ["421 ms", "3.60 s", "4.02 s", "–"] },
      { thread: "trainer", onNs: "3157894680", offNs: "200000000", wallNs: "3357894680", gpuWaitNs: "480000000", reasons: "poll=200000000", cells: ["3.16 s", "200 ms", "3.36 s", "480 ms"] },
    ];
    want.forEach((w, i) => {
      const r = rows[i];
      if (r.thread !== w.thread || r.comm !== "trainer" || r.pid !== "4646" || r.onNs !== w.onNs || r.offNs !== w.offNs ||
          r.wallNs !== w.wallNs || r.gpuWaitNs !== w.gpuWaitNs || r.reasons !== w.reasons || r.cells.join("|") !== w.cells.join("|")) {
        fail(`threads row ${i} should be ${JSON.stringify(w)}, found ${JSON.stringify(r)}`);
      }
    });
    // The trainer's GPU wait under its bar: 480 ms of its 3.36 s wall time (14.3 %), on the bar's scale (its
    // parts' widths); none under the loader's.
    const [lineW, barW] = rows[1].gpuLine ?? [0, 0];
    if (rows[0].gpuLine || !(barW > 0) || Math.abs(lineW / barW - 480_000_000 / 3_357_894_680) > 0.01) {
      fail(`the GPU-wait line should be 14.3% of the trainer's bar and absent under the loader's: ${JSON.stringify(rows.map((r) => r.gpuLine))}`);
    }
    if ((await panel.getAttribute("data-off-cpu")) !== "shown") fail("the threads view should show off-CPU time");
    if ((await panel.getAttribute("data-gpu-wait")) !== "shown") fail("the threads view should show GPU wait");
    const head = await page.locator(".view-threads .threads-head").innerText();
    if (!/2 threads/.test(head) || !/on CPU 3\.58 s, off CPU 3\.80 s/.test(head) || !/Of that time, GPU wait 480 ms/.test(head)) {
      fail(`the threads view's summary: ${head}`);
    }
    const gpuTip = await panel.locator('tr[data-thread="trainer"] td.gpu-wait').getAttribute("title");
    if (!/GPU wait 480 ms \(14% of the thread's wall time\)/.test(gpuTip) || !/part of the on- or off-CPU time/.test(gpuTip)) {
      fail(`the GPU-wait number's tooltip: ${gpuTip}`);
    }
    if (await page.locator(".view-threads .threads-note").isVisible()) fail("with off-CPU data the --off-cpu note should be hidden");
    // The type picker names every stored type plainly.
    const options = await page.locator("header select option").evaluateAll((os) => os.map((o) => `${o.value}=${o.textContent}`));
    for (const o of ["cpu=CPU time", "off_cpu=off-CPU time", "gpu_time=GPU time", "gpu_wait=GPU wait"]) {
      if (!options.includes(o)) fail(`the type picker should offer ${o}: ${options.join(", ")}`);
    }
    await shot("threads");
    // The data loader's futex part of the bar: its off-CPU flame graph of those waits.
    const loaderSel = '{node="e2e-synthetic-threads", pid="4646", comm="trainer", thread="data-loader"}';
    await panel.locator('tr[data-thread="data-loader"] .seg[data-reason="futex"]').click();
    await waitFor("the loader's futex flame graph", async () => (await flameTotal()) === 3_200_000_000, 10000);
    const futexUrl = new URL(page.url()).searchParams;
    if (futexUrl.get("type") !== "off_cpu" || futexUrl.get("selector") !== loaderSel.replace("}", ', wait_reason="futex"}')) {
      fail(`the futex part should open the loader's off_cpu graph of futex waits: ${page.url()}`);
    }
    if (await page.locator("header select").inputValue() !== "off_cpu") fail("the type picker should show off_cpu");
    await shot("threads_flame_futex");
    // The off-CPU number: all the loader's waits.
    await page.goBack();
    await waitFor("the threads view again", async () => (await panel.getAttribute("data-rows")) === "2", 10000);
    await panel.locator('tr[data-thread="data-loader"] td[data-type="off_cpu"]').click();
    await waitFor("the loader's off-CPU flame graph", async () => (await flameTotal()) === 3_600_000_000, 10000);
    if (new URL(page.url()).searchParams.get("selector") !== loaderSel) fail(`the loader's selector: ${page.url()}`);
    // Elsewhere on the trainer's row: the picker's type (cpu), 60 samples.
    await page.goto(threadsUrl);
    await waitFor("the threads view again", async () => (await panel.getAttribute("data-rows")) === "2", 10000);
    await panel.locator('tr[data-thread="trainer"] td.thread-name').click();
    await waitFor("the trainer's CPU flame graph", async () => (await flameTotal()) === 60, 10000);
    const trainerUrl = new URL(page.url()).searchParams;
    if (trainerUrl.get("type") !== null || trainerUrl.get("selector") !== loaderSel.replace("data-loader", "trainer")) {
      fail(`the trainer's row should open its cpu flame graph: ${page.url()}`);
    }
    // Its GPU-wait number: its gpu_wait flame graph, 4 × 120 ms, the kernel under cudaStreamSynchronize.
    await page.goBack();
    await waitFor("the threads view again", async () => (await panel.getAttribute("data-rows")) === "2", 10000);
    await panel.locator('tr[data-thread="trainer"] td.gpu-wait').click();
    await waitFor("the trainer's GPU-wait flame graph", async () => (await flameTotal()) === 480_000_000, 10000);
    const gpuWaitUrl = new URL(page.url()).searchParams;
    if (gpuWaitUrl.get("type") !== "gpu_wait" || gpuWaitUrl.get("selector") !== trainerUrl.get("selector")) {
      fail(`the trainer's GPU-wait number should open its gpu_wait flame graph: ${page.url()}`);
    }
    if (await page.locator("header select").inputValue() !== "gpu_wait") fail("the type picker should show gpu_wait");
    await shot("threads_flame_gpu_wait");
    log(`threads view: futex -> ${futexUrl.get("selector")}; trainer -> ${trainerUrl.get("selector")}; its GPU wait -> type=gpu_wait, total 480 ms`);
    // The workload's threads: CPU samples only (the agent runs without --off-cpu).
    await page.goto(`${url}/?view=threads&from=${from}&to=${to}&selector=${q(pidSelector)}`);
    await waitFor("the workload's threads", async () => Number(await panel.getAttribute("data-rows")) > 0 && (await panel.getAttribute("data-off-cpu")) === "none", 10000);
    const none = await page.locator(".view-threads .threads-note").innerText();
    if (!/No off-CPU time in this range for this selector/.test(none) || !/--off-cpu/.test(none)) fail(`the note without off-CPU time: ${none}`);
    // A server that never stored off_cpu nor gpu_wait (its type list without them): say how to get off-CPU
    // time; no GPU-wait column, and no gpu_wait asked for.
    const gpuWaitAsks = [];
    const onRequest = (r) => /\/api\/v1\/series\?.*type=gpu_wait/.test(r.url()) && gpuWaitAsks.push(r.url());
    page.on("request", onRequest);
    await page.route(/\/api\/v1\/types$/, (route) => route.fulfill({ status: 200, contentType: "application/json",
      body: JSON.stringify({ types: [{ name: "cpu", unit: "samples", period_nanos: 10101010 }] }) }));
    await page.reload();
    await waitFor("the view without off_cpu", async () => (await panel.getAttribute("data-off-cpu")) === "absent", 10000);
    const absent = await page.locator(".view-threads .threads-note").innerText();
    if (!/No off-CPU data/.test(absent) || !/start the agent with --off-cpu/.test(absent)) fail(`the note without off_cpu: ${absent}`);
    page.off("request", onRequest);
    if ((await panel.getAttribute("data-gpu-wait")) !== "absent" || (await panel.locator("td.gpu-wait").count()) > 0 || gpuWaitAsks.length) {
      fail(`without gpu_wait stored: no GPU-wait column and no gpu_wait request (${gpuWaitAsks.join(", ")})`);
    }
    log(`threads view of the workload: ${await panel.getAttribute("data-rows")} threads; ${absent.replace(/\s+/g, " ")}`);
    await shot("threads_no_off_cpu");
    await page.unroute(/\/api\/v1\/types$/);
    if (consoleErrors.length) fail(`console errors in the threads view: ${consoleErrors.join(" | ")}`);
  }

  // 6e. Insights (e2e_seed_hour's InsightSeconds on node
  // e2e-synthetic-insights, numbers in seed_hour.cc): a URL that names no
  // view lands on them; one card per insight in the API's order with its
  // numbers, evidence and fix; the starved GPU's flame-graph button opens the
  // CPU flame graph of exactly its range and processes with tokenize (10 of
  // 18 samples a second) highlighted; its GPU-charts button the GPU view with
  // the insight's band, whose tooltip names it and whose click opens its
  // card. A URL naming the flame graph stays there; a range without insights
  // says what was checked.
  {
    const insT0 = Date.now();
    const insNode = '{node="e2e-synthetic-insights"}';
    const panel = page.locator(".view-insights .insights-panel");
    // One hour, absolute: the page and the API's answer below see the same steps.
    const iTo = Date.now();
    const iRange = `from=${iTo - 3600e3}&to=${iTo}&selector=${q(insNode)}`;
    await page.goto(`${url}/?${iRange}`);
    await waitFor("the insights landing page", async () => (await panel.getAttribute("data-state")) === "shown", 15000);
    if (new URL(page.url()).searchParams.get("view") !== "insights") fail(`the landing page should be the insights: ${page.url()}`);
    const answer = await api(url, `/api/v1/insights?${iRange}`);
    const cards = await panel.locator(".insight-card").evaluateAll((cs) => cs.map((c) => ({
      ...c.dataset, title: c.querySelector("h3").innerText, saving: c.querySelector(".ic-saving").innerText,
      shareText: c.querySelector(".ic-share").innerText, confidence: c.querySelector(".ic-confidence").innerText,
      summary: c.querySelector(".ic-summary").innerText, fix: c.querySelector(".ic-fix-text").innerText,
      functions: [...c.querySelectorAll(".ic-functions td.fn")].map((td) => td.innerText),
      actions: [...c.querySelectorAll(".ic-actions button")].map((b) => b.dataset.action) })));
    log(`insights: ${JSON.stringify(cards.map(({ summary, fix, ...c }) => c))}`);
    if (cards.map((c) => c.kind).join() !== answer.insights.map((x) => x.kind).join()) {
      fail(`the cards should be the API's insights in its order: ${cards.map((c) => c.kind)} vs ${answer.insights.map((x) => x.kind)}`);
    }
    const card = (kind) => cards.find((c) => c.kind === kind) ?? fail(`no ${kind} card`);
    const sync = card("sync_heavy");
    const starved = card("gpu_starved_by_cpu");
    const want = [
      [sync, { title: "Blocked in CUDA synchronisation", saving: "360 GPU-s", shareText: "10%", severity: "medium", confidence: "high",
        functions: "read_loss,log_metrics,void gemm_kernel<float>(float*, int)", actions: "flame,flamechart,gpu,kernels" }],
      [starved, { title: "GPU starved by the CPU", saving: "162 GPU-s", shareText: "4.5%", severity: "low", confidence: "high",
        functions: "tokenize,decode_jpeg,collate", actions: "flame,gpu" }],
    ];
    for (const [c, w] of want) {
      const got = { title: c.title, saving: c.saving, shareText: c.shareText, severity: c.severity, confidence: c.confidence.toLowerCase(),
        functions: c.functions.join(), actions: c.actions.join() };
      if (JSON.stringify(got) !== JSON.stringify(w)) fail(`${c.kind} card: expected ${JSON.stringify(w)}, found ${JSON.stringify(got)}`);
    }
    if (cards.indexOf(sync) > cards.indexOf(starved)) fail("the card that could save more comes first");
    if (!/kept GPU 0 at 10% while its thread 'python3' was 95% busy/.test(starved.summary) || !/DataLoader workers/.test(starved.fix)) {
      fail(`the starved card's summary and fix: ${starved.summary} / ${starved.fix}`);
    }
    if (!(Number(await page.locator(".timeline").getAttribute("data-insight-marks")) >= 2)) fail("the timeline should mark both insights' ranges");
    await shot("insights");
    // The starved GPU's flame graph: the API's link exactly, its top function searched for.
    const link = answer.insights.find((x) => x.kind === "gpu_starved_by_cpu").links.find((l) => l.view === "flame");
    await panel.locator('.insight-card[data-kind="gpu_starved_by_cpu"] button[data-action="flame"]').click();
    await waitFor("the starved process's flame graph", async () => new URL(page.url()).searchParams.get("view") === "flame" && (await flameTotal()) > 0, 10000);
    const flameUrl = new URL(page.url()).searchParams;
    if (flameUrl.get("from") !== String(link.from) || flameUrl.get("to") !== String(link.to) || flameUrl.get("selector") !== link.selector ||
        flameUrl.get("search") !== "tokenize" || flameUrl.get("type") !== null) {
      fail(`the flame-graph button should open the link's range and selector (${JSON.stringify(link)}) searching tokenize: ${page.url()}`);
    }
    // 36 steps of 5 s, 18 samples a second; tokenize 10 of them.
    if ((await flameTotal()) !== 3240) fail(`the starved ranges hold 3240 samples of the process, found ${await flameTotal()}`);
    const tokenize = await waitFor("tokenize's share", async () => /% of total/.test(await page.locator(".search-info").innerText()) && page.locator(".search-info").innerText(), 5000);
    if (!/55\.56% of total/.test(tokenize)) fail(`tokenize should be 10 of the 18 samples a second: ${tokenize}`);
    log(`insight's flame graph: ${flameUrl.get("selector")} ${link.to - link.from} ms, tokenize ${tokenize}`);
    await shot("insights_flame");
    // Its GPU charts: the band over the starved range on every chart, named on hover; a click opens its card.
    await page.goBack();
    await waitFor("the insights again", async () => (await panel.getAttribute("data-state")) === "shown" && (await panel.isVisible()), 10000);
    await panel.locator('.insight-card[data-kind="gpu_starved_by_cpu"] button[data-action="gpu"]').click();
    const gpuPanel = page.locator(".view-gpu .gpu-panel");
    // The node's other insight (sync_heavy, its idle steps) may overlap the
    // window too; the starved GPU's band is on every chart.
    await waitFor("the GPU charts with the insight's band", async () => Number(await gpuPanel.getAttribute("data-charts")) > 0 &&
      Number(await gpuPanel.getAttribute("data-insight-marks")) >= 1, 10000);
    const gpuUrl = new URL(page.url()).searchParams;
    if (gpuUrl.get("gpunode") !== "e2e-synthetic-insights" || gpuUrl.get("gpu") !== "0" || gpuUrl.get("gpupid") !== "4747" ||
        !(Number(gpuUrl.get("from")) < link.from && Number(gpuUrl.get("to")) > link.to)) {
      fail(`the GPU-charts button should open the process's GPU around the range: ${page.url()}`);
    }
    const charts = Number(await gpuPanel.getAttribute("data-charts"));
    const bands = page.locator('.gpu-chart .insight-mark[data-key^="gpu_starved_by_cpu|"]');
    if ((await bands.count()) !== charts) fail(`every GPU chart should mark the insight: ${await bands.count()} bands on ${charts} charts`);
    const band = await bands.first().boundingBox();
    const chartBox = await page.locator(".gpu-chart .u-over").first().boundingBox();
    const bandShare = band.width / chartBox.width;
    const wantShare = (link.to - link.from) / (Number(gpuUrl.get("to")) - Number(gpuUrl.get("from")));
    if (Math.abs(bandShare - wantShare) > 0.02) fail(`the band should cover the insight's range: ${bandShare.toFixed(3)} of the chart, want ${wantShare.toFixed(3)}`);
    await page.mouse.move(band.x + band.width / 2, band.y + band.height / 2);
    const tip = await waitFor("the band's tooltip", async () => (await page.locator(".insight-tip").isVisible()) && page.locator(".insight-tip").innerText(), 5000);
    if (!/GPU starved by the CPU/.test(tip) || !/python3 \(pid 4747\) · GPU 0/.test(tip)) fail(`the band's tooltip should name the insight: ${tip}`);
    await shot("insights_gpu_marks");
    await page.mouse.click(band.x + band.width / 2, band.y + band.height / 2);
    await waitFor("the insight's card", async () => new URL(page.url()).searchParams.get("view") === "insights" &&
      (await page.locator('.insight-card.selected[data-kind="gpu_starved_by_cpu"]').count()) === 1, 10000);
    log(`insight band: ${(bandShare * 100).toFixed(1)}% of ${charts} GPU charts; tooltip "${tip.split("\n")[0]}"; click -> ${new URL(page.url()).searchParams.get("insight")}`);
    // A link naming the flame graph stays there, insights or not.
    await page.goto(`${url}/?view=flame&selector=${q(insNode)}`);
    await waitFor("the flame graph of the insights' node", async () => (await flameTotal()) > 0, 10000);
    if (new URL(page.url()).searchParams.get("view") !== "flame" || !(await panel.isHidden())) fail(`?view=flame should stay on the flame graph: ${page.url()}`);
    // No insights: what was checked, and the thresholds.
    await page.goto(`${url}/?view=insights&selector=${q('{node="e2e-synthetic-dup"}')}`);
    await waitFor("the empty insights view", async () => (await panel.getAttribute("data-state")) === "empty", 10000);
    const empty = await panel.innerText();
    if (!/No insights in this range/.test(empty) || !/Checked 1h in steps of 5s for a GPU below 50%/.test(empty) ||
        !/starved_gpu_percent/.test(empty) || !/sync_share/.test(empty)) {
      fail(`the empty insights view should say what was checked and the thresholds: ${empty.slice(0, 400)}`);
    }
    await shot("insights_empty");
    if (consoleErrors.length) fail(`console errors in the insights view: ${consoleErrors.join(" | ")}`);
    log(`insights view steps: ${((Date.now() - insT0) / 1000).toFixed(1)} s, screenshots included`);
  }

  // 6b. GPU time (e2e_seed_hour's four seconds on node e2e-synthetic-gpu,
  // numbers in seed_hour.cc): the gpu_time flame graph ends in the CUDA
  // kernel, the kernel table has the seeded numbers, the per-stream
  // timeline a row per stream with the thinned second shaded, and the
  // export link the same range and selector.
  {
    const gpuFromMs = Number(/gpu_from_ms=(\d+)/.exec(seed.output)?.[1]);
    if (!(gpuFromMs > 0)) fail(`e2e_seed_hour should print gpu_from_ms: ${seed.output}`);
    const gFrom = gpuFromMs - 1000;
    const gTo = gpuFromMs + 5000;
    const gpuNode = '{node="e2e-synthetic-gpu"}';
    await page.goto(`${url}/?type=gpu_time&from=${gFrom}&to=${gTo}&selector=${q(gpuNode)}`);
    await waitFor("the gpu_time flame graph", async () => (await flameTotal()) > 0, 10000);
    const gpuTotal = await flameTotal();
    // trainer (220 + 20 ms) and loader (150 ms) a second, four seconds, in ns
    if (gpuTotal !== 1_560_000_000) fail(`gpu_time flame graph total should be 1.56 s in ns, found ${gpuTotal}`);
    if ((await page.locator("header select").inputValue()) !== "gpu_time") fail("the type picker should show gpu_time");
    // The leaf under train_step;forward;at::native::gemm;cudaLaunchKernel (depth 5),
    // at [680, 1560) of 1560 ms ("load" and "add" sort before it).
    const gpuCanvas = page.locator(".view-flame .flame-canvas");
    const gc = await gpuCanvas.boundingBox();
    await page.mouse.move(gc.x + gc.width * 0.75, gc.y + 5 * 18 + 9);
    const leafTip = await waitFor("the kernel leaf's tooltip", async () => {
      const t = await page.locator(".view-flame .tooltip").innerText().catch(() => "");
      return t.includes("gemm_kernel") ? t : null;
    }, 5000);
    log(`gpu_time leaf: ${leafTip.replace(/\s+/g, " ")}`);
    if (!/CUDA kernel/.test(leafTip) || !/880 ms/.test(leafTip)) fail(`the leaf should be the CUDA kernel with 880 ms: ${leafTip}`);
    await shot("gpu_flame");
    // Line granularity: one box per function and line (the seeded frames
    // carry lines), the total unchanged.
    {
      const version = await flameVersion();
      await page.locator("button.lines-button").click();
      await waitFor("the graph by line", async () => page.url().includes("lines=1") && (await flameVersion()) > version, 10000);
      if ((await flameTotal()) !== gpuTotal) fail(`lines keep the total: ${await flameTotal()}`);
      await page.mouse.move(gc.x + gc.width * 0.75 - 3, gc.y + 2 * 18 + 9);
      await page.mouse.move(gc.x + gc.width * 0.75, gc.y + 2 * 18 + 9);
      const lineTip = await waitFor("the tooltip of a line's box", async () => {
        const t = await page.locator(".view-flame .tooltip").innerText().catch(() => "");
        return t.includes("forward:20") ? t : null;
      }, 5000);
      if (!/model\.py/.test(lineTip)) fail(`the line's box should name its file: ${lineTip}`);
      log(`by line: ${lineTip.replace(/\s+/g, " ").slice(0, 80)}`);
      await shot("gpu_flame_lines");
      await page.locator("button.lines-button").click();
      await waitFor("the graph by function again", async () => !page.url().includes("lines=1"), 10000);
    }

    // A sub-second range (a drag across a few kernels): gpu_time is kept per
    // second, so the graph covers the whole second around it and says so.
    await page.goto(`${url}/?type=gpu_time&from=${gpuFromMs + 1200}&to=${gpuFromMs + 1700}&selector=${q(gpuNode)}`);
    await waitFor("the sub-second gpu_time flame graph", async () => (await flameTotal()) > 0, 10000);
    const secondTotal = await flameTotal();
    if (secondTotal !== 390_000_000) fail(`a sub-second gpu_time range should show its whole second, 390 ms in ns; found ${secondTotal}`);
    const secondsNote = await page.locator(".view-flame .folded").innerText();
    if (!/counted per second/.test(secondsNote)) fail(`the flame view should say the range was widened to whole seconds: ${secondsNote}`);
    log(`sub-second gpu_time range: ${secondTotal} ns; note: ${secondsNote}`);

    // The kernel table of the trainer: exact counts and totals.
    const trainer = '{node="e2e-synthetic-gpu", pid="4343"}';
    const panel = page.locator(".kernels-panel");
    await page.goto(`${url}/?view=kernels&from=${gFrom}&to=${gTo}&selector=${q(trainer)}`);
    await waitFor("the kernel table", async () => Number(await panel.getAttribute("data-kernels")) > 0, 10000);
    const kernelRow = async (name) => {
      const r = page.locator("table.kernels tbody tr").filter({ has: page.locator("td.fn", { hasText: name }) }).first();
      const a = await r.evaluate((e) => ({ ...e.dataset }));
      return { ...a, cells: (await r.locator("td").allTextContents()).map((t) => t.trim()) };
    };
    const gemm = await kernelRow("void gemm_kernel<float>(float*, int)");
    const add = await kernelRow("elementwise_add_kernel");
    log(`kernel table: ${gemm.cells.slice(0, 10).join(" | ")}`);
    const near = (v, want) => Math.abs(Number(v) - want) <= want * 0.05;
    if (gemm.launches !== "400" || gemm.totalNs !== "880000000" || gemm.meanNs !== "2200000") fail(`gemm_kernel: 400 launches, 880 ms, mean 2.2 ms; found ${JSON.stringify(gemm)}`);
    if (!near(gemm.p50Ns, 2e6) || !near(gemm.p95Ns, 4e6)) fail(`gemm_kernel: p50 2 ms, p95 4 ms; found ${gemm.p50Ns}, ${gemm.p95Ns}`);
    if (!gemm.cells.includes("128×64×1") || !gemm.cells.some((c) => c.startsWith("256×1×1"))) fail(`gemm_kernel grid 128×64×1, block 256×1×1: ${gemm.cells.join(" | ")}`);
    if (add.launches !== "800" || add.totalNs !== "80000000") fail(`elementwise_add_kernel: 800 launches, 80 ms; found ${JSON.stringify(add)}`);
    if ((await page.locator("table.kernels tbody tr").first().getAttribute("data-name")) !== "void gemm_kernel<float>(float*, int)") fail("the table should start with the largest total");
    // The trainer's library stood aside for another CUPTI client for a while:
    // the view says its GPU time was paused then, naming the process.
    if ((await panel.getAttribute("data-paused")) !== "1") fail(`one paused process expected, found ${await panel.getAttribute("data-paused")}`);
    const pausedText = await page.locator(".kernels-summary .paused").innerText();
    if (!/paused/.test(pausedText) || !/trainer \(pid 4343\)/.test(pausedText)) fail(`the paused note should name the trainer: ${pausedText}`);

    // Inside gemm_kernel (gpu_pc): its seeded instructions under their lines,
    // the hottest marked, stall reasons in plain words with CUPTI's names.
    const source = page.locator(".kernel-source");
    await page.locator("table.kernels tbody tr").filter({ has: page.locator("td.fn", { hasText: "void gemm_kernel<float>(float*, int)" }) })
      .first().locator("button[data-source]").click();
    await waitFor("the kernel's source/SASS view", async () => Number(await source.getAttribute("data-instructions")) > 0, 10000);
    const sv = await source.evaluate((e) => ({ ...e.dataset }));
    log(`kernel source: ${JSON.stringify(sv)}`);
    if (sv.instructions !== "4" || sv.lines !== "4") fail(`gemm_kernel: 4 instructions on 4 lines expected, found ${JSON.stringify(sv)}`);
    const hottest = await source.locator('tr.sass[data-hot="1"]').getAttribute("data-offset");
    if (hottest !== String(0x80)) fail(`the hottest instruction should be the load at 0x0080, found ${hottest}`);
    const legendFirst = source.locator(".stall-legend li").first();
    if (!/long scoreboard/.test(await legendFirst.innerText()) || (await legendFirst.getAttribute("title")) !== "smsp__pcsamp_warps_issue_stalled_long_scoreboard") {
      fail(`the top stall reason should be the long scoreboard, with CUPTI's name on hover: ${await legendFirst.innerText()}`);
    }
    if (!/LDG\.E\.128/.test(await source.innerText())) fail("the SASS text should be shown");
    if ((await source.locator(".stall-seg").count()) !== 5) fail("one bar segment per (instruction, stall reason): 5");
    await source.scrollIntoViewIfNeeded();
    await shot("gpu_kernel_source");

    // The node's per-stream timeline: 4 streams, the loader's thinned second shaded.
    const timeline = page.locator(".stream-timeline");
    await page.goto(`${url}/?view=kernels&from=${gFrom}&to=${gTo}&selector=${q(gpuNode)}`);
    await waitFor("the stream timeline", async () => (await panel.getAttribute("data-trace")) === "shown" && Number(await timeline.getAttribute("data-rows")) > 0, 10000);
    const tl = await timeline.evaluate((e) => ({ ...e.dataset }));
    const summary = await page.locator(".kernels-summary").innerText();
    log(`stream timeline: ${JSON.stringify(tl)}; ${summary.replace(/\s+/g, " ").slice(0, 160)}`);
    if (tl.rows !== "4") fail(`4 streams expected (trainer 7, 13, 14; loader 20), found ${tl.rows}`);
    if (tl.bars !== "1391") fail(`1391 activities in the range expected in the timeline, found ${tl.bars}`);
    if (!(Number(tl.incomplete) >= 1)) fail("the loader's thinned second should be shaded");
    if (!/Based on 1,391 of 1,416 kernels/.test(summary)) fail(`the summary should say the trace is thinned: ${summary}`);
    // Under it, on the same axis, the CPU lanes of the two processes' threads (seeded: trainer, loader).
    const cpuLanes = page.locator(".kernels-cpu");
    await waitFor("the CPU lanes under the stream timeline", async () => (await cpuLanes.getAttribute("data-lanes")) === "2", 10000);
    const tlBox = await page.locator(".stream-canvas").boundingBox();
    const cpuBox = await page.locator(".kernels-cpu canvas.flamechart-canvas").first().boundingBox();
    if (Math.abs(cpuBox.x - (tlBox.x + 50)) > 1 || Math.abs(cpuBox.x + cpuBox.width - (tlBox.x + tlBox.width)) > 1) {
      fail(`the CPU lanes should span the stream timeline's plot: ${JSON.stringify([tlBox, cpuBox])}`);
    }
    const href = await page.locator("a.export-trace").getAttribute("href");
    const exportUrl = new URL(href, url);
    if (exportUrl.pathname !== "/api/v1/gpu/trace.json" || exportUrl.searchParams.get("from") !== String(gFrom) ||
        exportUrl.searchParams.get("to") !== String(gTo) || exportUrl.searchParams.get("selector") !== gpuNode) {
      fail(`export link should be /api/v1/gpu/trace.json with the view's range and selector: ${href}`);
    }
    const exported = await api(url, exportUrl.pathname + exportUrl.search);
    const events = Array.isArray(exported) ? exported : exported.traceEvents;
    if (!Array.isArray(events) || events.length < 1391) fail(`the exported trace should hold the activities (${events?.length})`);
    // Its CPU side: the two processes' seeded CPU samples, a track per thread, train_step once a second.
    const cpuTracks = events.filter((e) => e.ph === "M" && e.name === "thread_name" && /^CPU samples · /.test(e.args.name)).map((e) => e.args.name).sort();
    if (cpuTracks.join() !== "CPU samples · loader,CPU samples · trainer") fail(`the export's CPU tracks: ${cpuTracks.join(", ")}`);
    const steps = events.filter((e) => e.ph === "X" && e.cat === "cpu_sample" && e.name === "train_step");
    if (steps.length !== 4) fail(`train_step should be one CPU event per seeded second, found ${steps.length}`);
    metrics.gpu_kernels = { rows: Number(tl.rows), bars: Number(tl.bars), incomplete: Number(tl.incomplete),
      draw_ms: Number((await page.evaluate(() => window.__warpscope.perf.kernelsDrawMs)).toFixed(1)) };
    await shot("gpu_kernels");
    // A drag across the stream timeline zooms into that part of the range.
    const sc = await page.locator(".stream-canvas").boundingBox();
    const tv = Number(await timeline.getAttribute("data-version"));
    await page.mouse.move(sc.x + 50 + (sc.width - 50) * 0.3, sc.y + 40);
    await page.mouse.down();
    await page.mouse.move(sc.x + 50 + (sc.width - 50) * 0.5, sc.y + 40, { steps: 6 });
    await page.mouse.up();
    await waitFor("the zoomed stream timeline", async () => Number(await timeline.getAttribute("data-version")) > tv && (await panel.getAttribute("data-trace")) === "shown", 10000);
    const zoomed = new URL(page.url()).searchParams;
    const zoomSpan = Number(zoomed.get("to")) - Number(zoomed.get("from"));
    if (!(zoomSpan > 800 && zoomSpan < 1400)) fail(`dragging over a fifth of 6 s should select about 1.2 s, found ${zoomSpan} ms`);
    // Over 10 s: the hint instead of the timeline.
    await page.goto(`${url}/?view=kernels&from=now-5m&selector=${q(gpuNode)}`);
    await waitFor("the kernels view of 5 minutes", async () => (await panel.getAttribute("data-trace")) === "too-long", 10000);
    const hint = await page.locator(".trace-hint").innerText();
    if (!/select ≤ 10 s/i.test(hint)) fail(`a range over 10 s should ask for ≤ 10 s: ${hint}`);
    if (consoleErrors.length) fail(`console errors in the GPU views: ${consoleErrors.join(" | ")}`);
  }

  // 6d. The combined GPU timeline on the fake CUPTI's kernels: the stream,
  // the launching thread's calls under it, a line from each call to its
  // kernel, the GPU's idle time shaded; a call's tooltip; and the Chrome
  // trace export with the same calls as CPU events and a flow per kernel.
  {
    await waitFor("cuda_launch_sites", () => cudaApp.exited && (cudaApp.exited.code === 0 || fail(`cuda_launch_sites failed: ${cudaApp.output}`)), 30000);
    const cudaSel = `{pid="${cudaApp.pid}"}`;
    const wide = `from=${cudaFromMs}&to=${Math.min(cudaFromMs + 10000, cudaApp.exited.toMs + 1000)}&selector=${q(cudaSel)}`;
    const trace = await waitFor("the fake-CUPTI kernels with their launch calls", async () => {
      const t = await api(url, `/api/v1/gpu/trace?${wide}`);
      const launched = t.streams.flatMap((x) => x.activities).filter((a) => a[6] > 0);
      return launched.length >= 400 ? t : null;
    }, 20000);
    const kernels = trace.streams.flatMap((x) => x.activities);
    const launched = kernels.filter((a) => a[6] > 0);
    if (launched.some((a) => a[6] > a[0])) fail("every launch call should start before its kernel");
    if (trace.launch_apis[launched[0][9]] !== "cudaLaunchKernel") fail(`the fake's launches are cudaLaunchKernel: ${launched[0][9]}`);
    // The range of the launches, with a margin on both sides for the idle shading.
    const first = Math.min(...launched.map((a) => a[6]));
    const last = Math.max(...kernels.map((a) => a[0] + a[1]));
    const lFrom = Math.floor(first / 1e6) - 20;
    const lTo = Math.ceil(last / 1e6) + 20;
    const inRange = kernels.filter((a) => a[0] >= lFrom * 1e6 && a[0] < lTo * 1e6);
    const linked = inRange.filter((a) => a[6] > 0).length;
    const timeline = page.locator(".stream-timeline");
    await page.goto(`${url}/?view=kernels&from=${lFrom}&to=${lTo}&selector=${q(cudaSel)}`);
    await waitFor("the combined timeline", async () => Number(await timeline.getAttribute("data-threads")) > 0, 10000);
    const tl = await timeline.evaluate((e) => ({ ...e.dataset }));
    log(`combined GPU timeline: ${JSON.stringify(tl)} (${linked} kernels with their launch in ${lTo - lFrom} ms)`);
    if (tl.rows !== "1" || tl.threads !== "1") fail(`one stream and one launching thread expected: ${JSON.stringify(tl)}`);
    if (Number(tl.links) !== linked) fail(`a line per launched kernel in view expected (${linked}), found ${tl.links}`);
    if (Number(tl.calls) !== linked) fail(`one call per kernel (cudaLaunchKernel) expected (${linked}), found ${tl.calls}`);
    if (!(Number(tl.idle) >= 2)) fail(`the GPU's idle time before and after the launches should be shaded: ${tl.idle}`);
    // The first call's tooltip: hover the thread row at its start.
    const sc = await page.locator(".stream-canvas").boundingBox();
    const firstCall = launched.reduce((m, a) => (a[6] < m[6] ? a : m));
    const x = sc.x + 50 + ((firstCall[6] + firstCall[7] / 2 - lFrom * 1e6) / ((lTo - lFrom) * 1e6)) * (sc.width - 50);
    const y = sc.y + 18 + 36 + 18 + 15 + 5; // axis, one stream row, the CPU heading, the row's title, the call bar
    await page.mouse.move(x, y);
    const callTip = await waitFor("the launch call's tooltip", async () => {
      const t = await page.locator(".stream-timeline .tooltip").innerText().catch(() => "");
      return /cudaLaunchKernel/.test(t) ? t : null;
    }, 5000);
    if (!/CPU · cuda_launch_sit/.test(callTip) || !/kernels\s*1, the first started/.test(callTip)) fail(`the call's tooltip: ${callTip}`);
    metrics.gpu_combined = { links: Number(tl.links), calls: Number(tl.calls), idle: Number(tl.idle),
      draw_ms: Number((await page.evaluate(() => window.__warpscope.perf.kernelsDrawMs)).toFixed(1)) };
    await shot("gpu_timeline_launches");
    // The Chrome trace of the same range: the calls on the thread, a flow from each to its kernel.
    const exported = await api(url, `/api/v1/gpu/trace.json?from=${lFrom}&to=${lTo}&selector=${q(cudaSel)}`);
    const ev = exported.traceEvents;
    const calls = ev.filter((e) => e.ph === "X" && e.cat === "cuda_api");
    const starts = ev.filter((e) => e.ph === "s");
    const ends = new Map(ev.filter((e) => e.ph === "f").map((e) => [e.id, e]));
    const gpuEvents = ev.filter((e) => e.ph === "X" && e.cat === "kernel");
    if (calls.length !== linked || starts.length !== linked || ends.size !== linked) {
      fail(`the Chrome trace should hold ${linked} launch calls and flows: ${calls.length} calls, ${starts.length}/${ends.size} flow ends`);
    }
    const threadNames = ev.filter((e) => e.ph === "M" && e.name === "thread_name").map((e) => e.args.name);
    if (!threadNames.some((n) => /^thread \d+ \(CPU\)$/.test(n))) fail(`the launching thread should be named: ${threadNames}`);
    for (const s of starts) {
      const f = ends.get(s.id);
      if (!f || f.bp !== "e" || !(f.tid >= 1e9) || s.tid !== calls[0].tid || !(s.ts <= f.ts)) {
        fail(`flow ${s.id}: from the call's thread to a GPU lane, launch first: ${JSON.stringify([s, f])}`);
      }
      if (!gpuEvents.some((k) => k.tid === f.tid && k.ts === f.ts)) fail(`flow ${s.id} should end at a kernel's start`);
    }
    if (consoleErrors.length) fail(`console errors in the combined timeline: ${consoleErrors.join(" | ")}`);
  }

  // Drags across the timeline from one share of its width to another and
  // waits for the flame graph of the selection.
  const dragTimeline = async (fromShare, toShare) => {
    const b = await page.locator(".timeline .u-over").boundingBox();
    const v = await flameVersion();
    await page.mouse.move(b.x + b.width * fromShare, b.y + b.height / 2);
    await page.mouse.down();
    await page.mouse.move(b.x + b.width * toShare, b.y + b.height / 2, { steps: 8 });
    await page.mouse.up();
    await waitFor("the flame graph of the selection", async () => (await flameVersion()) > v, 10000);
  };

  // 6c. The GPUs view: e2e_seed_hour's five minutes of NVML metrics of GPU 0
  // on the GPU node, one chart per metric group with points.
  {
    await page.goto(`${url}/?view=gpu&gpunode=e2e-synthetic-gpu&from=now-5m&to=now`);
    const charts = await waitFor("the GPU charts", async () => {
      const n = await page.locator(".gpu-chart[data-points]").count();
      const points = n ? Number(await page.locator(".gpu-chart").first().getAttribute("data-points")) : 0;
      return n > 0 && points > 0 ? n : null;
    }, 10000);
    log(`GPUs view: ${charts} charts`);
    await shot("gpus");
    // Eight GPUs (e2e_seed_hour's eight-GPU node): a tile each, the slow
    // GPU 5 readable at a glance; a tile picks its GPU.
    await page.goto(`${url}/?view=gpu&gpunode=e2e-synthetic-8gpu&from=now-5m&to=now`);
    const tiles = page.locator(".gpu-multiples .gpu-tile");
    await waitFor("eight GPU tiles", async () => (await tiles.count()) === 8, 10000);
    const texts = await tiles.allInnerTexts();
    if (!/^GPU 5\b/.test(texts[5]) || !texts[5].includes("35%") || !texts[5].includes("python3 (7005)")) {
      fail(`GPU 5's tile should say 35% busy and name python3 (7005): ${texts[5]}`);
    }
    if (!texts[0].includes("90%")) fail(`GPU 0's tile should say 90% busy: ${texts[0]}`);
    const lagging = await page.locator(".gpu-tile.lagging").evaluateAll((ts) => ts.map((t) => t.dataset.gpu));
    if (lagging.join() !== "5") fail(`only GPU 5 should be marked below the others: ${lagging}`);
    await shot("gpus_eight");
    await tiles.nth(3).click();
    await waitFor("GPU 3 picked", async () => new URL(page.url()).searchParams.get("gpu") === "3" &&
      (await page.locator(".gpu-multiples").isHidden()), 10000);
  }

  // 6f. Energy & cost (e2e_seed_hour's EnergySeconds on node
  // e2e-synthetic-energy, numbers in seed_hour.cc): 300 s of its ten minutes
  // hold 90 kJ of GPU 0 (busy), 18 kJ of GPU 1 (idle) and 2,100 + 1,105.26 J
  // of CPU (19 and 10 samples a second at the default 7 W per core). The tab
  // opens the view of the range and selector: totals as the API's, measured
  // and estimated figures marked, the stacked chart; by process the trainer
  // has GPU 0's busy joules (the only kernels on it), estimated; by pod one
  // row per pod; a PUE typed in reaches the URL and the CO₂; the trainer's
  // row opens its gpu_energy flame graph (joules per stack, 90 kJ); the GPUs
  // view links to the node's energy by GPU.
  {
    const energyT0 = Date.now();
    const energyFromMs = Number(/energy_from_ms=(\d+)/.exec(seed.output)?.[1]);
    if (!(energyFromMs > 0)) fail(`e2e_seed_hour should print energy_from_ms: ${seed.output}`);
    const eFrom = energyFromMs + 120_000;
    const eTo = eFrom + 300_000;
    const energyNode = '{node="e2e-synthetic-energy"}';
    const eRange = `from=${eFrom}&to=${eTo}&selector=${q(energyNode)}`;
    const panel = page.locator(".view-energy .energy-panel");
    const panelData = () => panel.evaluate((e) => ({ ...e.dataset }));
    const rowsOf = () => panel.locator("tr.energy-row").evaluateAll((trs) => trs.map((tr) => ({ ...tr.dataset })));
    const near = (v, want, tol) => Math.abs(Number(v) - want) <= Math.abs(want) * tol;
    const shownBy = (groupBy) => async () => (await panel.getAttribute("data-state")) === "shown" && (await panel.getAttribute("data-group-by")) === groupBy;
    await page.goto(`${url}/?view=targets&${eRange}`);
    await page.locator("button.tab", { hasText: "Energy & cost" }).click();
    await waitFor("the energy view", shownBy("node"), 15000);
    const answer = await api(url, `/api/v1/energy?${eRange}`);
    const d = await panelData();
    log(`energy view: ${JSON.stringify(d)}`);
    for (const [attr, field] of [["totalJoules", "total_joules"], ["gpuJoules", "gpu_joules"], ["gpuIdleJoules", "gpu_idle_joules"],
      ["cpuJoules", "cpu_joules"], ["kwh", "kwh"], ["co2Grams", "co2_grams"], ["cost", "cost"]]) {
      if (!near(d[attr], answer.total[field], 1e-6)) fail(`the energy view's ${field} should be the API's ${answer.total[field]}, found ${d[attr]}`);
    }
    if (!near(d.gpuJoules, 108_000, 0.01) || !near(d.gpuIdleJoules, 18_000, 0.01) || !near(d.cpuJoules, 3205.26, 0.01)) {
      fail(`the seeded 300 s hold 108 kJ of GPU (18 kJ idle) and 3,205 J of CPU: ${JSON.stringify(d)}`);
    }
    const totalText = async (cls) => (await panel.locator(`.energy-totals .${cls}`).innerText()).trim();
    const totals = { gpu: await totalText("total-gpu"), idle: await totalText("total-gpu-idle"), kwh: await totalText("total-kwh"), co2: await totalText("total-co2") };
    if (totals.gpu !== "108 kJ" || totals.idle !== "18.0 kJ" || totals.kwh !== "≈30.9 Wh" || totals.co2 !== "≈14 g") {
      fail(`the totals should read 108 kJ, 18.0 kJ idle, ≈30.9 Wh, ≈14 g: ${JSON.stringify(totals)}`);
    }
    // Measured GPU joules name their source; estimated figures say how.
    const gpuFig = panel.locator(".energy-totals .total-gpu");
    if (!/fig-measured/.test(await gpuFig.getAttribute("class")) || !/Measured: NVML's energy counter/.test(await gpuFig.getAttribute("title"))) {
      fail(`the total GPU joules should be marked measured by NVML's energy counter: ${await gpuFig.getAttribute("title")}`);
    }
    for (const [cls, why] of [["total-co2", /PUE 1\.2 × 379 gCO₂e\/kWh/], ["total-cpu", /× 7 W per core/], ["total-cost", /× 0\.15 per kWh/]]) {
      const f = panel.locator(`.energy-totals .${cls}`);
      if (!/fig-estimated/.test(await f.getAttribute("class")) || !why.test(await f.getAttribute("title"))) {
        fail(`${cls} should be marked estimated, saying how: ${await f.getAttribute("title")}`);
      }
    }
    const nodeRows = await rowsOf();
    if (nodeRows.length !== 1 || nodeRows[0].key !== "node=e2e-synthetic-energy" || nodeRows[0].kind !== "node" || !near(nodeRows[0].totalJoules, answer.total.total_joules, 1e-6)) {
      fail(`one row for the energy node expected: ${JSON.stringify(nodeRows)}`);
    }
    const chart = await panel.locator(".energy-chart").evaluate((e) => ({ ...e.dataset }));
    if (chart.series !== "3" || !(Number(chart.points) >= 100)) fail(`the stacked chart should draw GPU busy, GPU idle and CPU over 300 s: ${JSON.stringify(chart)}`);
    await shot("energy");
    // By process: the trainer's share of GPU 0, estimated; GPU 1's idle joules stay with the GPU.
    await panel.locator('button[data-group="process"]').click();
    await waitFor("the energy view by process", async () => (await shownBy("process")()) && page.url().includes("egroup=process"), 10000);
    const byProcess = await rowsOf();
    log(`energy by process: ${JSON.stringify(byProcess)}`);
    const trainer = byProcess.find((r) => r.kind === "process" && r.key.includes("pid=6161")) ?? fail(`no trainer row: ${JSON.stringify(byProcess)}`);
    const loader = byProcess.find((r) => r.kind === "process" && r.key.includes("pid=6162")) ?? fail(`no loader row: ${JSON.stringify(byProcess)}`);
    const idleGpu = byProcess.find((r) => r.kind === "gpu-rest" && r.key.includes("gpu=1")) ?? fail(`no row for GPU 1's idle joules: ${JSON.stringify(byProcess)}`);
    if (!near(trainer.gpuJoules, 90_000, 0.02) || !near(trainer.cpuJoules, 2100, 0.01) || !trainer.estimated.split(",").includes("gpu_joules")) {
      fail(`the trainer should have GPU 0's 90 kJ (estimated) and 2,100 J of CPU: ${JSON.stringify(trainer)}`);
    }
    if (!near(loader.cpuJoules, 1105.26, 0.01) || !near(idleGpu.gpuJoules, 18_000, 0.01)) fail(`the loader's CPU and GPU 1's idle joules: ${JSON.stringify([loader, idleGpu])}`);
    const apportioned = await panel.locator('tr.energy-row[data-key*="pid=6161"] td .fig-estimated').first().getAttribute("title");
    if (!/apportioned/.test(apportioned)) fail(`the trainer's GPU joules should say they were apportioned: ${apportioned}`);
    await shot("energy_by_process");
    // By pod: one row per pod, the trainer's with its GPU joules.
    await panel.locator('button[data-group="pod"]').click();
    await waitFor("the energy view by pod", shownBy("pod"), 10000);
    const byPod = await rowsOf();
    const podRow = (pod) => byPod.find((r) => r.kind === "pod" && r.key.split(",").includes("namespace=ml") && r.key.split(",").includes(`pod=${pod}`));
    if (!podRow("loader-0") || !near(podRow("trainer-0")?.gpuJoules, 90_000, 0.02)) fail(`a row per pod expected: ${JSON.stringify(byPod)}`);
    await shot("energy_by_pod");
    // A PUE typed in: in the URL, in the answer's coefficients and the CO₂; a bad one is refused.
    const pue = panel.locator('input[data-key="pue"]');
    await pue.fill("1.5");
    await pue.press("Enter");
    await waitFor("the CO₂ at PUE 1.5", async () => page.url().includes("pue=1.5") && (await shownBy("pod")()) &&
      near((await panelData()).co2Grams, answer.total.kwh * 1.5 * answer.coefficients.carbon_intensity, 1e-6), 10000);
    if (!/PUE 1\.5 \(set here\)/.test(await panel.locator(".energy-used").innerText())) fail("the coefficients line should say PUE 1.5 was set here");
    await pue.fill("0.5");
    await pue.press("Enter");
    const coefError = await waitFor("the PUE's error", async () => (await panel.locator(".energy-coef-error").innerText()) || null, 3000);
    if (!/expected 1 to 10/.test(coefError) || !page.url().includes("pue=1.5")) fail(`a PUE below 1 should be refused: ${coefError}, ${page.url()}`);
    // The trainer's row: its gpu_energy flame graph over the same range, joules per stack.
    await page.goto(`${url}/?view=energy&egroup=process&${eRange}`);
    await waitFor("the energy view by process again", shownBy("process"), 10000);
    const flameBefore = await flameVersion();
    await panel.locator('tr.energy-row[data-key*="pid=6161"] button.energy-flame').click();
    await waitFor("the trainer's gpu_energy flame graph", async () => new URL(page.url()).searchParams.get("view") === "flame" &&
      (await flameVersion()) > flameBefore && (await flameTotal()) > 0, 15000);
    const energyUrl = new URL(page.url()).searchParams;
    if (energyUrl.get("type") !== "gpu_energy" || energyUrl.get("selector") !== '{node="e2e-synthetic-energy", pid="6161"}' ||
        energyUrl.get("from") !== String(eFrom) || energyUrl.get("to") !== String(eTo)) {
      fail(`the trainer's row should open its gpu_energy flame graph over the range: ${page.url()}`);
    }
    if ((await page.locator("header select").inputValue()) !== "gpu_energy") fail("the type picker should show gpu_energy");
    const typeOptions = await page.locator("header select option").evaluateAll((os) => os.map((o) => `${o.value}=${o.textContent}`));
    if (!typeOptions.includes("gpu_energy=GPU energy")) fail(`the type picker should offer GPU energy: ${typeOptions.join(", ")}`);
    // 500 ms of kernels a second, all of GPU 0's busy 300 W: 90 kJ in microjoules.
    const energyTotal = await flameTotal();
    if (!near(energyTotal, 9e10, 0.03)) fail(`the trainer's gpu_energy flame graph should hold about 90 kJ (9e10 µJ), found ${energyTotal}`);
    const ec = await page.locator(".view-flame .flame-canvas").boundingBox();
    await page.mouse.move(ec.x + ec.width / 2, ec.y + 18 + 9);
    const energyTip = await waitFor("a gpu_energy box's tooltip", async () => {
      const t = await page.locator(".view-flame .tooltip").innerText().catch(() => "");
      return t.includes("train_step") ? t : null;
    }, 5000);
    if (!/\d kJ/.test(energyTip)) fail(`a gpu_energy tooltip should read in kJ: ${energyTip}`);
    log(`gpu_energy flame graph: ${energyTotal} µJ; tooltip ${energyTip.replace(/\s+/g, " ")}`);
    await shot("energy_flame");
    // The GPUs view's link: the node's energy by GPU.
    await page.goto(`${url}/?view=gpu&gpunode=e2e-synthetic-energy&from=${eFrom}&to=${eTo}`);
    await waitFor("the energy node's GPU charts", async () => Number(await page.locator(".view-gpu .gpu-panel").getAttribute("data-charts")) > 0, 10000);
    await page.locator(".gpu-energy-link").click();
    await waitFor("the node's energy by GPU", shownBy("gpu"), 10000);
    const byGpu = await rowsOf();
    if (byGpu.filter((r) => r.kind === "gpu").length !== 2 || new URL(page.url()).searchParams.get("selector") !== energyNode) {
      fail(`the GPUs view should open the node's energy by GPU (two GPUs): ${JSON.stringify(byGpu)} ${page.url()}`);
    }
    if (consoleErrors.length) fail(`console errors in the energy view: ${consoleErrors.join(" | ")}`);
    log(`energy view steps: ${((Date.now() - energyT0) / 1000).toFixed(1)} s, screenshots included`);
  }

  // 7. Range selection to updated flame graph on 1 h of data.
  const now = Date.now();
  const hourFrom = now - 3600e3;
  await page.goto(`${url}/?from=${hourFrom}&to=${now}&selector=${q('{node="e2e-synthetic"}')}`);
  await waitFor("the hour's flame graph", async () => (await flameTotal()) > 0, 15000);
  const hourTotal = await flameTotal();
  await dragTimeline(0.25, 0.75);
  const perf = await page.evaluate(() => window.__warpscope.perf);
  metrics.select_to_flame_ms_1h = Number(perf.selectToFlameMs.toFixed(1));
  metrics.select_1h_samples = { hour: hourTotal, selection: await flameTotal(), nodes: perf.nodes };
  await shot("hour");

  // 7b. One node's 15 minutes with a 25,073-node graph (e2e_seed_hour's
  // "-20k" node): page load to the first graph and drag to the updated graph,
  // five times each (medians); then the folded-nodes note and "show all".
  {
    const bigUrl = `${url}/?from=now-15m&to=now&selector=${q('{node="e2e-synthetic-20k"}')}`;
    const loads = [];
    const drags = [];
    let nodes = 0;
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    for (let i = 0; i < 5; i++) {
      await page.goto(bigUrl);
      await waitFor("the big node's graph", async () => (await flameTotal()) > 0, 15000);
      const p0 = await page.evaluate(() => window.__warpscope.perf);
      loads.push(p0.firstFlameMs);
      nodes = p0.nodes;
      await dragTimeline(0.2, 0.8);
      drags.push((await page.evaluate(() => window.__warpscope.perf)).selectToFlameMs);
    }
    metrics.flame_20k_15min = {
      nodes_drawn: nodes,
      page_load_ms_median: Number(median(loads).toFixed(1)),
      drag_to_flame_ms_median: Number(median(drags).toFixed(1)),
      page_load_ms: loads.map((x) => Number(x.toFixed(1))),
      drag_to_flame_ms: drags.map((x) => Number(x.toFixed(1))),
    };
    log(`15 min, 25k nodes: ${JSON.stringify(metrics.flame_20k_15min)}`);
    if (nodes !== 20000) fail(`the big node's graph should be folded to the default 20,000 nodes, drew ${nodes}`);
    const note = await page.locator(".view-flame .folded").innerText();
    if (!/nodes, [\d.]+% of the total, are folded/.test(note)) fail(`the folded-nodes note should be shown: "${note}"`);
    await shot("flame_20k_folded");
    await page.locator(".view-flame [data-action=all-nodes]").click();
    await waitFor("the whole graph", async () => page.url().includes("nodes=all") && (await page.evaluate(() => window.__warpscope.perf.nodes)) > 20000, 10000);
    if (/are folded/.test(await page.locator(".view-flame .folded").innerText())) fail("after show all nothing should be folded");
    log(`show all: ${await page.evaluate(() => window.__warpscope.perf.nodes)} nodes`);
  }

  // 8. A 50k-node flame graph (synthetic answer in place of the server's).
  const synthetic = JSON.stringify(syntheticProfile(50000));
  await page.route(/\/api\/v1\/profile\?.*synthetic-50k/, (route) => route.fulfill({ status: 200, contentType: "application/json", body: synthetic }));
  const runs = [];
  for (let i = 0; i < 3; i++) {
    await page.goto(`${url}/?from=now-5m&selector=${q('{node="synthetic-50k"}')}&r=${i}`);
    await waitFor("the 50k-node flame graph", async () => (await flameTotal()) > 0, 15000);
    runs.push(await page.evaluate(() => ({ ...window.__warpscope.perf })));
  }
  const med = (k) => runs.map((r) => r[k]).sort((a, b) => a - b)[1];
  metrics.flame_50k = { nodes: runs[0].nodes, build_ms: Number(med("buildMs").toFixed(1)), draw_ms: Number(med("drawMs").toFixed(1)),
    render_ms: Number((med("buildMs") + med("drawMs")).toFixed(1)) };
  await shot("flame_50k");

  // 9. A flame chart at the view's limit: 32 threads x 15 min (synthetic).
  const chartFrom = Math.floor(Date.now() / 1000) * 1000 - 900e3;
  const bigChart = syntheticChart(chartFrom, 32, 900, 6);
  const bigChartBody = JSON.stringify(bigChart);
  await page.route(/\/api\/v1\/flamechart\?.*synthetic-chart/, (route) => route.fulfill({ status: 200, contentType: "application/json", body: bigChartBody }));
  const chartRuns = [];
  for (let i = 0; i < 3; i++) {
    await page.goto(`${url}/?view=flamechart&from=${chartFrom}&to=${chartFrom + 900e3}&selector=${q('{node="synthetic-chart"}')}&r=${i}`);
    await waitFor("the synthetic flame chart", async () => (await chartNumber("lanes")) === 32, 20000);
    chartRuns.push(await page.evaluate(() => ({ ...window.__warpscope.perf })));
  }
  const chartMed = (k) => chartRuns.map((r) => r[k]).sort((a, b) => a - b)[1];
  metrics.flame_chart_15min = { lanes: 32, points: bigChart.lanes.reduce((n, l) => n + l.points.length, 0),
    boxes: chartRuns[0].chartBoxes, build_ms: Number(chartMed("chartBuildMs").toFixed(1)), draw_ms: Number(chartMed("chartDrawMs").toFixed(1)) };
  await shot("flamechart_15min");
  metrics.bundle_gzip_bytes = bundleGzipBytes(env("WS_UI_DIST"));
  metrics.chromium = browser.version();
  metrics.runtime_s = Number(((Date.now() - t0) / 1000).toFixed(1));
  fs.writeFileSync(path.join(artifacts, "metrics.json"), JSON.stringify(metrics, null, 2) + "\n");
  log(`flame graph of ${metrics.flame_50k.nodes} nodes: ${metrics.flame_50k.render_ms} ms (build ${metrics.flame_50k.build_ms} ms, draw ${metrics.flame_50k.draw_ms} ms; goal <= 100 ms)`);
  log(`range selection on 1 h of data -> updated flame graph: ${metrics.select_to_flame_ms_1h} ms (goal <= 500 ms; ${JSON.stringify(metrics.select_1h_samples)})`);
  log(`bundle: ${(metrics.bundle_gzip_bytes / 1024).toFixed(1)} KiB gzipped (goal <= 300 KB)`);
  log(`flame chart of 32 threads x 15 min: ${JSON.stringify(metrics.flame_chart_15min)}`);
  log(`GPU kernels view: ${JSON.stringify(metrics.gpu_kernels)}`);
  log(`screenshots and metrics.json in ${artifacts}; ${metrics.runtime_s} s; PASS`);
} catch (e) {
  if (!process.exitCode) console.error("ui_e2e: FAIL:", e);
  process.exitCode = 1;
  if (lastPage) {
    await lastPage.screenshot({ path: path.join(artifacts, "failure.png"), fullPage: true }).catch(() => {});
    console.error("ui_e2e: page at failure:", lastPage.url(), (await lastPage.locator("body").innerText().catch(() => "")).slice(0, 1500));
  }
  for (const c of children) if (c.output && c.label !== "cpu_split") console.error(`--- ${c.label} output (tail):\n${c.output.slice(-2000)}`);
} finally {
  if (browser) await browser.close().catch(() => {});
  for (const c of children.reverse()) {
    if (!c.exited) c.kill(c.label === "agent" || c.label === "server" ? "SIGTERM" : "SIGKILL");
  }
  await sleep(300);
  for (const c of children) if (!c.exited) c.kill("SIGKILL");
  // A killed process may still hold files open for a moment: remove the directory once all have exited.
  for (let i = 0; i < 50 && children.some((c) => !c.exited); ++i) await sleep(100);
  fs.rmSync(dir, { recursive: true, force: true });
}
