// Validates the Kubernetes manifests offline, in two passes:
//  1. the Kubernetes API schema (OpenAPI, compiled by kubernetes-models; the Prometheus Operator CRDs'
//     schemas for ServiceMonitor and PrometheusRule): types, required fields, enums, formats;
//  2. unknown fields: those schemas allow fields they do not know, while the API server (strict field
//     validation, kubectl's default) rejects them. A typed TypeScript constant per object, checked by
//     tsc, fails on any field the API does not have (excess property check).
// Each folder given is a kustomization, built here as `kubectl kustomize` would for what we use:
// resources (manifest files, or folders with their own kustomization) and RFC 6902 patches aimed at
// one object by kind and name. An overlay (deploy/kubernetes-secure) is validated as the objects it
// builds, patches applied. Every YAML file of a folder must be a listed resource or patch, and every
// listed one must exist. Where kubectl is installed, the objects built here must equal its own.
// usage: node validate_k8s.mjs KUSTOMIZATION_DIR...
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const here = path.dirname(fileURLToPath(import.meta.url));
const dirs = process.argv.length > 2 ? process.argv.slice(2).map((d) => path.resolve(d))
                                     : [path.resolve(here, "../../deploy/kubernetes")];

// apiVersion + kind -> the module of its model and the name of its TypeScript interface. A manifest of
// a kind missing here fails: add its model rather than let it pass unchecked.
const core = "kubernetes-models";
const operator = "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
const models = {
  "apps/v1 Deployment": [`${core}/apps/v1/Deployment`, "Deployment", "IDeployment"],
  "v1 Service": [`${core}/v1/Service`, "Service", "IService"],
  "policy/v1 PodDisruptionBudget": [`${core}/policy/v1/PodDisruptionBudget`, "PodDisruptionBudget", "IPodDisruptionBudget"],
  "monitoring.coreos.com/v1 ServiceMonitor": [`${operator}/ServiceMonitor`, "ServiceMonitor", "IServiceMonitor"],
  "monitoring.coreos.com/v1 PrometheusRule": [`${operator}/PrometheusRule`, "PrometheusRule", "IPrometheusRule"],
};

const failures = [];
const fail = (what, message) => failures.push(`${what}: ${message}`);

const readYaml = (file) => parseAllDocuments(fs.readFileSync(file, "utf8"));

// One RFC 6902 operation (add, replace, remove) on `obj`, in place.
function applyOperation(obj, op) {
  const keys = op.path.split("/").slice(1).map((k) => k.replace(/~1/g, "/").replace(/~0/g, "~"));
  const last = keys.pop();
  let parent = obj;
  for (const k of keys) {
    parent = parent?.[Array.isArray(parent) ? Number(k) : k];
    if (parent === undefined || parent === null) throw new Error(`${op.op} ${op.path}: no such path`);
  }
  const exists = Array.isArray(parent) ? Number(last) < parent.length : Object.hasOwn(parent, last);
  switch (op.op) {
    case "add":
      if (!Array.isArray(parent)) parent[last] = structuredClone(op.value);
      else if (last === "-") parent.push(structuredClone(op.value));
      else parent.splice(Number(last), 0, structuredClone(op.value));
      return;
    case "replace":
      if (!exists) throw new Error(`replace ${op.path}: nothing there to replace`);
      parent[Array.isArray(parent) ? Number(last) : last] = structuredClone(op.value);
      return;
    case "remove":
      if (!exists) throw new Error(`remove ${op.path}: nothing there to remove`);
      if (Array.isArray(parent)) parent.splice(Number(last), 1); else delete parent[last];
      return;
    default:
      throw new Error(`${op.op} ${op.path}: only add, replace and remove are supported here`);
  }
}

// The objects a kustomization folder builds, each as { what, obj }.
function build(dir) {
  const name = path.relative(process.cwd(), dir) || ".";
  const kustomization = readYaml(path.join(dir, "kustomization.yaml"))[0].toJS();
  const listed = kustomization.resources ?? [];
  const patches = kustomization.patches ?? [];
  // The folder's YAML files are exactly its file resources and its patches.
  const yamlFiles = fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f) && f !== "kustomization.yaml").sort();
  const named = [...listed, ...patches.map((p) => p.path)];
  for (const f of yamlFiles) if (!named.includes(f)) fail(`${name}/kustomization.yaml`, `does not list ${f}`);
  const built = [];
  for (const resource of listed) {
    const target = path.join(dir, resource);
    if (!fs.existsSync(target)) { fail(`${name}/kustomization.yaml`, `lists ${resource}, which does not exist`); continue; }
    if (fs.statSync(target).isDirectory()) { built.push(...build(target)); continue; }
    for (const [i, doc] of readYaml(target).entries()) {
      const what = `${path.relative(process.cwd(), target)}#${i}`;
      if (doc.errors.length) { fail(what, `YAML: ${doc.errors.map((e) => e.message).join("; ")}`); continue; }
      const obj = doc.toJS();
      if (obj !== null) built.push({ what, obj });
    }
  }
  for (const patch of patches) {
    const what = `${name}/${patch.path}`;
    if (!fs.existsSync(path.join(dir, patch.path))) { fail(what, "listed as a patch, does not exist"); continue; }
    const aimed = built.filter((b) => b.obj.kind === patch.target?.kind && b.obj.metadata?.name === patch.target?.name);
    if (aimed.length !== 1) { fail(what, `its target must match one object; matches ${aimed.length}`); continue; }
    try {
      for (const op of readYaml(path.join(dir, patch.path))[0].toJS()) applyOperation(aimed[0].obj, op);
      aimed[0].what += ` patched by ${what}`;
    } catch (e) {
      fail(what, e.message);
    }
  }
  return built;
}

