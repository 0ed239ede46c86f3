// The container images, end to end, run the way deploy/kubernetes runs them:
//  - scripts/images.sh builds both images from the binaries just built, and
//    its OCI archives load back (podman load);
//  - the server's StatefulSet container (read-only root, no capabilities, user
//    65534, the token from its Secret volume, data on a volume) serves on a
//    podman network, published on loopback;
//  - the DaemonSet's doctor init container passes on this machine;
//  - the DaemonSet's agent container (privileged, host PID namespace, the
//    manifest's mounts, token file, node name, limits) profiles a host program
//    with a known 3:1 split, which comes back through the server's API within
//    5 points, with the node label and the functions named;
//  - a wrong token gets 401, and both containers stop cleanly on SIGTERM.
// Every podman run is made by podman_run.mjs from the rendered manifests, with
// only the test's names, ports and a faster sampling rate added.
//
// usage: node container_e2e_test.mjs BUILD_DIR   (root; podman from scripts/bootstrap.sh)
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { repoRoot, render } from "./manifests.mjs";
import { podmanRunArgs } from "./podman_run.mjs";

const build = path.resolve(process.argv[2] || path.join(repoRoot, "build"));
const id = `ws-e2e-${process.pid}`;
const work = mkdtempSync(path.join(tmpdir(), `${id}-`));
const token = randomBytes(24).toString("hex");
const nodeName = "e2e-node";
let failures = 0;

const log = (s) => console.log(`container_e2e: ${s}`);
const expect = (ok, what, detail = "") => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${detail ? ` (${detail})` : ""}`);
  if (!ok) failures++;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const env = { ...process.env };
if (!env.CONTAINERS_CONF) {
  env.CONTAINERS_CONF = execFileSync("bash", ["-c", `source '${repoRoot}/scripts/podman-env.sh'; echo "$CONTAINERS_CONF"`], {
    encoding: "utf8",
  }).trim();
}
const podman = (args, { check = true } = {}) => {
  try {
    return execFileSync("podman", args, { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  } catch (e) {
    if (check) throw new Error(`podman ${args.join(" ")}: ${(e.stderr || e.message).toString().trim()}`);
    return null;
  }
};
// Exit code and stdout + stderr together (containers log to stderr).
const podmanStatus = (args) => {
  const r = spawnSync("podman", args, { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  return { code: r.status, out: `${r.stdout || ""}${r.stderr || ""}` };
};

async function http(port, urlPath, bearer) {
  const headers = bearer ? { Authorization: `Bearer ${bearer}` } : {};
  const r = await fetch(`http://127.0.0.1:${port}${urlPath}`, { headers, signal: AbortSignal.timeout(10000) });
  return { status: r.status, body: await r.text() };
}

async function waitHealthy(port, what, seconds) {
  for (let i = 0; i < seconds * 4; i++) {
    try {
      if ((await http(port, "/healthz")).status === 200) return true;
    } catch {}
    await sleep(250);
  }
  throw new Error(`${what} did not answer /healthz on 127.0.0.1:${port} within ${seconds} s`);
}

const hostPort = (container, port) => Number(podman(["port", container, `${port}/tcp`]).split(":").pop());

const containers = [`${id}-server`, `${id}-agent`, `${id}-doctor`];
function cleanup() {
  for (const c of containers) podman(["rm", "--force", "--time", "5", c], { check: false });
  podman(["network", "rm", "--force", id], { check: false });
  podman(["volume", "rm", "--force", `${id}-data`], { check: false });
  rmSync(work, { recursive: true, force: true });
}

