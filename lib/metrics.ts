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

/**
 * graphile-worker queue depth by task, read at scrape time. Both worker
 * processes (relay and notifier) expose it.
 */
export function registerWorkerQueueDepth(registry: Registry, db: Queryable): void {
  new Gauge({
    name: "worker_queue_depth",
    help: "graphile-worker jobs waiting (not locked), by task",
    labelNames: ["task", "state"],
    registers: [registry],
    async collect() {
      this.reset();
      const { rows } = await db.query<{ task: string; state: string; n: number }>(
        `select task_identifier as task,
                case when locked_at is not null then 'running'
                     when attempts >= max_attempts then 'failed'
                     else 'waiting' end as state,
                count(*)::int as n
         from graphile_worker.jobs
         group by 1, 2`,
      );
      for (const row of rows) this.set({ task: row.task, state: row.state }, row.n);
    },
  });
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
