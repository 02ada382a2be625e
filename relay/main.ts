import { busClient, connectBus, ensureStream, onRelayWakeUps } from "../lib/bus.js";
import { loadConfigOrExit, lowerPriority, orExit } from "../lib/boot.js";
import { loadRelayConfig } from "../lib/config.js";
import { createPool } from "../lib/db.js";
import { startHealthServer } from "../lib/health.js";
import { createMetricsRegistry, registerMetricsRoute } from "../lib/metrics.js";
import { assertMigrated } from "../lib/migrate.js";
import { installShutdown } from "../lib/shutdown.js";
import { createRelayMetrics } from "./metrics.js";
import { OutboxRelay } from "./outbox-relay.js";

const { config, logger } = loadConfigOrExit("relay", loadRelayConfig);
lowerPriority(logger, config.RELAY_NICE);

const nc = await orExit(logger, "relay: connect", async () => {
  const connected = await connectBus(config.NATS_URL, "relay", logger);
  await ensureStream(connected, config.NATS_STREAM, { replicas: config.NATS_REPLICAS });
  return connected;
});

const pool = createPool({
  connectionString: config.DATABASE_URL,
  max: config.DATABASE_POOL_SIZE,
  applicationName: "relay",
  logger,
});
const metrics = createMetricsRegistry("relay");
const relay = new OutboxRelay({
  metrics: createRelayMetrics(metrics, pool, config.OUTBOX_RETENTION_DAYS),
  pool,
  js: busClient(nc),
  logger,
  publishTimeoutMs: config.RELAY_PUBLISH_TIMEOUT_MS,
  retryIntervalMs: config.RELAY_RETRY_INTERVAL_MS,
  lanes: config.RELAY_LANES,
});

const sweep = () =>
  relay.drain().catch((err: Error) => logger.warn({ err: { message: err.message } }, "relay: sweep failed"));

// Postgres down at boot, or a database `api migrate up` never ran on, is a fatal start like an
// unreachable bus: the outbox it publishes is the migrated schema's.
await orExit(logger, "relay: database", () => assertMigrated(pool));

// The relay is woken one way: a writer publishes on the bus after its commit (the API after a
// write, the notifier after a job that recorded events). The poll finds what no wake-up
// announced (an operator task's rows, a wake-up lost), and retries after a bus outage.
const heartbeat = setInterval(sweep, config.RELAY_POLL_INTERVAL_MS);
void sweep();
const busWakeUps = onRelayWakeUps(nc, sweep);

const health = await startHealthServer({
  ...config.RELAY_HEALTH_ADDR,
  pool,
  logger,
  problemBaseUrl: config.PROBLEM_BASE_URL,
  register: (app) => registerMetricsRoute(app, metrics),
});
// Before the "started" line: a supervisor that stops the process as soon as it reads that
// line must find the handler in place, or the signal's default action kills it mid-work.
installShutdown(logger, [
  { name: "stop sweeping", run: () => clearInterval(heartbeat) },
  { name: "stop taking bus wake-ups", run: () => busWakeUps.unsubscribe() },
  { name: "finish relay batch", run: () => relay.stop() },
  { name: "close health server", run: () => health.close() },
  { name: "drain bus", run: () => nc.drain() },
  { name: "end pool", run: () => pool.end() },
]);

logger.info({ addr: config.RELAY_HEALTH_ADDR, stream: config.NATS_STREAM }, "relay: started");
