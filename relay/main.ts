import { busClient, connectBus, ensureStream, onRelayWakeUps } from "../lib/bus.js";
import { loadConfigOrExit, lowerPriority, orExit } from "../lib/boot.js";
import { loadRelayConfig } from "../lib/config.js";
import { createPool } from "../lib/db.js";
import { OUTBOX_WAKE_CHANNEL } from "../lib/outbox.js";
import { startHealthServer } from "../lib/health.js";
import { createMetricsRegistry, registerMetricsRoute } from "../lib/metrics.js";
import { installShutdown } from "../lib/shutdown.js";
import { startWorker } from "../lib/worker.js";
import { MAINTENANCE_CRONTAB, MAINTENANCE_PRUNE_TASK, maintenancePruneTask } from "../jobs/maintenance-prune.js";
import { OUTBOX_RELAY_TASK, outboxRelayTask } from "../jobs/outbox-relay.js";
import { REPORT_LIFETIME_CRONTAB, REPORT_LIFETIME_TASK, reportLifetimeTask } from "../jobs/report-lifetime.js";
import { pruneMaintenance } from "./maintenance.js";
import { createRelayMetrics } from "./metrics.js";
import { OutboxRelay } from "./outbox-relay.js";
import { runReportLifetime } from "./report-lifetime.js";
import { listenForWakeUps } from "./wake-up.js";

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
  metrics: createRelayMetrics(metrics, pool),
  pool,
  js: busClient(nc),
  logger,
  publishTimeoutMs: config.RELAY_PUBLISH_TIMEOUT_MS,
  retryIntervalMs: config.RELAY_RETRY_INTERVAL_MS,
  lanes: config.RELAY_LANES,
});

// Postgres down at boot, or a database `api migrate up` never ran on
// (startWorker refuses it), is a fatal start like an unreachable bus.
const runner = await orExit(logger, "relay: database", () =>
  startWorker({
    pool,
    logger,
    taskList: {
      [OUTBOX_RELAY_TASK]: outboxRelayTask(() => relay.drain()),
      [MAINTENANCE_PRUNE_TASK]: maintenancePruneTask(() => pruneMaintenance(pool, config.OUTBOX_RETENTION_DAYS)),
      [REPORT_LIFETIME_TASK]: reportLifetimeTask(() => runReportLifetime(pool, { ttlDays: config.REPORT_TTL_DAYS })),
    },
    crontab: [MAINTENANCE_CRONTAB, REPORT_LIFETIME_CRONTAB].join("\n"),
    concurrency: 2,
    // Fetched jobs are served from memory: a worker no longer asks Postgres for the next job after
    // every relay job, one statement fewer per create (`npm run bench:statements`).
    localQueueSize: 4,
  }),
);

// The spec's poll: finds rows whose wake-up was lost, and retries after a bus outage.
const sweep = () =>
  relay.drain().catch((err: Error) => logger.warn({ err: { message: err.message } }, "relay: sweep failed"));
const heartbeat = setInterval(sweep, config.RELAY_POLL_INTERVAL_MS);
void sweep();
// A commit wakes the relay at once: the API publishes a wake-up on the bus after
// its writes, and the outbox trigger notifies this channel for every other writer.
const busWakeUps = onRelayWakeUps(nc, sweep);
const wakeUps = listenForWakeUps({
  connectionString: config.DATABASE_URL,
  channel: OUTBOX_WAKE_CHANNEL,
  onWake: sweep,
  logger,
  registry: metrics,
});

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
  { name: "stop listening for wake-ups", run: () => wakeUps.stop() },
  { name: "finish relay batch", run: () => relay.stop() },
  { name: "stop worker", run: () => runner.stop() },
  { name: "close health server", run: () => health.close() },
  { name: "drain bus", run: () => nc.drain() },
  { name: "end pool", run: () => pool.end() },
]);

logger.info({ addr: config.RELAY_HEALTH_ADDR, stream: config.NATS_STREAM }, "relay: started");
