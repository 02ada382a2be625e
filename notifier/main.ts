import { connectBus, ensureStream, relayWaker } from "../lib/bus.js";
import { loadConfigOrExit, lowerPriority, orExit } from "../lib/boot.js";
import { loadNotifierConfig } from "../lib/config.js";
import { createPool, withTransaction } from "../lib/db.js";
import { startHealthServer } from "../lib/health.js";
import { exitFatal } from "../lib/logger.js";
import { createMetricsRegistry, registerMetricsRoute } from "../lib/metrics.js";
import { installShutdown } from "../lib/shutdown.js";
import { createObjectStorage } from "../lib/storage/index.js";
import { createConsumerPool, NotificationConsumer } from "./consumer.js";
import { startFanoutWorker } from "../jobs/fanout/worker.js";
import { buildDeliverers } from "../jobs/delivery/deliverers/index.js";
import { notificationHandlers } from "./handlers.js";
import { createNotifierMetrics } from "./metrics.js";
import { eventReactions } from "./reactions.js";
import { requeueStalledDeliveries } from "../jobs/delivery/store.js";
import { startFamilies } from "../jobs/families.js";
import type { JobFamily } from "../lib/job-families.js";

/** A delivery untouched this long lost its worker (deliveries touch the row every few seconds). */
const STALLED_AFTER_SECONDS = 120;
const STALL_SWEEP_INTERVAL_MS = 30_000;

const { config, logger } = loadConfigOrExit("notifier", loadNotifierConfig);
lowerPriority(logger, config.NOTIFIER_NICE);

const pool = createPool({
  connectionString: config.DATABASE_URL,
  max: config.DATABASE_POOL_SIZE,
  applicationName: "notifier",
  logger,
});

const consumerPool = createConsumerPool({ connectionString: config.DATABASE_URL, max: config.DATABASE_POOL_SIZE, logger });

let nc;
let consumer: NotificationConsumer | null = null;
try {
  nc = await connectBus(config.NATS_URL, "notifier", logger);
  await ensureStream(nc, config.NATS_STREAM, { replicas: config.NATS_REPLICAS });
  // A notifier that only runs job families (NOTIFIER_CONSUME=false: matching and photos on a machine of their own, say).
  if (config.NOTIFIER_CONSUME) consumer = new NotificationConsumer({
    nc,
    pool: consumerPool,
    logger,
    stream: config.NATS_STREAM,
    name: config.NOTIFIER_CONSUMER_NAME,
    registry: notificationHandlers,
    reactions: eventReactions,
    concurrency: config.NOTIFIER_CONSUME_CONCURRENCY,
    ackWaitMs: config.NOTIFIER_ACK_WAIT_MS,
  });
  await consumer?.ensure();
} catch (err) {
  await Promise.all([pool.end(), consumerPool.end()]);
  exitFatal(logger, `notifier: connect: ${(err as Error).message}`, err);
}

const metricsRegistry = createMetricsRegistry("notifier");
const deliverers = buildDeliverers(config, pool, metricsRegistry);
// The jobs that record events (matching, photo processing) wake the relay over the bus after
// their commit; the consumer's transactions write no outbox rows.
const wakeRelay = relayWaker(nc);
const metrics = createNotifierMetrics(metricsRegistry, {
  db: pool,
  nc,
  stream: config.NATS_STREAM,
  consumer: config.NOTIFIER_CONSUMER_NAME,
});
const storage = createObjectStorage(config);
const slots: Record<JobFamily, number> = {
  "delivery-email": config.NOTIFIER_DELIVERY_CONCURRENCY,
  "delivery-push": config.NOTIFIER_DELIVERY_CONCURRENCY,
  "delivery-sms": config.NOTIFIER_DELIVERY_CONCURRENCY,
  fanout: config.NOTIFIER_FANOUT_CONCURRENCY,
  matching: config.NOTIFIER_MATCHING_CONCURRENCY,
  photos: config.NOTIFIER_PHOTO_CONCURRENCY,
  "partner-photos": config.NOTIFIER_PARTNER_PHOTO_CONCURRENCY,
  scheduled: config.NOTIFIER_SCHEDULED_CONCURRENCY,
};
// As in the relay: a database `api migrate up` never ran on is a fatal start.
const families = await orExit(logger, "notifier: database", () =>
  startFamilies(
    {
      pool,
      logger,
      deliverers,
      metrics,
      wakeRelay,
      storage,
      partnerPhotoFetch: { allowHosts: config.PARTNER_PHOTO_FETCH_ALLOW, timeoutMs: config.PARTNER_PHOTO_FETCH_DEADLINE_MS },
      fanout: { duty: config.NOTIFIER_FANOUT_DUTY, deliveryBatch: config.NOTIFIER_ALERT_DELIVERY_BATCH },
      reportTtlDays: config.REPORT_TTL_DAYS,
      outboxRetentionDays: config.OUTBOX_RETENTION_DAYS,
    },
    config.NOTIFIER_JOB_FAMILIES,
    (family) => slots[family],
    (family, max) => createPool({ connectionString: config.DATABASE_URL, max, applicationName: `notifier:${family}`, logger }),
  ),
);
consumer?.start();

const sweep = () =>
  withTransaction(pool, (client) => requeueStalledDeliveries(client, STALLED_AFTER_SECONDS, 100)).then(
    (ids) => ids.length > 0 && logger.warn({ count: ids.length }, "notifier: re-queued stalled deliveries"),
    (err: Error) => logger.warn({ err: { message: err.message } }, "notifier: stall sweep failed"),
  );
const stallSweep = setInterval(sweep, STALL_SWEEP_INTERVAL_MS);
void sweep();

const health = await startHealthServer({
  ...config.NOTIFIER_HEALTH_ADDR,
  pool,
  logger,
  problemBaseUrl: config.PROBLEM_BASE_URL,
  register: (app) => registerMetricsRoute(app, metricsRegistry),
});
// Before the "started" line: a supervisor that stops the process as soon as it reads that
// line must find the handler in place, or the signal's default action kills it mid-work.
installShutdown(logger, [
  { name: "stop consuming", run: () => consumer?.stop() },
  { name: "stop stall sweep", run: () => clearInterval(stallSweep) },
  { name: "stop job families", run: () => families.stop() },
  { name: "close health server", run: () => health.close() },
  { name: "close deliverers", run: () => Object.values(deliverers).forEach((d) => d.close?.()) },
  { name: "drain bus", run: () => nc.drain() },
  { name: "close photo storage", run: () => storage.close() },
  { name: "end pools", run: () => Promise.all([pool.end(), consumerPool.end()]) },
]);

logger.info(
  {
    addr: config.NOTIFIER_HEALTH_ADDR,
    stream: config.NATS_STREAM,
    consumer: config.NOTIFIER_CONSUMER_NAME,
    filter: consumer?.filter ?? null,
    server: nc.info?.version,
    channels: Object.keys(deliverers),
    families: families.families,
    photoStorage: storage.kind,
  },
  "notifier: started",
);