let workload;
try {
  if (process.getuid() !== 0) throw new Error("needs root (the agent container is privileged)");
  try {
    execFileSync("podman", ["--version"], { stdio: "ignore" });
  } catch {
    throw new Error("podman is missing: scripts/bootstrap.sh installs it (scripts/debian-packages.txt)");
  }

  // 1. The images, from the binaries in BUILD_DIR, and their archives.
  const version = execFileSync(path.join(build, "bin/warpscope-agent"), ["--version"], { encoding: "utf8" }).split(" ")[1].trim();
  const images = path.join(work, "images");
  const built = execFileSync(path.join(repoRoot, "scripts/images.sh"), ["--build", build, "--out", images], {
    env,
    encoding: "utf8",
  });
  process.stdout.write(built);
  for (const image of ["agent", "server"]) {
    const ref = `localhost/warpscope-${image}:${version}`;
    podman(["rmi", "--force", ref, `localhost/warpscope-${image}:latest`]);
    podman(["load", "--quiet", "--input", path.join(images, `warpscope-${image}-${version}.oci.tar`)]);
    expect(podman(["image", "exists", ref], { check: false }) !== null, `${ref} loads back from its OCI archive`);
    const help = podmanStatus(["run", "--rm", "--pull=never", ref, "--help"]);
    expect(help.code === 0 && /usage/i.test(help.out), `podman run ${ref} --help works (entry point is the binary)`);
  }

  // 2. The manifests, rendered with the test's token.
  const objects = render("overlays/embedded", { "overlays/embedded/token": `${token}\n` });
  for (const o of objects.filter((x) => ["DaemonSet", "StatefulSet"].includes(x.kind))) {
    for (const c of [...(o.spec.template.spec.initContainers || []), ...o.spec.template.spec.containers]) {
      expect(c.image.endsWith(`:${version}`), `${o.kind}/${o.metadata.name} ${c.name} runs the images' version`, c.image);
    }
  }
  const common = { hostRoot: path.join(work, "host"), secretsDir: path.join(work, "secrets"), volumePrefix: id, nodeName };
  podman(["network", "create", id]);

  // 3. The server, as its StatefulSet runs it.
  const serverArgs = podmanRunArgs(objects, {
    ...common, workload: "StatefulSet/warpscope-server", container: "server", name: `${id}-server`, detach: true,
    network: id, alias: "warpscope-server", publish: { http: "127.0.0.1:" },
  });
  podman(serverArgs);
  const serverPort = hostPort(`${id}-server`, 7070);
  await waitHealthy(serverPort, "the server container", 30);
  const inspect = JSON.parse(podman(["inspect", `${id}-server`]))[0];
  expect(inspect.HostConfig.ReadonlyRootfs === true, "the server's root file system is read-only");
  expect((inspect.EffectiveCaps || []).length === 0, "the server has no capabilities", JSON.stringify(inspect.EffectiveCaps));
  expect(inspect.Config.User === "65534:65534", "the server runs as 65534", inspect.Config.User);
  expect((await http(serverPort, "/api/v1/status", "wrong-token")).status === 401, "a wrong token gets 401");
  expect((await http(serverPort, "/api/v1/status")).status === 401, "no token gets 401");
  expect((await http(serverPort, "/api/v1/status", token)).status === 200, "the Secret's token is accepted");

  // 4. The DaemonSet's init container: doctor, on this machine.
  const doctor = podmanStatus(podmanRunArgs(objects, {
    ...common, workload: "DaemonSet/warpscope-agent", container: "doctor", init: true, name: `${id}-doctor`, remove: true,
    network: id,
  }));
  process.stdout.write(doctor.out.replace(/^/gm, "  doctor| "));
  expect(doctor.code === 0, "the doctor init container passes", `exit ${doctor.code}`);

  // 5. A host program with a known split, and the agent profiling the host.
  workload = spawn(path.join(build, "testprogs/cpu_split"), ["40"], { stdio: "ignore" });
  const start = Date.now();
  podman(podmanRunArgs(objects, {
    ...common, workload: "DaemonSet/warpscope-agent", container: "agent", name: `${id}-agent`, detach: true,
    network: id, publish: { metrics: "127.0.0.1:" }, extraArgs: ["--frequency", "99", "--upload-interval", "2s"],
  }));
  const metricsPort = hostPort(`${id}-agent`, 9400);
  await waitHealthy(metricsPort, "the agent container's /healthz (its probes)", 30);
  const selector = encodeURIComponent(`{pid="${workload.pid}"}`);
  let hot = 0, cold = 0, total = 0;
  for (let i = 0; i < 60 && total < 800; i++) {
    await sleep(1000);
    const r = await http(serverPort, `/api/v1/profile?type=cpu&format=collapsed&from=${start - 1000}&to=${Date.now() + 1000}&selector=${selector}`, token);
    if (r.status !== 200) continue;
    hot = cold = total = 0;
    for (const line of r.body.split("\n")) {
      const sp = line.lastIndexOf(" ");
      if (sp < 0) continue;
      const n = Number(line.slice(sp + 1));
      total += n;
      if (line.includes("hot_three_quarters")) hot += n;
      else if (line.includes("cold_one_quarter")) cold += n;
    }
  }
  const agentInspect = JSON.parse(podman(["inspect", `${id}-agent`]))[0];
  expect(agentInspect.HostConfig.PidMode === "host", "the agent is in the host PID namespace", agentInspect.HostConfig.PidMode);
  expect(total >= 500, "the host program's samples reach the server through the agent container", `${total} samples`);
  const hotShare = total ? hot / total : 0, coldShare = total ? cold / total : 0;
  expect(Math.abs(hotShare - 0.75) <= 0.05 && Math.abs(coldShare - 0.25) <= 0.05,
    "the split comes back within 5 points of 75/25", `hot ${(100 * hotShare).toFixed(1)} %, cold ${(100 * coldShare).toFixed(1)} %`);
  const labels = await http(serverPort, `/api/v1/label_values?name=node&from=${start - 1000}&to=${Date.now() + 1000}`, token);
  expect(labels.status === 200 && labels.body.includes(`"${nodeName}"`), "series carry the node name from the downward API", labels.body.slice(0, 200));

  // 6. SIGTERM, as the kubelet stops pods: both exit 0 within their grace period.
  for (const [name, grace] of [[`${id}-agent`, 45], [`${id}-server`, 60]]) {
    const t0 = Date.now();
    podman(["stop", "--time", String(grace), name]);
    const state = JSON.parse(podman(["inspect", name]))[0].State;
    const logs = podmanStatus(["logs", "--tail", "1", name]).out.trim();
    expect(state.ExitCode === 0, `${name} stops cleanly on SIGTERM`, `exit ${state.ExitCode} after ${((Date.now() - t0) / 1000).toFixed(1)} s; ${logs}`);
  }
} catch (e) {
  expect(false, "the test ran to its end", e.message);
  for (const c of containers) {
    const l = podmanStatus(["logs", "--tail", "30", c]);
    if (l.code === 0 && l.out.trim()) process.stdout.write(`--- ${c}:\n${l.out}`);
  }
} finally {
  if (workload) workload.kill("SIGKILL");
  cleanup();
}
console.log(failures ? `${failures} check(s) failed` : "container_e2e: all checks passed");
process.exit(failures ? 1 : 0);
