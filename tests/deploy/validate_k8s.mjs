// Validates every manifest in deploy/kubernetes/ offline, in two passes:
//  1. the Kubernetes API schema (OpenAPI, compiled by kubernetes-models; the Prometheus Operator CRDs'
//     schemas for ServiceMonitor and PrometheusRule): types, required fields, enums, formats;
//  2. unknown fields: those schemas allow fields they do not know, while the API server (strict field
//     validation, kubectl's default) rejects them. A typed TypeScript constant per object, checked by
//     tsc, fails on any field the API does not have (excess property check).
// Also checks that kustomization.yaml lists every manifest of the folder and nothing else.
// usage: node validate_k8s.mjs DEPLOY_KUBERNETES_DIR
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = path.resolve(process.argv[2] ?? path.join(here, "../../deploy/kubernetes"));

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

// kustomization.yaml: the list of resources is the folder's manifests, exactly.
const kustomization = "kustomization.yaml";
const manifests = fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f) && f !== kustomization).sort();
const listed = parseAllDocuments(fs.readFileSync(path.join(dir, kustomization), "utf8"))[0].toJS().resources ?? [];
for (const f of manifests) if (!listed.includes(f)) fail(kustomization, `does not list ${f}`);
for (const f of listed) if (!manifests.includes(f)) fail(kustomization, `lists ${f}, which is not in ${dir}`);

// Pass 1: the schema.
const typed = [];  // [import line, const line] for pass 2
let objects = 0;
for (const file of manifests) {
  const docs = parseAllDocuments(fs.readFileSync(path.join(dir, file), "utf8"));
  for (const [i, doc] of docs.entries()) {
    const what = `${file}#${i}`;
    if (doc.errors.length) { fail(what, `YAML: ${doc.errors.map((e) => e.message).join("; ")}`); continue; }
    const obj = doc.toJS();
    if (obj === null) continue;
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

if (objects === 0) fail(dir, "no manifests found");
if (failures.length) {
  for (const f of failures) console.error(`FAIL: ${f}`);
  process.exit(1);
}
console.log(`kubernetes manifests: ${objects} objects in ${manifests.length} files valid (schema + no unknown fields)`);
