import cors from "@fastify/cors";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type RouteOptions } from "fastify";
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from "fastify-type-provider-zod";
import { healthRoutes } from "../lib/health.js";
import { withMaskedRequests, type Logger } from "../lib/logger.js";
import { createMetricsRegistry, registerHttpMetrics, type Registry } from "../lib/metrics.js";
import { problems } from "../lib/problems.js";
import { startPublicReads, type PublicReads } from "../lib/read-replica.js";
import { adminRoutes } from "./admin/routes.js";
import { alertSubscriptionRoutes } from "./alert-subscriptions/routes.js";
import { animalRoutes } from "./animals/routes.js";
import { consoleRoutes } from "./console/routes.js";
import type { AppDeps } from "./deps.js";
import { emergencyRoutes } from "./emergency/routes.js";
import { moderationRoutes } from "./moderation/routes.js";
import { notificationRoutes } from "./notifications/routes.js";
import { ownerRoutes } from "./owner/routes.js";
import { partnerRoutes } from "./partners/routes.js";
import { peopleAppRoutes } from "./people-app/routes.js";
import { createAuthenticator, registerAuth, suspensionBeforeRefusal } from "./plugins/auth.js";
import { clientErrorHandler, registerErrorHandling, sendProblem } from "./plugins/errors.js";
import { registerGracefulClose } from "./plugins/graceful-close.js";
import { registerRequestTimeLimit, serverTimeLimits } from "./plugins/request-time-limit.js";
import { registerIpLimiter, type IpLimiter } from "./plugins/ip-limiter.js";
import { registerOpenApi } from "./plugins/openapi.js";
import { registerRelayWakeUps } from "./plugins/relay-wake-ups.js";
import { registerSameOriginForms } from "./plugins/same-origin-forms.js";
import { phoneRoutes } from "./phone/routes.js";
import { photoRoutes } from "./photos/routes.js";
import { pushRoutes } from "./push/routes.js";
import { createObjectStorage, type ObjectStorage } from "../lib/storage/index.js";
import { safetyRoutes } from "./safety/routes.js";
import { smsRoutes } from "./sms/routes.js";
import { isSharePageUrl, sendShareNotFound, shareRoutes } from "./share/routes.js";
import type { TagPhotoSource } from "./tag/photos.js";
import { isTagPageUrl, sendTagNotFound, tagRoutes } from "./tag/routes.js";


export interface BuildAppOptions extends Omit<AppDeps, "storage" | "reads"> {
  /** The public reads (lib/read-replica.ts); started from config (and closed with the app) when omitted. */
  reads?: PublicReads;
  /** Photo storage; made from config (and closed with the app) when omitted. */
  storage?: ObjectStorage;
  logger: Logger;
  /** Sees every route as it is registered; the admin role-gate test walks them. */
  onRoute?: (route: RouteOptions) => void;
  /** Prometheus registry, which buildMetricsServer serves; a fresh one per app when omitted. */
  metrics?: Registry;
  /** Monotonic milliseconds for the per-IP limiter; tests pass a clock they move themselves. */
  clock?: () => number;
  /** The tag page's photo source (api/tag/photos.ts); none until animal photos exist. */
  tagPhotos?: TagPhotoSource;
}

/** The public reads DATABASE_REPLICA_URL and its settings ask for, on the primary `pool` when there is no replica. */
export function startConfiguredReads(config: AppDeps["config"], pool: AppDeps["pool"], logger: Logger, registry: Registry): Promise<PublicReads> {
  return startPublicReads({
    primary: pool,
    replicaUrl: config.DATABASE_REPLICA_URL,
    maxLagMs: config.DATABASE_REPLICA_MAX_LAG_MS,
    poolSize: config.DATABASE_POOL_SIZE,
    poolOptions: { namedStatements: config.DATABASE_NAMED_STATEMENTS, sessionSettings: config.DATABASE_SESSION_SETTINGS },
    logger,
    registry,
  });
}

/**
 * Builds the API. Hook order on every request: the per-IP limiter, then
 * authentication and RequireNotSuspended, then the route's gate; only then is
 * the body parsed and the route run.
 */
