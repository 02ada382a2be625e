import { busClient, connectBus, ensureStream, onRelayWakeUps } from "../lib/bus.js";
import { loadConfigOrExit, lowerPriority, orExit } from "../lib/boot.js";
import { loadRelayConfig } from "../lib/config.js";
import { createPool } from "../lib/db.js";
import { startHealthServer } from "../lib/health.js";
import { createMetricsRegistry, registerMetricsRoute } from "../lib/metrics.js";
import { installShutdown } from "../lib/shutdown.js";
import { startWorker } from "../lib/worker.js";
import { MAINTENANCE_CRONTAB, MAINTENANCE_PRUNE_TASK, maintenancePruneTask } from "../jobs/maintenance-prune.js";
import { REPORT_LIFETIME_CRONTAB, REPORT_LIFETIME_TASK, reportLifetimeTask } from "../jobs/report-lifetime.js";
import { pruneMaintenance } from "../jobs/scheduled/maintenance.js";
import { createRelayMetrics } from "./metrics.js";
import { OutboxRelay } from "./outbox-relay.js";
import { runReportLifetime } from "../jobs/scheduled/report-lifetime.js";

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

// Postgres down at boot, or a database `api migrate up` never ran on
// (startWorker refuses it), is a fatal start like an unreachable bus.
const runner = await orExit(logger, "relay: database", () =>
  startWorker({
    pool,
    logger,
    taskList: {
      [MAINTENANCE_PRUNE_TASK]: maintenancePruneTask(() => pruneMaintenance(pool, config.OUTBOX_RETENTION_DAYS)),
      // Its expiry and reminder events are this process's own rows: it drains them at once
      // rather than waking itself over the bus.
      [REPORT_LIFETIME_TASK]: reportLifetimeTask(async () => {
        const result = await runReportLifetime(pool, { ttlDays: config.REPORT_TTL_DAYS });
        if (result.expired + result.warned > 0) void sweep();
        return result;
      }),
    },
    crontab: [MAINTENANCE_CRONTAB, REPORT_LIFETIME_CRONTAB].join("\n"),
    concurrency: 2,
    // Fetched jobs are served from memory: a finished job's runner takes the next from memory
    // instead of asking Postgres for it.
    localQueueSize: 4,
  }),
);

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
  { name: "stop worker", run: () => runner.stop() },
  { name: "close health server", run: () => health.close() },
  { name: "drain bus", run: () => nc.drain() },
  { name: "end pool", run: () => pool.end() },
]);

logger.info({ addr: config.RELAY_HEALTH_ADDR, stream: config.NATS_STREAM }, "relay: started");
