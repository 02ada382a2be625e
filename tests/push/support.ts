import { randomUUID } from "node:crypto";
import { withTransaction, type Pool } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { DELIVERY_TASKS } from "../../jobs/delivery/task.js";
import type { NotificationKind } from "../../lib/notifications.js";
import { enqueue } from "../../jobs/queue.js";
import { insertNotification } from "../../lib/notification-rows.js";
import { eventually } from "../helpers/stream.js";

/** What the push tests read of a notification. */
export interface PushRow {
  status: string;
  attempts: number;
  last_error: string | null;
}

/** A push notification as the consumer writes it: the row and its delivery job, in one transaction. */
export function notifyByPush(
  pool: Pool,
  recipient: string,
  kind: NotificationKind = "relay_message",
  body = "I think I saw your dog near the park",
  data: Record<string, string> = { lostReportId: randomUUID() },
): Promise<string> {
  return withTransaction(pool, async (client) => {
    const id = await insertNotification(client, {
      recipientActorId: recipient,
      sourceKey: `${kind}:${randomUUID()}`,
      subject: "Someone sent a message about your lost animal",
      body,
      sourceEventId: randomUUID(),
      sourceOccurredAt: new Date(),
      eventType: EventType.ContactMessageReceived,
      kind,
      data,
      channel: "push",
    });
    await enqueue(client, DELIVERY_TASKS.push.one, { notificationId: id! });
    return id!;
  });
}

export async function pushRow(pool: Pool, id: string): Promise<PushRow> {
  return (await pool.query(`select status, attempts, last_error from notification where id = $1`, [id])).rows[0] as PushRow;
}

/** The row once it is sent or dead-lettered. */
export const settledPush = (pool: Pool, id: string, timeoutMs = 15_000) =>
  eventually(async () => {
    const r = await pushRow(pool, id);
    return r.status === "sent" || r.status === "dead_letter" ? r : undefined;
  }, timeoutMs);
