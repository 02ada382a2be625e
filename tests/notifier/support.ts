import { randomUUID } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import type { TaskList } from "graphile-worker";
import { pino } from "pino";
import { busClient, type NatsConnection } from "../../lib/bus.js";
import type { Env } from "../../lib/config.js";
import type { Pool, Queryable } from "../../lib/db.js";
import { EventType, type EventEnvelope } from "../../lib/events.js";
import { startWorker, type SupervisedWorker } from "../../lib/worker.js";
import { notificationDeliverBatchTask, notificationDeliverTask } from "../../jobs/delivery/task.js";
import { DELIVERY_TASKS } from "../../jobs/delivery/task.js";
import { createBatchDelivery, createDelivery } from "../../jobs/delivery/delivery.js";
import type { Deliverers } from "../../jobs/delivery/deliverers/types.js";
import { devEnv, TEST_STREAM } from "../helpers/app.js";
import { freePort } from "../helpers/nats.js";
import { ServiceProcess } from "../helpers/processes.js";

/** The data the contact message route puts on its outbox event. */
export function contactMessageData(recipientActorId: string, message = "I think I saw your dog near the park") {
  return {
    recipientActorId,
    lostReportId: randomUUID(),
    relayMessageId: randomUUID(),
    message,
    fromContact: "finder@example.org",
  };
}

export function contactMessageEnvelope(recipientActorId: string, data = contactMessageData(recipientActorId)): EventEnvelope<typeof EventType.ContactMessageReceived> {
  return { id: randomUUID(), type: EventType.ContactMessageReceived, occurredAt: new Date().toISOString(), data };
}

/**
 * Publishes an envelope the way the relay does. msgId defaults to the event
 * id; a different one gets past the stream's duplicate window, which is how a
 * test makes the notifier see the same event twice.
 */
export async function publishEnvelope(nc: NatsConnection, envelope: EventEnvelope, msgId = envelope.id): Promise<void> {
  await busClient(nc).publish(envelope.type, JSON.stringify(envelope), { msgID: msgId });
}

/** The earlier `{channel}` preference: in_app means no email, email means email for every kind (when an address is set). */
export async function setPreference(db: Queryable, actorId: string, channel: "email" | "in_app", email: string | null = null) {
  await db.query(
    `insert into notification_preference (actor_id, email_kinds, email) values ($1, $2, $3)
     on conflict (actor_id) do update set email_kinds = excluded.email_kinds, email = excluded.email`,
    [actorId, channel === "in_app" ? [] : null, email],
  );
}

export interface NotificationRow {
  id: string;
  recipient_actor_id: string;
  channel: string;
  status: string;
  attempts: number;
  round_attempts: number;
  last_error: string | null;
  source_event_id: string;
  subject: string;
  body: string;
}

export async function notificationsFor(db: Queryable, sourceEventIds: string[]): Promise<NotificationRow[]> {
  const { rows } = await db.query<NotificationRow>(
    `select * from notification where source_event_id = any($1::uuid[]) order by created_at`,
    [sourceEventIds],
  );
  return rows;
}

/** The invariant: grouping by (source event, recipient, channel) never counts above 1. */
export async function maxRowsPerSourceEvent(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `select coalesce(max(c), 0)::int as n
     from (select count(*) as c from notification group by source_event_id, recipient_actor_id, channel) t`,
  );
  return rows[0]!.n;
}

/** Delivery jobs that would deliver this notification: its own, and batches (the alert fan-out's) naming it. */
export async function deliveryJobsFor(db: Queryable, notificationId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `select count(*)::int as n
     from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
     where (t.identifier = any($1::text[]) and j.payload->>'notificationId' = $3)
        or (t.identifier = any($2::text[]) and j.payload::jsonb->'notificationIds' ? $3)`,
    [Object.values(DELIVERY_TASKS).map((t) => t.one), Object.values(DELIVERY_TASKS).map((t) => t.batch), notificationId],
  );
  return rows[0]!.n;
}

export async function consumerInfo(nc: NatsConnection, name = "notifier") {
  return (await jetstreamManager(nc)).consumers.info(TEST_STREAM, name);
}

/** A real graphile-worker runner with every channel's delivery tasks, in the test process. */
export function startDeliveryWorker(pool: Pool, deliverers: Deliverers, moreTasks: TaskList = {}): Promise<SupervisedWorker> {
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
  return startWorker({
    pool,
    logger,
    taskList: {
      ...Object.fromEntries(
        Object.keys(DELIVERY_TASKS).flatMap((c) => [
          [DELIVERY_TASKS[c as keyof typeof DELIVERY_TASKS].one, notificationDeliverTask(createDelivery({ pool, deliverers, logger }))],
          [DELIVERY_TASKS[c as keyof typeof DELIVERY_TASKS].batch, notificationDeliverBatchTask(createBatchDelivery({ pool, deliverers, logger }))],
        ]),
      ),
      ...moreTasks,
    },
    concurrency: 4,
    pollInterval: 200,
  });
}

export async function startNotifier(
  databaseUrl: string,
  natsUrl: string,
  extra: Env = {},
  startTimeoutMs?: number,
): Promise<ServiceProcess & { healthPort: number }> {
  const healthPort = await freePort();
  const notifier = ServiceProcess.start(
    "notifier",
    devEnv(databaseUrl, natsUrl, { NOTIFIER_HEALTH_ADDR: `127.0.0.1:${healthPort}`, LOG_LEVEL: "info", ...extra }),
  );
  await notifier.waitForLog((l) => l.msg === "notifier: started", startTimeoutMs);
  return Object.assign(notifier, { healthPort });
}
