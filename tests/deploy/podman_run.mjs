// Turns one container of a rendered Kubernetes workload into the `podman run`
// that runs it the way a kubelet would on one node, so that the manifests
// themselves drive the container test: host PID namespace, privileges and
// the locked-down security context, user and fsGroup, env (the downward API's
// node name, ConfigMap and Secret keys), every volume mount (hostPath, Secret
// files, PersistentVolumeClaims as named volumes, emptyDir), CPU and memory
// limits, the grace period, the image and its args.
//
// `podman kube play` cannot stand in: it has no DaemonSet and ignores hostPID.
import { chmodSync, chownSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { find } from "./manifests.mjs";

// Host paths the container must see as they are; any other hostPath is
// placed under opts.hostRoot, so a test leaves the machine's own alone.
const REAL_HOST_PATHS = ["/sys", "/proc", "/dev"];

export function podmanRunArgs(objects, opts) {
  const [kind, name] = opts.workload.split("/");
  const workload = find(objects, kind, name);
  const pod = workload.spec.template.spec;
  const list = opts.init ? pod.initContainers : pod.containers;
  const c = list?.find((x) => x.name === opts.container);
  if (!c) throw new Error(`${opts.workload} has no ${opts.init ? "init " : ""}container ${opts.container}`);
  const args = ["run", "--pull=never", "--name", opts.name];
  if (opts.detach) args.push("--detach");
  if (opts.remove) args.push("--rm");

  if (pod.hostNetwork) args.push("--network=host");
  else if (opts.network) args.push("--network", opts.network + (opts.alias ? `:alias=${opts.alias}` : ""));
  if (pod.hostPID) args.push("--pid=host");

  const psc = pod.securityContext || {};
  const sc = { ...psc, ...(c.securityContext || {}) };
  if (sc.privileged) args.push("--privileged");
  if (sc.readOnlyRootFilesystem) {
    // Kubernetes adds no writable /tmp or /run to a read-only root: neither may podman.
    args.push("--read-only", "--read-only-tmpfs=false");
  }
  if (sc.allowPrivilegeEscalation === false) args.push("--security-opt=no-new-privileges");
  for (const cap of sc.capabilities?.drop || []) args.push(`--cap-drop=${cap.toLowerCase()}`);
  for (const cap of sc.capabilities?.add || []) args.push(`--cap-add=${cap.toLowerCase()}`);
  if (sc.seccompProfile?.type === "Unconfined") args.push("--security-opt=seccomp=unconfined");
  if (sc.runAsUser !== undefined) args.push("--user", `${sc.runAsUser}${sc.runAsGroup !== undefined ? `:${sc.runAsGroup}` : ""}`);
  if (psc.fsGroup !== undefined) args.push("--group-add", String(psc.fsGroup));

  const configMap = (ref) => find(objects, "ConfigMap", ref.name).data[ref.key];
  const secretValue = (ref) => Buffer.from(find(objects, "Secret", ref.name).data[ref.key], "base64").toString();
  for (const e of c.env || []) {
    let value = e.value;
    const from = e.valueFrom;
    if (from?.fieldRef) {
      const field = from.fieldRef.fieldPath;
      value = { "spec.nodeName": opts.nodeName, "metadata.name": opts.name, "metadata.namespace": workload.metadata.namespace }[field];
      if (value === undefined) throw new Error(`env ${e.name}: fieldRef ${field} has no stand-in`);
    } else if (from?.configMapKeyRef) value = configMap(from.configMapKeyRef);
    else if (from?.secretKeyRef) value = secretValue(from.secretKeyRef);
    args.push("--env", `${e.name}=${value ?? ""}`);
  }

  for (const m of c.volumeMounts || []) {
    const v = pod.volumes?.find((x) => x.name === m.name);
    const claim = workload.spec.volumeClaimTemplates?.find((t) => t.metadata.name === m.name);
    const ro = m.readOnly ? ":ro" : "";
    if (v?.hostPath) {
      const real = REAL_HOST_PATHS.some((p) => v.hostPath.path === p || v.hostPath.path.startsWith(p + "/"));
      const host = real ? v.hostPath.path : path.join(opts.hostRoot, v.hostPath.path);
      if (v.hostPath.type === "DirectoryOrCreate") mkdirSync(host, { recursive: true, mode: 0o755 });
      args.push("--volume", `${host}:${m.mountPath}${ro}`);
    } else if (v?.secret) {
      // A Secret volume: a read-only directory of one file per key, with the
      // volume's mode, group-owned by the pod's fsGroup as the kubelet does.
      const dir = path.join(opts.secretsDir, `${opts.name}-${m.name}`);
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      const secret = find(objects, "Secret", v.secret.secretName);
      for (const [key, b64] of Object.entries(secret.data || {})) {
        const file = path.join(dir, key);
        writeFileSync(file, Buffer.from(b64, "base64"));
        if (psc.fsGroup !== undefined) chownSync(file, 0, psc.fsGroup);
        chmodSync(file, v.secret.defaultMode ?? 0o644);
      }
      args.push("--volume", `${dir}:${m.mountPath}:ro`);
    } else if (claim || v?.persistentVolumeClaim || v?.emptyDir) {
      args.push("--volume", `${opts.volumePrefix}-${m.name}:${m.mountPath}${ro}`);
    } else {
      throw new Error(`volume ${m.name} of ${opts.container}: no stand-in for ${JSON.stringify(v)}`);
    }
  }

  const limits = c.resources?.limits || {};
  if (limits.cpu) args.push("--cpus", String(parseCpu(limits.cpu)));
  if (limits.memory) args.push("--memory", `${parseBytes(limits.memory)}`);
  if (pod.terminationGracePeriodSeconds !== undefined) args.push("--stop-timeout", String(pod.terminationGracePeriodSeconds));
  for (const [portName, hostSide] of Object.entries(opts.publish || {})) {
    const port = c.ports?.find((p) => p.name === portName);
    if (!port) throw new Error(`${opts.container} has no port named ${portName}`);
    args.push("--publish", `${hostSide}:${port.containerPort}`);
  }
  if (c.command) args.push("--entrypoint", c.command[0]);
  args.push(c.image);
  if (c.command) args.push(...c.command.slice(1));
  args.push(...(c.args || []), ...(opts.extraArgs || []));
  return args;
}

function parseCpu(q) {
  return String(q).endsWith("m") ? Number(String(q).slice(0, -1)) / 1000 : Number(q);
}

function parseBytes(q) {
  const m = /^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(q));
  if (!m) throw new Error(`memory quantity ${q}`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2]] ?? 1;
  return Number(m[1]) * unit;
}
