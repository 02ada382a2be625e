import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import type { Queryable } from "../../lib/db.js";

/** One sample line of the Prometheus text format. */
export interface ExpositionSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Every sample in a /metrics body; HELP and TYPE lines are not samples. */
export function parseExposition(text: string): ExpositionSample[] {
  const samples: ExpositionSample[] = [];
  for (const line of text.split("\n")) {
    const match = SAMPLE_LINE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, raw] of (match[2] ?? "").matchAll(LABEL)) {
      labels[key!] = raw!.replace(/\\n/g, "\n").replace(/\\(["\\])/g, "$1");
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/**
 * The value of the one sample named `name` that carries every label given
 * (others, such as `process`, may be there too); undefined when there is none.
 * Throws when several match, so a test never reads the wrong series.
 */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = parseExposition(text).filter(
    (s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value),
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

/** A scrape of the API's metrics server (not its public port, which answers 404 for /metrics). */
export async function scrapeApi(api: { metrics?: FastifyInstance }): Promise<LightMyRequestResponse> {
  if (!api.metrics) throw new Error("this test API has no metrics server: build it with buildTestApi");
  return api.metrics.inject({ method: "GET", url: "/metrics" });
}

export async function scrape(port: number): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(15_000) });
  return { status: res.status, text: await res.text() };
}

/** A job for a task no process runs, due in an hour: it stays `scheduled` in worker_jobs. */
export const PROBE_TASK = "metrics_probe";

export async function addProbeJob(db: Queryable): Promise<void> {
  await db.query(`select graphile_worker.add_job($1, '{}'::json, run_at => now() + interval '1 hour')`, [PROBE_TASK]);
}
