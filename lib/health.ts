import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from "fastify";
import { pingDatabase, type Pool } from "./db.js";
import type { Logger } from "./logger.js";
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

/** The small HTTP server the relay and the notifier run on their health port. */
export async function startHealthServer(options: HealthServerOptions): Promise<FastifyInstance> {
  const app = Fastify({ loggerInstance: options.logger.child({ component: "health" }) as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true }) });
  await app.register(healthRoutes, { pool: options.pool, problemBaseUrl: options.problemBaseUrl });
  await options.register?.(app);
  await app.listen({ host: options.host, port: options.port });
  return app;
}
