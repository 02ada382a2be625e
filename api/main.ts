import { busClient, connectBus, ensureStream, relayWaker } from "../lib/bus.js";
import { loadConfigOrExit, orExit } from "../lib/boot.js";
import { loadApiConfig } from "../lib/config.js";
import { checkRoleSettings, createPool } from "../lib/db.js";
import { buildMetricsServer } from "../lib/health.js";
import { createMetricsRegistry } from "../lib/metrics.js";
import { installShutdown } from "../lib/shutdown.js";
import { buildApp, startConfiguredReads } from "./app.js";

const { config, logger } = loadConfigOrExit("api", loadApiConfig);

const nc = await orExit(logger, "event publisher: cannot connect to the bus", async () => {
  const connected = await connectBus(config.NATS_URL, "api", logger);
  await ensureStream(connected, config.NATS_STREAM, { replicas: config.NATS_REPLICAS });
  return connected;
});

const pool = createPool({
  connectionString: config.DATABASE_URL,
  max: config.DATABASE_POOL_SIZE,
  applicationName: "api",
  logger,
  namedStatements: config.DATABASE_NAMED_STATEMENTS,
  sessionSettings: config.DATABASE_SESSION_SETTINGS,
});
// Behind PgBouncer the role gives statement_timeout and jit (lib/db.ts ROLE_SETTINGS): a role without them is fatal.
if (config.DATABASE_SESSION_SETTINGS === "role") await orExit(logger, "database role settings", () => checkRoleSettings(pool, logger));
const metrics = createMetricsRegistry("api");
// A DATABASE_REPLICA_URL that is not in recovery is fatal; an unreachable one is a warning (lib/read-replica.ts).
const reads = await orExit(logger, "read replica", () => startConfiguredReads(config, pool, logger, metrics));
// The API wakes the relay over the bus after each write (api/plugins/relay-wake-ups.ts).
const app = await buildApp({ config, pool, reads, js: busClient(nc), wakeRelay: relayWaker(nc), logger, metrics });
// Prometheus scrapes its own port (API_METRICS_ADDR); the public one answers 404 for /metrics.
const metricsServer = await orExit(logger, "api: metrics listener", async () => {
  const server = await buildMetricsServer(logger, metrics);
  await server.listen({ host: config.API_METRICS_ADDR.host, port: config.API_METRICS_ADDR.port });
  return server;
});
await app.listen({ host: config.API_HTTP_ADDR.host, port: config.API_HTTP_ADDR.port });

installShutdown(logger, [
  { name: "stop intake and finish requests", run: () => app.close() },
  { name: "close metrics server", run: () => metricsServer.close() },
  { name: "drain bus", run: () => nc.drain() },
  { name: "stop replica reads", run: () => reads.close() },
  { name: "end pool", run: () => pool.end() },
]);