// Where kubectl is installed (it is not in CI: Debian's kubernetes-client is 1.20), what it builds must
// be what build() built: the check above validates what would really be applied.
function compareWithKubectl(dir, built) {
  let out;
  try {
    out = execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    if (e.code === "ENOENT") return false;
    fail(dir, `kubectl kustomize failed: ${e.stderr ?? e.message}`);
    return true;
  }
  const key = (o) => `${o.kind}/${o.metadata?.name}`;
  const theirs = new Map(parseAllDocuments(out).map((d) => d.toJS()).filter((o) => o).map((o) => [key(o), o]));
  const canonical = (v) => JSON.stringify(v, (k, x) => (x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b))) : x));
  for (const { what, obj } of built) {
    if (!theirs.has(key(obj))) fail(what, "kubectl kustomize does not build it");
    else if (canonical(theirs.get(key(obj))) !== canonical(obj)) fail(what, "differs from what kubectl kustomize builds");
  }
  if (theirs.size !== built.length) fail(dir, `kubectl kustomize builds ${theirs.size} objects, this script ${built.length}`);
  return true;
}

// Pass 1: the schema.
const typed = [];  // [import line, const line] for pass 2
let objects = 0;
const kubectlChecked = [];
for (const dir of dirs) {
  const built = build(dir);
  if (built.length === 0) fail(dir, "no manifests found");
  if (compareWithKubectl(dir, built)) kubectlChecked.push(path.basename(dir));
  for (const { what, obj } of built) {
    const key = `${obj.apiVersion} ${obj.kind}`;
    const model = models[key];
    if (!model) { fail(what, `no schema known for ${key} (add it to validate_k8s.mjs)`); continue; }
    const [module, className, iface] = model;
    const Model = (await import(module))[className];
    try {
      new Model(obj).validate();
    } catch (e) {
      fail(what, `${key} ${obj.metadata?.name}: ${e.message}`);
    }
    if (!obj.metadata?.name) fail(what, "metadata.name is missing");
    const alias = `T${objects}`;
    typed.push([`import type { ${iface} as ${alias} } from "${module}";`,
                `// ${what}\nexport const o${objects}: ${alias} = ${JSON.stringify(obj, null, 2)};`]);
    objects++;
  }
}

// Pass 2: unknown fields, through tsc. Its file sits in a temporary folder whose node_modules points at
// ours, so the imports resolve as they would beside this script.
const work = fs.mkdtempSync(path.join(os.tmpdir(), "gpusort-k8s-"));
try {
  fs.symlinkSync(path.join(here, "node_modules"), path.join(work, "node_modules"));
  fs.writeFileSync(path.join(work, "manifests.ts"),
                   typed.map((t) => t[0]).join("\n") + "\n\n" + typed.map((t) => t[1]).join("\n\n") + "\n");
  try {
    execFileSync(process.execPath, [path.join(here, "node_modules/typescript/bin/tsc"), "--noEmit", "--strict",
                                    "--skipLibCheck", "--moduleResolution", "node10", "--module", "commonjs",
                                    "--target", "es2020", path.join(work, "manifests.ts")],
                 { cwd: work, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    // tsc names lines of the generated file: name the manifest and show the line instead.
    const lines = fs.readFileSync(path.join(work, "manifests.ts"), "utf8").split("\n");
    const where = (n) => {
      let i = n - 1;
      while (i > 0 && !lines[i].startsWith("// ")) i--;
      return `${lines[i].slice(3)} near: ${lines[n - 1].trim()}`;
    };
    const report = `${e.stdout}${e.stderr}`.replace(/manifests\.ts\((\d+),\d+\)/g, (_, n) => where(Number(n)));
    fail("unknown or mistyped fields (tsc)", `\n${report}`);
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}

if (failures.length) {
  for (const f of failures) console.error(`FAIL: ${f}`);
  process.exit(1);
}
console.log(`kubernetes manifests: ${objects} objects built from ${dirs.map((d) => path.basename(d)).join(", ")} ` +
            `valid (schema + no unknown fields); ` +
            (kubectlChecked.length ? `equal to kubectl kustomize for ${kubectlChecked.join(", ")}` : "kubectl not installed: not compared with kubectl kustomize"));
