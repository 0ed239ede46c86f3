// warpscope-server's MCP endpoint through the reference client: the
// @modelcontextprotocol/sdk Client over its StreamableHTTPClientTransport,
// the bearer token in requestInit as an assistant's config would send it.
// A real server on loopback, two minutes of known data from mcp_seed
// (seed_mcp.cc says which), then: connect, list the tools, call each and
// check the numbers the seed implies; a wrong or missing token is 401; a
// bad argument is a tool error; a few raw requests check the transport.
// Env: WS_SERVER_BIN, WS_MCP_SEED_BIN (tests/mcp/CMakeLists.txt sets them).
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const TOKEN = "mcp-test-token";
const env = (name) => process.env[name] ?? fail(`${name} is not set (run through ctest)`);
function fail(message) {
  throw new Error(message);
}

function startServer(dir) {
  const args = ["--listen", "127.0.0.1:0", "--data-dir", join(dir, "data"), "--token", TOKEN];
  const child = spawn(env("WS_SERVER_BIN"), args, { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "serving on" line within 20 s: ${log}`)), 20000);
    child.stderr.on("data", (chunk) => {
      log += chunk;
      const m = /serving on (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1], log: () => log });
      }
    });
    child.on("exit", (code) => reject(new Error(`server exited (${code}): ${log}`)));
  });
}

async function connect(url, token) {
  const client = new Client({ name: "warpscope-mcp-test", version: "1.0.0" });
  const headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", url), { requestInit: { headers } });
  await client.connect(transport);
  return client;
}

// A tool call that must succeed: its structuredContent, after checking that
// the text content says the same (or, for a summary, is text).
async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  assert.equal(r.isError, false, `${name}: ${JSON.stringify(r.content)}`);
  assert.equal(r.content[0].type, "text");
  assert.ok(r.structuredContent, `${name} has structuredContent`);
  return r;
}

const checks = [];
const check = (name, fn) => checks.push({ name, fn });

const dir = mkdtempSync(join(tmpdir(), "ws-mcp-"));
let server;
let exitCode = 0;
try {
  server = await startServer(dir);
  const port = new URL(server.url).port;
  const { stdout } = await promisify(execFile)(env("WS_MCP_SEED_BIN"), [port, TOKEN]);
  const seeded = /from_ms=(\d+) to_ms=(\d+)/.exec(stdout) ?? fail(`mcp_seed printed ${stdout}`);
  const fromMs = Number(seeded[1]);
  const toMs = Number(seeded[2]);
  // RFC 3339 for some tools, unix milliseconds for others: both as the API takes them.
  const range = { from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString() };
  const rangeMs = { from: String(fromMs), to: String(toMs) };
  const client = await connect(server.url, TOKEN);

  check("initialize: server info, tools capability, instructions", async () => {
    assert.equal(client.getServerVersion().name, "warpscope");
    assert.ok(client.getServerCapabilities().tools, "tools capability");
    assert.match(client.getInstructions(), /get_insights/);
    await client.ping();
  });

  check("tools/list: every tool with a described JSON Schema", async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ["flame_graph_summary", "get_insights", "gpu_kernels",
      "gpu_metrics_summary", "list_profile_types", "list_targets", "top_functions"]);
    for (const t of tools) {
      assert.ok(t.description.length > 40, `${t.name} description`);
      assert.equal(t.inputSchema.type, "object", t.name);
      for (const [key, p] of Object.entries(t.inputSchema.properties ?? {})) {
        assert.ok(p.description, `${t.name}.${key} has a description`);
      }
    }
    const top = tools.find((t) => t.name === "top_functions");
    assert.ok(["from", "to", "selector", "type", "sort", "limit"].every((k) => k in top.inputSchema.properties));
  });

  check("get_insights: the starved GPU, named by process, tokenize_batch first", async () => {
    const r = await call(client, "get_insights", range);
    assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
    const starved = r.structuredContent.insights.filter((x) => x.kind === "gpu_starved_by_cpu");
    assert.equal(starved.length, 1, JSON.stringify(r.structuredContent.insights.map((x) => x.kind)));
    const x = starved[0];
    assert.deepEqual(x.target, { comm: "python3", gpu: "0", node: "mcp-node", pid: "4242" });
    assert.equal(x.functions[0].name, "tokenize_batch");
    assert.match(x.summary, /python3/);
    assert.ok(x.fix.length > 0);
    assert.equal(x.sparkline, undefined, "sparklines are left out");
  });

  check("top_functions: tokenize_batch by self, with shares", async () => {
    const r = await call(client, "top_functions", { ...rangeMs, limit: 5 });
    const s = r.structuredContent;
    assert.equal(s.type, "cpu");
    assert.equal(s.total, 23 * 120);
    assert.equal(s.functions[0].name, "tokenize_batch");
    assert.equal(s.functions[0].self, 19 * 120);
    assert.equal(s.functions[0].self_share, 0.8261);
    assert.equal(s.functions[1].name, "read_shard");
    const byTotal = await call(client, "top_functions", { ...rangeMs, sort: "total", limit: 1 });
    assert.equal(byTotal.structuredContent.functions.length, 1);
    assert.equal(byTotal.structuredContent.functions[0].name, "main");
    assert.equal(byTotal.structuredContent.functions[0].total_share, 1);
  });

  check("flame_graph_summary: the hot paths as lines, a single-child chain on one line", async () => {
    const r = await call(client, "flame_graph_summary", { ...range, selector: '{pid="4242"}' });
    const text = r.content[0].text;
    assert.match(text, /^cpu profile, total 2760 samples/);
    assert.match(text, /\n100\.0% \(self 0\.0%\) main \[train\.py\]\n/);
    assert.match(text, /\n  82\.6% \(self 82\.6%\) tokenize_batch \[data\.py\]\n/);
    assert.match(text, /\n  17\.4% \(self 17\.4%\) load \[data\.py\] > read_shard \[libshard\.so\]\n/);
    const lines = r.structuredContent.lines;
    assert.equal(lines.length, 3);
    assert.deepEqual(lines[2].frames.map((f) => [f.name, f.kind]), [["load", "python"], ["read_shard", "native"]]);
    assert.equal(lines[2].depth, 2);
    const shallow = await call(client, "flame_graph_summary", { ...range, depth: 1 });
    assert.equal(shallow.structuredContent.lines.length, 1);
    const other = await call(client, "flame_graph_summary", { ...range, selector: '{pid="1"}' });
    assert.match(other.content[0].text, /no samples/);
  });

  check("gpu_kernels: gemm_kernel's launches", async () => {
    const r = await call(client, "gpu_kernels", range);
    const k = r.structuredContent.kernels;
    assert.equal(k.length, 1);
    assert.equal(k[0].name, "gemm_kernel");
    assert.equal(k[0].launches, 100);
    assert.equal(k[0].total_ns, 100 * 2_000_000);
  });

  check("gpu_metrics_summary: mean, min, max, p95 per GPU", async () => {
    const r = await call(client, "gpu_metrics_summary", range);
    const s = r.structuredContent;
    assert.equal(s.step_ms, 1000);
    assert.equal(s.gpus.length, 1);
    const g = s.gpus[0];
    assert.deepEqual([g.node, g.gpu, g.gpu_name, g.uuid], ["mcp-node", "0", "NVIDIA H100", "GPU-mcp-0"]);
    assert.deepEqual(g.metrics.gpu_utilization, { unit: "percent", mean: 18, min: 10, max: 90, p95: 90, steps: 120 });
    assert.equal(g.metrics.gpu_power.mean, 300);
    assert.equal(g.metrics.gpu_memory_used.max, 40 * 2 ** 30);
    assert.equal(g.metrics.gpu_process_sm_utilization, undefined, "per-process metrics are not a GPU's");
  });

  check("list_targets and list_profile_types: what there is to ask about", async () => {
    const t = (await call(client, "list_targets", range)).structuredContent;
    assert.deepEqual(t.nodes.map((n) => n.node), ["mcp-node"]);
    assert.ok(t.nodes[0].processes.some((p) => p.pid === "4242" && p.comm === "python3"));
    assert.deepEqual(t.nodes[0].gpus.map((g) => g.gpu), ["0"]);
    const types = (await call(client, "list_profile_types", {})).structuredContent;
    assert.ok(types.types.some((x) => x.name === "cpu"));
    assert.ok(types.metrics.some((x) => x.name === "gpu_utilization"));
  });

  check("bad arguments are tool errors the model can read", async () => {
    let r = await client.callTool({ name: "top_functions", arguments: { ...range, limit: "many" } });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /argument 'limit' must be an integer/);
    r = await client.callTool({ name: "get_insights", arguments: { from: "yesterday" } });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /parameter 'from'/);
    r = await client.callTool({ name: "top_functions", arguments: { ...range, selector: "{pid=" } });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /selector/);
    r = await client.callTool({ name: "list_targets", arguments: { colour: "red" } });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /unknown argument 'colour'/);
    await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }), (e) => e.code === -32602);
  });

  check("a wrong or missing token is 401", async () => {
    for (const token of ["wrong-token", undefined]) {
      await assert.rejects(connect(server.url, token),
        (e) => e.code === 401 && /invalid bearer token|missing Authorization/.test(e.message), `token ${token}`);
    }
  });

  check("transport: GET 405, malformed JSON -32700, unknown method -32601", async () => {
    const url = new URL("/mcp", server.url);
    const auth = { Authorization: `Bearer ${TOKEN}` };
    const get = await fetch(url, { headers: { ...auth, Accept: "text/event-stream" } });
    assert.equal(get.status, 405);
    const post = (body) => fetch(url, { method: "POST", headers: { ...auth, "Content-Type": "application/json",
      Accept: "application/json, text/event-stream" }, body });
    let r = await post("{\"jsonrpc\":");
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.code, -32700);
    r = await post(JSON.stringify({ jsonrpc: "2.0", id: 9, method: "resources/list" }));
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(),
      { jsonrpc: "2.0", id: 9, error: { code: -32601, message: "Method not found: resources/list" } });
    r = await post(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
    assert.equal(r.status, 202);
    assert.equal(r.headers.get("content-type"), null);
    assert.equal(await r.text(), "");
  });

  let passed = 0;
  for (const { name, fn } of checks) {
    try {
      await fn();
      ++passed;
      console.log(`ok - ${name}`);
    } catch (e) {
      exitCode = 1;
      console.log(`FAIL - ${name}\n${e.stack}`);
    }
  }
  console.log(`${passed} passed, ${checks.length - passed} failed`);
  await client.close();
} catch (e) {
  exitCode = 1;
  console.log(`FAIL - setup: ${e.stack}`);
  if (server) console.log(server.log());
} finally {
  // The server flushes its store on SIGTERM; remove the directory only after it has exited.
  if (server && server.child.exitCode === null && server.child.signalCode === null) {
    const exited = new Promise((resolve) => server.child.once("exit", resolve));
    server.child.kill("SIGTERM");
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
}
process.exit(exitCode);
