import type { FastifyInstance } from "fastify";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Queryable } from "./db.js";

export { Counter, Gauge, Histogram, Registry };

/** One registry per process, with Node's default metrics (RSS, event-loop lag, GC). */
export function createMetricsRegistry(processName: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ process: processName });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** GET /metrics in Prometheus text format. Hidden from the OpenAPI document. */
export function registerMetricsRoute(app: FastifyInstance, registry: Registry): void {
  app.get("/metrics", { config: { auth: "public" }, schema: { hide: true } }, async (_request, reply) => {
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}

/** A scrape-time read gets this long: a slow or unreachable source must not hold up the scrape. */
export const SCRAPE_READ_TIMEOUT_MS = 1_000;

export interface Sample {
  labels?: Record<string, string>;
  value: number;
}

export interface SourcedGaugeOptions {
  name: string;
  help: string;
  labelNames?: string[];
  /** What the read talks to (postgres, nats): a label on metrics_source_up. */
  source: string;
  /** Every sample of the gauge; the gauge is replaced by them only when the read succeeds. */
  read: () => Promise<Sample[]>;
}

/** The reads of one registry's sourced gauges, each shared by its gauge and metrics_source_up within a scrape. */
type SourceReads = Map<string, { source: string; refresh: () => Promise<boolean> }>;
const sourceReads = new WeakMap<Registry, SourceReads>();

function readsOf(registry: Registry): SourceReads {
  let reads = sourceReads.get(registry);
  if (reads) return reads;
  const all: SourceReads = new Map();
  sourceReads.set(registry, all);
  new Gauge({
    name: "metrics_source_up",
    help: "1 when the metric's scrape-time read succeeded at this scrape, 0 when it failed or timed out (the metric then shows its last values)",
    labelNames: ["metric", "source"],
    registers: [registry],
    async collect() {
      await Promise.all([...all].map(async ([metric, { source, refresh }]) => this.set({ metric, source }, (await refresh()) ? 1 : 0)));
    },
  });
  return all;
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`read timed out after ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/**
 * A gauge read from Postgres or NATS at scrape time. The read gets
 * SCRAPE_READ_TIMEOUT_MS; when it fails or times out the gauge keeps its last
 * values and metrics_source_up{metric,source} is 0, so an outage shows in the
 * scrape instead of failing it (a failing collect() fails the whole /metrics).
 */
export function registerSourcedGauge(registry: Registry, { name, help, labelNames = [], source, read }: SourcedGaugeOptions): void {
  let inFlight: Promise<boolean> | undefined;
  const gauge = new Gauge({ name, help, labelNames, registers: [registry], collect: () => refresh().then(() => undefined) });
  // One read per scrape, however many collectors ask for it.
  const refresh = (): Promise<boolean> =>
    (inFlight ??= withTimeout(Promise.resolve().then(read), SCRAPE_READ_TIMEOUT_MS)
      .then(
        (samples) => {
          gauge.reset();
          for (const { labels, value } of samples) {
            if (labels) gauge.set(labels, value);
            else gauge.set(value);
          }
          return true;
        },
        () => false,
      )
      .finally(() => {
        inFlight = undefined;
      }));
  readsOf(registry).set(name, { source, refresh });
}

/** HTTP request duration by route and status, observed once per response. */
export function registerHttpMetrics(app: FastifyInstance, registry: Registry): void {
  const histogram = new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request duration by method, route and status",
    labelNames: ["method", "route", "status"],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  app.addHook("onResponse", (request, reply, done) => {
    histogram.observe(
      { method: request.method, route: request.routeOptions.url ?? "unmatched", status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    done();
  });
}
