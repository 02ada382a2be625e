import cors from "@fastify/cors";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type RouteOptions } from "fastify";
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from "fastify-type-provider-zod";
import type { JetStreamClient } from "../lib/bus.js";
import type { ApiConfig } from "../lib/config.js";
import type { Pool } from "../lib/db.js";
import { healthRoutes } from "../lib/health.js";
import type { Logger } from "../lib/logger.js";
import { createMetricsRegistry, registerHttpMetrics, registerMetricsRoute, type Registry } from "../lib/metrics.js";
import { problems } from "../lib/problems.js";
import { adminRoutes } from "./admin/routes.js";
import { consoleRoutes } from "./console/routes.js";
import { emergencyRoutes } from "./emergency/routes.js";
import { moderationRoutes } from "./moderation/routes.js";
import { notificationRoutes } from "./notifications/routes.js";
import { createAuthenticator, registerAuth } from "./plugins/auth.js";
import { registerErrorHandling, sendProblem } from "./plugins/errors.js";
import { registerGracefulClose } from "./plugins/gracefulClose.js";
import { registerIpLimiter, type IpLimiter } from "./plugins/ipLimiter.js";
import { registerOpenApi } from "./plugins/openapi.js";
import { safetyRoutes } from "./safety/routes.js";

/** What every route module is given. */
export interface AppDeps {
  config: ApiConfig;
  pool: Pool;
  /** The bus, for admin requeue (it publishes through the relay's code path). */
  js: JetStreamClient;
}

export interface BuildAppOptions extends AppDeps {
  logger: Logger;
  /** Sees every route as it is registered; the admin role-gate test walks them. */
  onRoute?: (route: RouteOptions) => void;
  /** Prometheus registry; a fresh one per app when omitted. */
  metrics?: Registry;
  /** Monotonic milliseconds for the per-IP limiter; tests pass a clock they move themselves. */
  clock?: () => number;
}

/**
 * Builds the API. Hook order on every request: the per-IP limiter, then
 * authentication and RequireNotSuspended, then the route's gate; only then is
 * the body parsed and the route run.
 */
export async function buildApp({ logger, onRoute, metrics: registry, clock, ...deps }: BuildAppOptions): Promise<FastifyInstance> {
  const { config, pool } = deps;
  let limiter: IpLimiter | undefined;
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    trustProxy: config.API_TRUSTED_PROXY_CIDRS.length > 0 ? config.API_TRUSTED_PROXY_CIDRS : false,
    bodyLimit: config.API_BODY_LIMIT_BYTES,
    requestIdHeader: false,
    genReqId: () => crypto.randomUUID(),
    return503OnClosing: true,
    routerOptions: { maxParamLength: 200 },
    // A malformed URL or an over-long path parameter never reaches a route, so
    // no hook runs: the limiter and the problem rendering are applied here.
    frameworkErrors: (error, request, reply) => {
      if (limiter?.refuse(request, reply)) return;
      const problem =
        error.code === "FST_ERR_MAX_PARAM_LENGTH" ? problems.notFound("resource") : problems.validation("the URL is malformed");
      sendProblem(reply, config.PROBLEM_BASE_URL, problem);
    },
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.addHook("onSend", async (request, reply) => {
    reply.header("x-request-id", request.id);
  });
  registerGracefulClose(app);

  if (onRoute) app.addHook("onRoute", onRoute);
  registerErrorHandling(app, config.PROBLEM_BASE_URL, config.API_BODY_LIMIT_BYTES);
  limiter = registerIpLimiter(app, config.PROBLEM_BASE_URL, clock);
  const metrics = registry ?? createMetricsRegistry("api");
  registerHttpMetrics(app, metrics);
  registerMetricsRoute(app, metrics);
  // Before auth: a preflight carries no credential and is answered here.
  await app.register(cors, {
    origin: config.API_CORS_ORIGINS.length > 0 ? config.API_CORS_ORIGINS : false,
    methods: ["GET", "POST", "PUT", "DELETE"],
    allowedHeaders: ["authorization", "content-type"],
    exposedHeaders: ["x-request-id", "retry-after", "location"],
    maxAge: 600,
  });
  registerAuth(app, createAuthenticator(config), pool);
  await registerOpenApi(app);

  await app.register(healthRoutes, { pool, problemBaseUrl: config.PROBLEM_BASE_URL });
  await app.register(safetyRoutes, deps);
  await app.register(adminRoutes, deps);
  await app.register(emergencyRoutes, deps);
  await app.register(moderationRoutes, deps);
  await app.register(notificationRoutes, deps);
  await app.register(consoleRoutes);

  return app;
}
