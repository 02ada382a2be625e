import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The Prometheus alerting rules in deploy/prometheus: promtool accepts them,
 * their unit tests (alerts.test.yml) fire on synthetic series, every metric
 * they name is registered somewhere in the source, and every runbook link
 * points at a heading of docs/operations.md. promtool comes from Debian's
 * `prometheus` package (.ci/run installs it).
 */
const root = path.resolve(import.meta.dirname, "../..");
const rulesFile = path.join(root, "deploy/prometheus/alerts.yml");
const rulesTestFile = path.join(root, "deploy/prometheus/alerts.test.yml");
const configFile = path.join(root, "deploy/prometheus/prometheus.yml");
const runbookFile = path.join(root, "docs/operations.md");

/** Where the metric names are registered: the source, not the tests. */
const SOURCE_DIRS = ["api", "lib", "relay", "notifier", "jobs", "tasks"];

function findPromtool(): string | null {
  const dirs = (process.env.PATH ?? "").split(path.delimiter).filter((dir) => dir !== "");
  for (const dir of [...dirs, "/usr/bin"]) {
    const candidate = path.join(dir, "promtool");
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

function promtool(...args: string[]): string {
  const bin = findPromtool();
  if (!bin) throw new Error("promtool not found on PATH or at /usr/bin/promtool: install Debian's prometheus package");
  try {
    return execFileSync(bin, args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`promtool ${args.join(" ")} failed:\n${e.stdout ?? ""}${e.stderr ?? ""}`);
  }
}

const PROMQL_KEYWORDS = new Set(["and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"]);

/**
 * The metric names a PromQL expression selects: strings, label matchers,
 * ranges and grouping clauses removed, then every identifier that is not a
 * function or aggregation call (followed by "(") nor a keyword.
 */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  const names = new Set<string>();
  for (const match of stripped.matchAll(/(?<![A-Za-z0-9_:.])[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const name = match[0];
    const rest = stripped.slice(match.index + name.length).trimStart();
    if (rest.startsWith("(") || PROMQL_KEYWORDS.has(name.toLowerCase())) continue;
    names.add(name);
  }
  return [...names];
}

/** The expr of every rule; alerts.yml keeps each on one line so that this needs no YAML parser. */
function ruleExpressions(text: string): string[] {
  return [...text.matchAll(/^\s*expr:\s*(.+)$/gm)].map((m) => m[1]!.trim());
}

function sourceTexts(): string[] {
  const texts: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== "node_modules" && entry.name !== "dist") walk(full);
      } else if (entry.name.endsWith(".ts")) texts.push(readFileSync(full, "utf8"));
    }
  };
  for (const dir of SOURCE_DIRS) walk(path.join(root, dir));
  return texts;
}

/** A heading's anchor as GitHub renders it: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, "")
    .replace(/ /g, "-");
}

describe("Prometheus alerting rules", () => {
  it("pass promtool check rules, and the sample scrape config passes promtool check config", () => {
    expect(promtool("check", "rules", rulesFile)).toMatch(/SUCCESS/);
    expect(promtool("check", "config", configFile)).toMatch(/SUCCESS/);
  });

  it("fire as their unit tests expect (promtool test rules)", () => {
    expect(promtool("test", "rules", rulesTestFile)).toMatch(/SUCCESS/);
  });

  it("name only metrics the processes register", () => {
    const text = readFileSync(rulesFile, "utf8");
    const exprs = ruleExpressions(text);
    const alerts = [...text.matchAll(/^\s*- alert:\s*(\S+)/gm)].map((m) => m[1]);
    // One single-line expr per alert: a multi-line expr would escape the check below.
    expect(exprs).toHaveLength(alerts.length);
    expect(alerts.length).toBeGreaterThan(0);

    const sources = sourceTexts();
    const names = new Set(exprs.flatMap(metricNames));
    names.delete("up"); // Prometheus's own, per scrape target.
    expect(names.size).toBeGreaterThan(0);
    const missing = [...names]
      .map((name) => name.replace(/_(?:bucket|sum|count)$/, ""))
      .filter((base) => !sources.some((source) => source.includes(`"${base}"`)));
    expect(missing, `metrics in alerts.yml that no source file registers: ${missing.join(", ")}`).toEqual([]);
  });

  it("finds metric names in expressions, and would catch a renamed one", () => {
    expect(
      metricNames(`histogram_quantile(0.95, sum by (le) (rate(http_request_duration_seconds_bucket{route!~".+/photos"}[5m]))) > 0.5`),
    ).toEqual(["http_request_duration_seconds_bucket"]);
    expect(metricNames(`max by (channel) (delta(notifications{status="dead_letter"}[15m])) > 10`)).toEqual(["notifications"]);
    expect(metricNames(`up{job="relay"} == 0 and on (instance) relay_published_total`)).toEqual(["up", "relay_published_total"]);
    const renamed = "relay_publish_failure_total";
    expect(sourceTexts().some((source) => source.includes(`"${renamed}"`))).toBe(false);
  });

  it("link every runbook to a heading of docs/operations.md", () => {
    const text = readFileSync(rulesFile, "utf8");
    const links = [...text.matchAll(/^\s*runbook:\s*(\S+)$/gm)].map((m) => m[1]!);
    expect(links.length).toBe(ruleExpressions(text).length);
    const headings = new Set(
      [...readFileSync(runbookFile, "utf8").matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => anchorOf(m[1]!)),
    );
    const broken = links.filter((link) => !link.startsWith("docs/operations.md#") || !headings.has(link.split("#")[1]!));
    expect(broken, `runbook links with no heading: ${broken.join(", ")}`).toEqual([]);
  });
});
