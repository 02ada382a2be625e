/**
 * `npm run bench -- --profile`: each process runs with `--cpu-prof` (V8's
 * sampling profiler, written when the process exits), and this turns every
 * .cpuprofile into a top-20 of self time by function, and self time by
 * package, so where the time goes can be read without opening DevTools. The
 * raw profiles stay beside the summary for DevTools or speedscope.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** `node_modules/pg-pool/…` → pg-pool; node's own code → node:internal; the project's files by their path. */
function packageOf(url: string, root: string): string {
  if (!url) return "(native / runtime)";
  if (url.startsWith("node:")) return "node:internal";
  const modules = url.lastIndexOf("node_modules/");
  if (modules >= 0) {
    const [scopeOrName, name] = url.slice(modules + "node_modules/".length).split("/");
    return scopeOrName!.startsWith("@") ? `${scopeOrName}/${name}` : scopeOrName!;
  }
  const file = url.replace(/^file:\/\//, "");
  return file.startsWith(root) ? path.dirname(path.relative(root, file)) + "/" : file;
}

function summarise(profile: CpuProfile, root: string) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const packages = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id)!;
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    total += ms;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? `${url.replace(`file://${root}/`, "")}:${lineNumber + 1}` : "";
    const key = `${functionName || "(anonymous)"} ${where}`.trim();
    self.set(key, (self.get(key) ?? 0) + ms);
    const pkg = ["(idle)", "(garbage collector)", "(program)"].includes(functionName) ? functionName : packageOf(url, root);
    packages.set(pkg, (packages.get(pkg) ?? 0) + ms);
  });
  const top = (m: Map<string, number>, n: number) =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, ms]) => ({ name, ms: Math.round(ms), share: Math.round((ms / total) * 1000) / 10 }));
  return { totalMs: Math.round(total), functions: top(self, 20), packages: top(packages, 15) };
}

/** Writes summary.md (and summary.json) beside the profiles in `dir`; returns the markdown. */
export function summariseProfiles(dir: string, root: string): string {
  const files = (readdirSync(dir, { recursive: true }) as string[]).filter((f) => f.endsWith(".cpuprofile")).sort();
  const out: string[] = [`# CPU profiles (${files.length})`, ""];
  const json: Record<string, unknown> = {};
  for (const file of files) {
    const summary = summarise(JSON.parse(readFileSync(path.join(dir, file), "utf8")) as CpuProfile, root);
    json[file] = summary;
    out.push(`## ${file} (${(summary.totalMs / 1000).toFixed(1)} s sampled)`, "", "| self ms | share | function |", "|---:|---:|---|");
    for (const f of summary.functions) out.push(`| ${f.ms} | ${f.share}% | \`${f.name}\` |`);
    out.push("", "| self ms | share | package |", "|---:|---:|---|");
    for (const p of summary.packages) out.push(`| ${p.ms} | ${p.share}% | ${p.name} |`);
    out.push("");
  }
  const markdown = out.join("\n");
  writeFileSync(path.join(dir, "summary.md"), markdown);
  writeFileSync(path.join(dir, "summary.json"), JSON.stringify(json, null, 2));
  return markdown;
}
