// The Kubernetes manifests, checked offline (no cluster here or in CI):
//  1. every kustomization of deploy/kubernetes renders with `kubectl kustomize`;
//  2. every object passes its schema (kubernetes-models: types, required
//     fields, enums);
//  3. workloads have no unknown fields: kubectl decodes them into its typed
//     structs (`kubectl set image --local`), which drops unknown fields, and
//     nothing may be dropped;
//  4. the settings the deployment depends on are there (the agent's host PID
//     namespace, privileges, mounts, token and node name; the server's locked-
//     down container, probes, volume; resources matching the agent's bounds).
// Prints one line per check; exits 1 when any fails.
import { readFileSync } from "node:fs";
import path from "node:path";
import { kubectl, kustomizations, render, find, repoRoot, standInFiles } from "./manifests.mjs";

let failures = 0;
const check = (ok, what, detail = "") => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${!ok && detail ? `: ${detail}` : ""}`);
  if (!ok) failures++;
};

const modelPath = (apiVersion, kind) => {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : [null, apiVersion];
  return group ? `kubernetes-models/${group}/${version}/${kind}` : `kubernetes-models/${version}/${kind}`;
};

const leafPaths = (v, p = "", out = new Set()) => {
  if (Array.isArray(v)) v.forEach((x, i) => leafPaths(x, `${p}[${i}]`, out));
  else if (v && typeof v === "object") {
    const keys = Object.keys(v);
    if (keys.length === 0) out.add(p);
    for (const k of keys) leafPaths(v[k], p ? `${p}.${k}` : k, out);
  } else out.add(p);
  return out;
};

const WORKLOADS = new Set(["Pod", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "CronJob"]);
const rendered = {};

for (const kustomization of Object.keys(kustomizations)) {
  let objects;
  try {
    objects = render(kustomization, standInFiles(kustomization));
    check(true, `${kustomization}: renders (${objects.length} objects)`);
  } catch (e) {
    check(false, `${kustomization}: renders`, e.message);
    continue;
  }
  rendered[kustomization] = objects;
  for (const o of objects) {
    const what = `${kustomization}: ${o.kind}/${o.metadata?.name}`;
    try {
      const mod = await import(modelPath(o.apiVersion, o.kind));
      new mod[o.kind](o).validate();
      check(true, `${what} matches its schema`);
    } catch (e) {
      check(false, `${what} matches its schema`, e.message.split("\n").slice(0, 4).join(" | "));
    }
    if (WORKLOADS.has(o.kind)) {
      try {
        const typed = JSON.parse(kubectl(["set", "image", "--local", "-f", "-", "*=probe", "-o", "json"], JSON.stringify(o)));
        const have = leafPaths(typed);
        const lost = [...leafPaths(o)].filter((p) => !have.has(p) && !/\.image$/.test(p));
        check(lost.length === 0, `${what} has no unknown fields`, lost.join(", "));
      } catch (e) {
        check(false, `${what} decodes into kubectl's types`, e.message);
      }
    }
  }
}

const container = (podSpec, name, init = false) => {
  const c = (init ? podSpec.initContainers : podSpec.containers)?.find((x) => x.name === name);
  if (!c) throw new Error(`no ${init ? "init " : ""}container ${name}`);
  return c;
};
const volumeFor = (podSpec, c, mountPath) => {
  const m = c.volumeMounts?.find((x) => x.mountPath === mountPath);
  return m && podSpec.volumes?.find((v) => v.name === m.name);
};
const flag = (args, name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};

const semantic = (what, f) => {
  try {
    const problems = f();
    check(problems.length === 0, what, problems.join("; "));
  } catch (e) {
    check(false, what, e.message);
  }
};