export async function buildApp({ logger, onRoute, metrics: registry, clock, tagPhotos, storage, reads, ...rest }: BuildAppOptions): Promise<FastifyInstance> {
  const metrics = registry ?? createMetricsRegistry("api");
  // First: a DATABASE_REPLICA_URL that is no replica refuses to start before anything else is made.
  const publicReads = reads ?? (await startConfiguredReads(rest.config, rest.pool, logger, metrics));
  const deps: AppDeps = { ...rest, reads: publicReads, storage: storage ?? createObjectStorage(rest.config) };
  const { config, pool } = deps;
  let limiter: IpLimiter | undefined;
  const app = Fastify({
    // Request URLs are logged with their tag, emergency and query tokens masked.
    loggerInstance: withMaskedRequests(logger) as FastifyBaseLogger,
    trustProxy: config.API_TRUSTED_PROXY_CIDRS.length > 0 ? config.API_TRUSTED_PROXY_CIDRS : false,
    bodyLimit: config.API_BODY_LIMIT_BYTES,
    requestIdHeader: false,
    genReqId: () => crypto.randomUUID(),
    return503OnClosing: true,
    // Node's header, request and idle socket limits, and requests per keep-alive connection (api/plugins/request-time-limit.ts).
    ...serverTimeLimits(config),
    routerOptions: { maxParamLength: 200 },
    clientErrorHandler: clientErrorHandler(config.PROBLEM_BASE_URL),
    // A malformed URL or an over-long path parameter never reaches a route, so
    // no hook runs: the limiter and the problem rendering are applied here.
    frameworkErrors: (error, request, reply) => {
      if (limiter?.refuse(request, reply)) return;
      // A tag page URL the router refused (an over-long or broken token) gets the tag's own 404 page.
      if (isTagPageUrl(request.url)) return void sendTagNotFound(request, reply, pool);
      if (isSharePageUrl(request.url)) return sendShareNotFound(request, reply);
      const problem =
        error.code === "FST_ERR_MAX_PARAM_LENGTH" ? problems.notFound("resource") : problems.validation("the URL is malformed");
      sendProblem(reply, config.PROBLEM_BASE_URL, problem);
    },
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // JSON only: a text/plain body is 415 unsupported-media-type, like any other type without a parser.
  app.removeContentTypeParser("text/plain");
  app.addHook("onSend", async (request, reply) => {
    reply.header("x-request-id", request.id);
  });
  registerGracefulClose(app);
  // First of the onRequest hooks, so a request's time counts from its headers.
  registerRequestTimeLimit(app, config.API_REQUEST_TIMEOUT_MS);
  registerRelayWakeUps(app, deps.wakeRelay);
  if (!storage) app.addHook("onClose", () => deps.storage.close());
  if (!reads) app.addHook("onClose", () => publicReads.close());

  if (onRoute) app.addHook("onRoute", onRoute);
  registerErrorHandling(app, config.PROBLEM_BASE_URL, config.API_BODY_LIMIT_BYTES, suspensionBeforeRefusal(pool));
  limiter = registerIpLimiter(app, config.PROBLEM_BASE_URL, clock);
  // Before auth: another site's form post costs no lookup.
  registerSameOriginForms(app, config.API_PUBLIC_BASE_URL);
  // Served on API_METRICS_ADDR by its own server (buildMetricsServer, lib/health.ts), not here.
  registerHttpMetrics(app, metrics);
  // Before auth: a preflight carries no credential and is answered here.
  await app.register(cors, {
    origin: config.API_CORS_ORIGINS.length > 0 ? config.API_CORS_ORIGINS : false,
    methods: ["GET", "POST", "PUT", "PATCH", "DELETE"],
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
  await app.register(alertSubscriptionRoutes, deps);
  await app.register(animalRoutes, deps);
  await app.register(ownerRoutes, deps);
  await app.register(tagRoutes, { ...deps, photos: tagPhotos });
  await app.register(shareRoutes, deps);
  await app.register(photoRoutes, { ...deps, metrics });
  await app.register(partnerRoutes, deps);
  await app.register(pushRoutes, deps);
  await app.register(phoneRoutes, deps);
  await app.register(smsRoutes, deps);
  await app.register(consoleRoutes, { config });
  await app.register(peopleAppRoutes, { config });

  return app;
}
