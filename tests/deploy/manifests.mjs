// Renders deploy/kubernetes with kustomize (kubectl's, offline) into plain
// objects, for the manifest check and the container test. A kustomization
// whose secretGenerator needs files (the token, ClickHouse's password) is
// rendered from a copy with those files written in.
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const kubernetesDir = path.join(repoRoot, "deploy/kubernetes");

// The kustomizations users apply or copy from, relative to deploy/kubernetes,
// with the files their secretGenerators read (users write those).
export const kustomizations = {
  "overlays/embedded": ["token"],
  "overlays/clickhouse": ["token", "clickhouse-password"],
  "gpu-time": [],
};

export function kubectl(args, input) {
  try {
    return execFileSync("kubectl", args, {
      input,
      encoding: "utf8",
      stdio: ["pipe", "pipe", "pipe"],
      // No cluster: nothing may reach for one.
      env: { ...process.env, KUBECONFIG: "/dev/null" },
    });
  } catch (e) {
    if (e.code === "ENOENT") {
      throw new Error("kubectl (with kustomize, 1.21 or newer) is needed to render deploy/kubernetes and was not found");
    }
    throw new Error(`kubectl ${args.join(" ")}: ${(e.stderr || e.message).toString().trim()}`);
  }
}

// The rendered objects of one kustomization. `files` are written into the
// copy first, relative to the kustomization: {"overlays/embedded/token": "..."}.
export function render(kustomization, files = {}) {
  const work = mkdtempSync(path.join(tmpdir(), "ws-kustomize-"));
  try {
    const copy = path.join(work, "kubernetes");
    cpSync(kubernetesDir, copy, { recursive: true });
    for (const [name, content] of Object.entries(files)) writeFileSync(path.join(copy, name), content);
    const text = kubectl(["kustomize", path.join(copy, kustomization)]);
    return parseAllDocuments(text)
      .map((d) => {
        if (d.errors.length) throw new Error(`${kustomization}: ${d.errors[0].message}`);
        return d.toJS();
      })
      .filter(Boolean);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

// Stand-ins for the files a kustomization's generators read.
export function standInFiles(kustomization) {
  return Object.fromEntries(
    kustomizations[kustomization].map((name) => [path.join(kustomization, name), `stand-in-${name}-0123456789abcdef\n`]),
  );
}

export function find(objects, kind, name) {
  const o = objects.find((x) => x.kind === kind && x.metadata?.name === name);
  if (!o) throw new Error(`no ${kind}/${name} among ${objects.map((x) => `${x.kind}/${x.metadata?.name}`).join(", ")}`);
  return o;
}