for (const overlay of ["overlays/embedded", "overlays/clickhouse"]) {
  const objects = rendered[overlay];
  if (!objects) continue;
  semantic(`${overlay}: the agent DaemonSet has what profiling needs`, () => {
    const p = [];
    const ds = find(objects, "DaemonSet", "warpscope-agent");
    const spec = ds.spec.template.spec;
    const agent = container(spec, "agent");
    const doctor = container(spec, "doctor", true);
    if (spec.hostPID !== true) p.push("hostPID is not true");
    if (agent.securityContext?.privileged !== true) p.push("the agent is not privileged");
    if (doctor.securityContext?.privileged !== true) p.push("doctor is not privileged like the agent");
    if (doctor.args?.[0] !== "doctor") p.push("the init container does not run doctor");
    if (agent.args?.[0] !== "run") p.push("the agent container does not run `run`");
    const tokenFile = flag(agent.args, "--token-file");
    const tokenVolume = tokenFile && volumeFor(spec, agent, tokenFile.slice(0, tokenFile.lastIndexOf("/")));
    if (!tokenVolume?.secret) p.push(`--token-file ${tokenFile} is not on a Secret volume`);
    else {
      const secret = objects.find((o) => o.kind === "Secret" && o.metadata.name === tokenVolume.secret.secretName);
      if (!secret?.data?.token) p.push(`the token volume's Secret ${tokenVolume.secret.secretName} has no key "token"`);
    }
    if (flag(doctor.args, "--token-file") !== tokenFile) p.push("doctor checks another token file");
    const node = agent.env?.find((e) => e.name === "WARPSCOPE_NODE_NAME");
    if (node?.valueFrom?.fieldRef?.fieldPath !== "spec.nodeName") p.push("WARPSCOPE_NODE_NAME is not the node's name");
    const socket = flag(agent.args, "--cuda-socket");
    const libraryDir = flag(agent.args, "--cuda-library-dir");
    if (!socket || !libraryDir || !socket.startsWith(libraryDir + "/")) {
      p.push("the CUDA socket and the library copy are not in one directory");
    } else if (!volumeFor(spec, agent, libraryDir)?.hostPath) p.push(`${libraryDir} is not a hostPath`);
    if (!volumeFor(spec, agent, flag(agent.args, "--state-dir"))?.hostPath) p.push("--state-dir is not a hostPath");
    // The systemd unit's bounds: CPUQuota=100%, MemoryMax=1G.
    if (agent.resources?.limits?.cpu !== "1") p.push(`cpu limit ${agent.resources?.limits?.cpu}, not 1`);
    if (agent.resources?.limits?.memory !== "1Gi") p.push(`memory limit ${agent.resources?.limits?.memory}, not 1Gi`);
    if (!agent.livenessProbe?.httpGet || !agent.readinessProbe?.httpGet) p.push("no HTTP probes");
    const port = agent.ports?.find((x) => x.name === agent.livenessProbe?.httpGet?.port);
    if (!port || !flag(agent.args, "--metrics-listen")?.endsWith(`:${port.containerPort}`)) {
      p.push("the probes' port is not --metrics-listen's");
    }
    if (!spec.tolerations?.some((t) => t.key === "nvidia.com/gpu")) p.push("no toleration of nvidia.com/gpu taints");
    if (!objects.some((o) => o.kind === "PriorityClass" && o.metadata.name === spec.priorityClassName)) {
      p.push(`priority class ${spec.priorityClassName} is not defined`);
    }
    const sa = spec.serviceAccountName;
    const binding = objects.find((o) => o.kind === "ClusterRoleBinding" && o.subjects?.some((s) => s.name === sa));
    const role = binding && find(objects, "ClusterRole", binding.roleRef.name);
    if (!role?.rules?.some((r) => r.resources.includes("pods") && r.verbs.includes("list"))) {
      p.push("the agent's service account may not list pods");
    }
    return p;
  });
  semantic(`${overlay}: the server runs locked down behind its Service`, () => {
    const p = [];
    const server = objects.find((o) => ["StatefulSet", "Deployment"].includes(o.kind) && o.metadata.name === "warpscope-server");
    if (!server) return ["no warpscope-server workload"];
    const spec = server.spec.template.spec;
    const c = container(spec, "server");
    if (c.securityContext?.readOnlyRootFilesystem !== true) p.push("root file system not read-only");
    if (c.securityContext?.allowPrivilegeEscalation !== false) p.push("privilege escalation allowed");
    if (!c.securityContext?.capabilities?.drop?.includes("ALL")) p.push("capabilities not dropped");
    if (spec.securityContext?.runAsNonRoot !== true) p.push("may run as root");
    for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"]) {
      if (c[probe]?.httpGet?.path !== "/healthz") p.push(`${probe} is not GET /healthz`);
    }
    const service = find(objects, "Service", "warpscope-server");
    const labels = server.spec.template.metadata.labels;
    if (!Object.entries(service.spec.selector).every(([k, v]) => labels[k] === v)) p.push("the Service selects other pods");
    if (flag(c.args, "--listen") !== "0.0.0.0:7070") p.push("not listening on the pod's address");
    if (!flag(c.args, "--token-file")) p.push("no token");
    if (server.kind === "StatefulSet") {
      const data = flag(c.args, "--data-dir");
      const m = c.volumeMounts?.find((x) => x.mountPath === data);
      if (!m || !server.spec.volumeClaimTemplates?.some((t) => t.metadata.name === m.name)) {
        p.push(`--data-dir ${data} is not on a PersistentVolumeClaim`);
      }
    } else if (!flag(c.args, "--storage")?.startsWith("$(")) p.push("no --storage for ClickHouse");
    return p;
  });
}

// The images scripts/images.sh tags with the project's version.
const version = /project\(warpscope VERSION ([0-9.]+)/.exec(readFileSync(path.join(repoRoot, "CMakeLists.txt"), "utf8"))[1];
for (const overlay of ["overlays/embedded", "overlays/clickhouse"]) {
  semantic(`${overlay}: every warpscope container runs version ${version}`, () =>
    (rendered[overlay] || [])
      .filter((o) => o.spec?.template?.spec)
      .flatMap((o) => [...(o.spec.template.spec.initContainers || []), ...o.spec.template.spec.containers])
      .filter((c) => !c.image.endsWith(`:${version}`))
      .map((c) => `${c.name} runs ${c.image}`));
}

semantic("gpu-time: the patch gives a workload the socket, the library and CUDA_INJECTION64_PATH", () => {
  const p = [];
  const d = find(rendered["gpu-time"] || [], "Deployment", "trainer");
  const spec = d.spec.template.spec;
  const c = container(spec, "trainer");
  const path = c.env?.find((e) => e.name === "CUDA_INJECTION64_PATH")?.value;
  if (path !== "/run/warpscope/libwarpscope_cuda.so") p.push(`CUDA_INJECTION64_PATH is ${path}`);
  if (volumeFor(spec, c, "/run/warpscope")?.hostPath?.path !== "/run/warpscope") p.push("/run/warpscope is not the host's");
  if (!c.resources?.limits?.["nvidia.com/gpu"]) p.push("the workload's own settings were lost");
  return p;
});

console.log(failures ? `${failures} check(s) failed` : "all manifest checks passed");
process.exit(failures ? 1 : 0);
