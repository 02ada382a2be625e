import { pino } from "pino";
import { busClient, type NatsConnection } from "../../lib/bus.js";
import type { Pool } from "../../lib/db.js";
import type { ObjectStorage } from "../../lib/storage/index.js";
import type { SupervisedWorker } from "../../lib/worker.js";
import type { FanoutOptions } from "../../jobs/fanout/fanout.js";
import { NotificationConsumer } from "../../notifier/consumer.js";
import { inAppDeliverer } from "../../jobs/delivery/deliverers/in-app.js";
import type { Deliverers } from "../../jobs/delivery/deliverers/types.js";
import { notificationHandlers } from "../../notifier/handlers.js";
import { createMatcher } from "../../jobs/matching/matcher.js";
import { startPhotoWorker } from "../../jobs/photos/worker.js";
import { eventReactions } from "../../notifier/reactions.js";
import { matchSubjectTask } from "../../jobs/matching/task.js";
import { MATCH_SUBJECT_TASK } from "../../jobs/matching/task.js";
import { OutboxRelay } from "../../relay/outbox-relay.js";
import { alertTasks } from "../../jobs/families.js";
import { startDeliveryWorker } from "../notifier/support.js";
import { TEST_STREAM } from "./app.js";

/**
 * The relay and the notifier in the test process, on the real code, the
 * file's database and its own nats-server: an API write travels outbox →
 * relay → JetStream → consumer → notification row → delivery job, as in
 * production, without the start-up cost of two more processes per file.
 */
export interface Pipeline {
  stop(): Promise<void>;
}

export async function startPipeline(
  pool: Pool,
  nc: NatsConnection,
  options: { deliverers?: Deliverers; consumerName?: string; fanout?: FanoutOptions; photoStorage?: ObjectStorage } = {},
): Promise<Pipeline> {
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
  const relay = new OutboxRelay({ pool, js: busClient(nc), logger, publishTimeoutMs: 5_000, retryIntervalMs: 200 });
  const heartbeat = setInterval(() => void relay.drain().catch(() => undefined), 50);
  const consumer = new NotificationConsumer({
    nc,
    pool,
    logger,
    stream: TEST_STREAM,
    name: options.consumerName ?? "notifier",
    registry: notificationHandlers,
    reactions: eventReactions,
    concurrency: 4,
  });
  await consumer.ensure();
  consumer.start();
  const worker: SupervisedWorker = await startDeliveryWorker(pool, options.deliverers ?? { in_app: inAppDeliverer }, {
    [MATCH_SUBJECT_TASK]: matchSubjectTask(createMatcher({ pool, logger })),
    // The alert fan-out's tasks; no crons: tests run the digest and the sweep themselves.
    ...alertTasks(pool, options.fanout),
  });
  // The notifier's photo jobs on their own runner, as notifier/main.ts runs them.
  const photos = options.photoStorage ? await startPhotoWorker({ pool, storage: options.photoStorage, logger }, 2) : null;
  return {
    async stop() {
      clearInterval(heartbeat);
      await relay.stop();
      await consumer.stop();
      await worker.stop();
      await photos?.stop();
    },
  };
}
