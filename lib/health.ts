import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from "fastify";
import { pingDatabase, type Pool } from "./db.js";
import type { Logger } from "./logger.js";
import { registerMetricsRoute, type Registry } from "./metrics.js";
import { problemBody, problems } from "./problems.js";

export const READINESS_TIMEOUT_MS = 2_000;

export interface HealthOptions {
  pool: Pool;
  problemBaseUrl: string;
}

/**
 * /healthz touches nothing; /readyz pings the database within 2 s. Used by
 * the API app and by the relay's and notifier's health servers.
 */
export const healthRoutes: FastifyPluginAsync<HealthOptions> = async (app, { pool, problemBaseUrl }) => {
  app.get("/healthz", { config: { auth: "public" }, schema: { hide: true } }, async () => ({ status: "ok" }));
  app.get("/readyz", { config: { auth: "public" }, schema: { hide: true } }, async (_request, reply) => {
    if (await pingDatabase(pool, READINESS_TIMEOUT_MS)) return { status: "ready" };
    const problem = problems.notReady();
    return reply.code(503).type("application/problem+json").send(problemBody(problemBaseUrl, problem));
  });
};

export interface HealthServerOptions extends HealthOptions {
  host: string;
  port: number;
  logger: Logger;
  /** Extra routes, such as /metrics. */
  register?: (app: FastifyInstance) => Promise<void> | void;
}

/** A process's own small server, beside its work: its lines tagged with the component, its requests not logged. */
function internalServer(logger: Logger, component: string): FastifyInstance {
  return Fastify({ loggerInstance: logger.child({ component }) as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true }) });
}

/** The small HTTP server the relay and the notifier run on their health port. */
export async function startHealthServer(options: HealthServerOptions): Promise<FastifyInstance> {
  const app = internalServer(options.logger, "health");
  await app.register(healthRoutes, { pool: options.pool, problemBaseUrl: options.problemBaseUrl });
  await options.register?.(app);
  await app.listen({ host: options.host, port: options.port });
  return app;
}

/**
 * The API's metrics server, /metrics alone, for API_METRICS_ADDR: kept off the
 * public port, where anyone could read the routes' traffic and the process's
 * memory. Ready, not listening: api/main.ts listens, tests inject.
 */
export async function buildMetricsServer(logger: Logger, registry: Registry): Promise<FastifyInstance> {
  const app = internalServer(logger, "metrics");
  registerMetricsRoute(app, registry);
  await app.ready();
  return app;
}
