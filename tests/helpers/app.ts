import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FastifyInstance, RouteOptions } from "fastify";
import { pino } from "pino";
import { busClient, connectBus, ensureStream, relayWaker, type NatsConnection } from "../../lib/bus.js";
import { loadApiConfig, type ApiConfig, type Env } from "../../lib/config.js";
import { checkRoleSettings, createPool, type Pool } from "../../lib/db.js";
import { buildMetricsServer } from "../../lib/health.js";
import type { Logger } from "../../lib/logger.js";
import { createMetricsRegistry } from "../../lib/metrics.js";
import { createObjectStorage, type ObjectStorage } from "../../lib/storage/index.js";
import { buildApp, type BuildAppOptions } from "../../api/app.js";
import { apiEnvThroughPgBouncer } from "./pgbouncer-route.js";
import { checkPublicResponses } from "./privacy.js";

export const TEST_STREAM = "EVENTS";

/**
 * Photo storage of this test file (its processes share it): never the
 * repository's .data/photos. A worker keeps this module from one file to the
 * next (vitest.config.ts, isolate: false), so tests/setup/each-file.ts gives
 * each file a fresh one (freshPhotoDir): a file counts only its own objects.
 */
export let TEST_PHOTO_DIR = mkdtempSync(path.join(tmpdir(), "ass-test-photos-"));

export function freshPhotoDir(): void {
  TEST_PHOTO_DIR = mkdtempSync(path.join(tmpdir(), "ass-test-photos-"));
}

/** Development settings with the debug-actor bypass: what most tests drive the API with. */
export function devEnv(databaseUrl: string, natsUrl: string, extra: Env = {}): Env {
  return {
    API_ENV: "development",
    API_DEV_AUTH_BYPASS: "true",
    DATABASE_URL: databaseUrl,
    NATS_URL: natsUrl,
    NATS_STREAM: TEST_STREAM,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    // Postgres allows 100 connections; several files and processes run at once.
    DATABASE_POOL_SIZE: "4",
    PHOTO_STORAGE_DIR: TEST_PHOTO_DIR,
    // Any free port: API processes of several test files run at once, and the default is one fixed port.
    API_METRICS_ADDR: "127.0.0.1:0",
    ...extra,
  };
}

export interface TestApi {
  app: FastifyInstance;
  config: ApiConfig;
  pool: Pool;
  nc: NatsConnection;
  /** The app's photo storage, made from the settings (the file's TEST_PHOTO_DIR unless they name another). */
  storage: ObjectStorage;
  /** The API's metrics server (API_METRICS_ADDR in api/main.ts) on the app's registry, for inject(); buildTestApi makes it. */
  metrics?: FastifyInstance;
  close(): Promise<void>;
}

export interface TestApiOptions extends Pick<BuildAppOptions, "clock" | "tagPhotos"> {
  logger?: Logger;
  /** Sees every route as it is registered, besides the privacy checker. */
  onRoute?: (route: RouteOptions) => void;
  /** Routes of the test's own, added before the app is ready. */
  addRoutes?: (app: FastifyInstance) => void;
}

/**
 * Builds the real app (app.ts) on a real pool and a real bus connection, for
 * inject(). Every public response it sends goes through the privacy checker.
 */
export async function buildTestApi(env: Env, options: TestApiOptions = {}): Promise<TestApi> {
  // In the `pgbouncer` project, through a real pgbouncer in transaction pooling (tests/helpers/pgbouncer-route.ts).
  const config = loadApiConfig(await apiEnvThroughPgBouncer(env));
  const logger = options.logger ?? pino({ level: config.LOG_LEVEL });
  const nc = await connectBus(config.NATS_URL, "api-test", logger);
  await ensureStream(nc, config.NATS_STREAM);
  // As api/main.ts: the app wakes the relay over the bus after each write.
  const pool = createPool({
    connectionString: config.DATABASE_URL,
    max: config.DATABASE_POOL_SIZE,
    applicationName: "api-test",
    logger,
    namedStatements: config.DATABASE_NAMED_STATEMENTS,
    sessionSettings: config.DATABASE_SESSION_SETTINGS,
  });
  if (config.DATABASE_SESSION_SETTINGS === "role") await checkRoleSettings(pool, logger);
  const registry = createMetricsRegistry("api");
  const { onRoute, addRoutes, clock, tagPhotos } = options;
  const storage = createObjectStorage(config);
  const app = await buildApp({
    config,
    pool,
    js: busClient(nc),
    wakeRelay: relayWaker(nc),
    logger,
    onRoute: (route) => {
      onRoute?.(route);
      checkPublicResponses(route);
    },
    metrics: registry,
    clock,
    storage,
    tagPhotos,
  });
  addRoutes?.(app);
  await app.ready();
  const metrics = await buildMetricsServer(logger, registry);
  return {
    app,
    config,
    pool,
    nc,
    storage,
    metrics,
    async close() {
      await app.close();
      // buildApp closes only a storage it made itself.
      await storage.close();
      await metrics.close();
      await nc.close();
      await pool.end();
    },
  };
}

/** Headers for the development bypass. */
export function as(actor: string, roles: string[] = []): Record<string, string> {
  return roles.length > 0 ? { "x-debug-actor": actor, "x-debug-roles": roles.join(",") } : { "x-debug-actor": actor };
}

export const admin = (id = "admin-1") => as(id, ["platform_admin"]);
