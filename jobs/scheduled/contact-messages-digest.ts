import { withTransaction, type Pool, type Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { CONTACT_MESSAGE_KIND } from "../../lib/notifications.js";
import { enqueueDeliveries } from "../queue.js";
import type { NotificationDraft } from "../../lib/notification-rows.js";
import { channelsFor, emailPreferences, insertNotifications, needingDelivery } from "../../lib/notification-rows.js";

/**
 * The hourly digest of held contact messages (graphile-worker cron in the
 * notifier's worker, jobs/scheduled/task.ts). A message past its
 * target's daily volume is stored held and its event notifies no one
 * (handlers.ts); here each target's held messages become one relay_message
 * notification to its owner that lists them, oldest first. The messages are
 * marked digested in the transaction that writes the notification, and
 * taken with `skip locked`, so a retried or concurrent run never lists one
 * twice. The same run forgets the sender keys of messages a day old: the
 * sender's daily cap no longer needs them.
 */

/** Held messages listed in one notification; a longer backlog waits for the next hour's digest. */
export const HELD_MESSAGES_PER_DIGEST = 50;

/** The three columns a message may belong to, and how the owner is found. */
const TARGETS = {
  lostReportId: { column: "lost_report_id", owner: `select reporter_id as "actorId" from safety_lost_report where id = $1::uuid`, about: "your lost animal" },
  foundReportId: { column: "found_report_id", owner: `select reporter_id as "actorId" from safety_found_report where id = $1::uuid`, about: "the animal you found" },
  animalId: { column: "animal_id", owner: `select owner_id as "actorId" from animal where id = $1::uuid`, about: "your animal, from its tag" },
} as const;

type TargetField = keyof typeof TARGETS;

interface Target {
  field: TargetField;
  id: string;
}

interface HeldMessage {
  id: string;
  message: string;
  fromContact: string;
  createdAt: Date;
}

/** Targets with held messages not yet digested, oldest waiting message first. */
async function waitingTargets(client: Queryable): Promise<Target[]> {
  const { rows } = await client.query<{ field: TargetField; id: string }>(
    `select case when lost_report_id is not null then 'lostReportId'
                 when found_report_id is not null then 'foundReportId'
                 else 'animalId' end as field,
       coalesce(lost_report_id, found_report_id, animal_id) as id
     from safety_relay_message
     where held and digested_at is null
     group by 1, 2
     order by min(created_at)`,
  );
  return rows;
}

/** Takes up to HELD_MESSAGES_PER_DIGEST of a target's held messages, marks them digested; also how many still wait. */
async function takeHeld(client: Queryable, target: Target): Promise<{ messages: HeldMessage[]; waiting: number }> {
  const column = TARGETS[target.field].column;
  const { rows } = await client.query<HeldMessage>(
    `with picked as (
       select id from safety_relay_message
       where ${column} = $1::uuid and held and digested_at is null
       order by created_at, id
       limit $2::int
       for update skip locked
     ),
     taken as (
       update safety_relay_message m set digested_at = now()
       from picked p where m.id = p.id
       returning m.id, m.message, m.from_contact, m.created_at
     )
     select id, message, from_contact as "fromContact", created_at as "createdAt" from taken order by created_at, id`,
    [target.id, HELD_MESSAGES_PER_DIGEST],
  );
  const { rows: left } = await client.query<{ n: number }>(
    `select count(*)::int as n from safety_relay_message where ${column} = $1::uuid and held and digested_at is null`,
    [target.id],
  );
  return { messages: rows, waiting: left[0]!.n };
}

/** One notification listing a target's held messages, each with the reply-to its sender typed. */
export function heldMessagesDraft(recipientActorId: string, target: Target, messages: HeldMessage[], waiting: number): NotificationDraft {
  const { about } = TARGETS[target.field];
  const n = messages.length;
  const listed = messages.map(
    (m) => `${m.createdAt.toISOString()}:\n${m.message}\nReply to (given by the sender, not verified): ${m.fromContact}`,
  );
  return {
    recipientActorId,
    kind: CONTACT_MESSAGE_KIND,
    sourceKey: `${CONTACT_MESSAGE_KIND}_digest:${messages[0]!.id}`,
    subject: `${n} more message${n === 1 ? "" : "s"} about ${about}`,
    // fromContact is whatever each sender typed; the text says so, because we never verified it.
    body:
      `So many messages arrived in a day that these ${n} were collected here instead of one notification each:\n\n` +
      listed.join("\n\n") +
      (waiting > 0 ? `\n\n${waiting} more are waiting and come in the next digest, within the hour.` : ""),
    data: {
      [target.field]: target.id,
      heldCount: String(n),
      waitingCount: String(waiting),
      relayMessageIds: messages.map((m) => m.id).join(","),
    },
  };
}

export interface ContactMessageDigestResult {
  notifications: number;
  messages: number;
  sendersForgotten: number;
}

/** Sends every target's held messages, one notification (per channel) per target. */
export async function runContactMessageDigest(pool: Pool): Promise<ContactMessageDigestResult> {
  const result: ContactMessageDigestResult = { notifications: 0, messages: 0, sendersForgotten: 0 };
  for (const target of await waitingTargets(pool)) {
    const written = await withTransaction(pool, async (client) => {
      const { rows: owners } = await client.query<{ actorId: string }>(TARGETS[target.field].owner, [target.id]);
      const { messages, waiting } = await takeHeld(client, target);
      const recipient = owners[0]?.actorId;
      if (!recipient || messages.length === 0) return { notifications: 0, messages: messages.length };
      const draft = heldMessagesDraft(recipient, target, messages, waiting);
      const preferences = await emailPreferences(client, [recipient]);
      const sourceEventId = crypto.randomUUID();
      const inserted = await insertNotifications(
        client,
        channelsFor(draft.kind, preferences.get(recipient)).map((channel) => ({
          ...draft,
          sourceEventId,
          sourceOccurredAt: new Date(),
          eventType: EventType.ContactMessageReceived,
          channel,
        })),
      );
      await enqueueDeliveries(client, needingDelivery(inserted));
      return { notifications: inserted.length, messages: messages.length };
    });
    result.notifications += written.notifications;
    result.messages += written.messages;
  }
  const forgotten = await pool.query(
    `update safety_relay_message set sender_key = null
     where sender_key is not null and created_at < now() - interval '1 day'`,
  );
  result.sendersForgotten = forgotten.rowCount ?? 0;
  return result;
}
