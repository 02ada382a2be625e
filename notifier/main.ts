import { connectBus, ensureStream, relayWaker } from "../lib/bus.js";
import { loadConfigOrExit, lowerPriority, orExit } from "../lib/boot.js";
import { loadNotifierConfig } from "../lib/config.js";
import { createPool, withTransaction } from "../lib/db.js";
import { startHealthServer } from "../lib/health.js";
import { exitFatal } from "../lib/logger.js";
import { createMetricsRegistry, registerMetricsRoute } from "../lib/metrics.js";
import { installShutdown } from "../lib/shutdown.js";
import { createObjectStorage } from "../lib/storage/index.js";
import { startWorker } from "../lib/worker.js";
import { createConsumerPool, NotificationConsumer } from "./consumer.js";
import { startFanoutWorker } from "./alerts/worker.js";
import { buildDeliverers } from "./deliverers/index.js";
import { notificationHandlers } from "./handlers.js";
import { createNotifierMetrics } from "./metrics.js";
import { startPhotoWorker } from "./photos/worker.js";
import { eventReactions } from "./reactions.js";
import { requeueStalledDeliveries } from "./store.js";
import { NOTIFIER_CRONTAB, notifierTasks } from "./task-lists.js";

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
let consumer;
try {
  nc = await connectBus(config.NATS_URL, "notifier", logger);
  await ensureStream(nc, config.NATS_STREAM, { replicas: config.NATS_REPLICAS });
  consumer = new NotificationConsumer({
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
  await consumer.ensure();
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
// As in the relay: a database `api migrate up` never ran on is a fatal start.
const runner = await orExit(logger, "notifier: database", () =>
  startWorker({
    pool,
    logger,
    taskList: notifierTasks({ pool, deliverers, logger, metrics, wakeRelay, alertDeliveryBatch: config.NOTIFIER_ALERT_DELIVERY_BATCH }),
    crontab: NOTIFIER_CRONTAB,
    concurrency: config.NOTIFIER_WORKER_CONCURRENCY,
    localQueueSize: config.NOTIFIER_WORKER_CONCURRENCY * 4,
  }),
);
const fanoutRunner = await orExit(logger, "notifier: database", () =>
  startFanoutWorker(pool, logger, {
    concurrency: config.NOTIFIER_FANOUT_CONCURRENCY,
    duty: config.NOTIFIER_FANOUT_DUTY,
    deliveryBatch: config.NOTIFIER_ALERT_DELIVERY_BATCH,
  }),
);
const storage = createObjectStorage(config);
const photoRunner = await orExit(logger, "notifier: database", () =>
  startPhotoWorker(
    { pool, storage, logger, wakeRelay, partnerPhotoFetch: { allowHosts: config.PARTNER_PHOTO_FETCH_ALLOW } },
    config.NOTIFIER_PHOTO_CONCURRENCY,
  ),
);
consumer.start();

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
  { name: "stop consuming", run: () => consumer.stop() },
  { name: "stop stall sweep", run: () => clearInterval(stallSweep) },
  { name: "stop worker", run: () => runner.stop() },
  { name: "stop fan-out worker", run: () => fanoutRunner.stop() },
  { name: "stop photo worker", run: () => photoRunner.stop() },
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
    filter: consumer.filter,
    server: nc.info?.version,
    channels: Object.keys(deliverers),
    photoStorage: storage.kind,
  },
  "notifier: started",
);
