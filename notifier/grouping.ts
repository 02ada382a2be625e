import type { Queryable } from "../lib/db.js";
import type { NotificationDraft, NotificationGroup } from "../lib/notification-rows.js";

/**
 * Grouped notifications: a draft with a `group` (notifier/handlers.ts) whose
 * event lies within the window of an open group of the same recipient and key
 * is counted into that group's notification instead of getting one of its own.
 *
 * - A group is opened by the first event with no other opener of its key
 *   within `windowSeconds` of it, either side, in event time (occurredAt), so
 *   a backlog or a redelivery groups the same way as live traffic, and two
 *   openers are never closer than the window. The opener's draft becomes
 *   notification rows as usual: one per (source event, recipient, channel).
 * - Every grouped event is a row of notification_group_member, keyed on
 *   (source event, recipient, group key): a redelivered event finds its row
 *   and changes nothing, so a count never counts an event twice.
 * - Counting an event into a group rewrites the opener's rows with the
 *   group's summary: the in_app row (unread again), and an email row not yet
 *   sent, whose delivery reads the text when it sends. A sent email is left
 *   as the record of what went out; nothing new is sent.
 * - Claims of one (recipient, key) are serialised by a transaction-scoped
 *   advisory lock, taken for a batch's keys in one sorted statement before
 *   any write, so two notifiers cannot both open a group in one window.
 */

/** One draft of one handled event, as the consumer records it. */
export interface EventDraft {
  event: { id: string; occurredAt: string };
  draft: NotificationDraft;
}

export interface GroupPlan<T extends EventDraft> {
  /** The drafts that get rows of their own: every ungrouped one, and the openers. */
  open: T[];
  /** Ids of the events counted into a group opened before them. */
  counted: string[];
  /** Writes each touched group's count into its opener's rows; call after the openers' rows are inserted. */
  fold(client: Queryable): Promise<void>;
}

const lockKey = (recipient: string, key: string) => `notification-group:${recipient}:${key}`;

interface Fold {
  groupEventId: string;
  recipient: string;
  kind: NotificationDraft["kind"];
  group: NotificationGroup;
}

/** Claims the grouped drafts' places in their groups, in the consumer's transaction. */
export async function planGroups<T extends EventDraft>(client: Queryable, drafts: T[]): Promise<GroupPlan<T>> {
  if (!drafts.some((d) => d.draft.group)) return { open: drafts, counted: [], fold: async () => {} };
  const keys = [...new Set(drafts.flatMap(({ draft }) => (draft.group ? [lockKey(draft.recipientActorId, draft.group.key)] : [])))].sort();
  await client.query(
    `select pg_advisory_xact_lock(hashtextextended(k, 0)) from (select k from unnest($1::text[]) k order by k) s`,
    [keys],
  );
  const open: T[] = [];
  const counted: string[] = [];
  // The latest draft of each touched group writes its summary.
  const folds = new Map<string, Fold>();
  for (const item of drafts) {
    const { event, draft } = item;
    if (!draft.group) {
      open.push(item);
      continue;
    }
    const groupEventId = await claim(client, event, draft.recipientActorId, draft.group);
    if (groupEventId === null) continue; // counted before: a redelivery
    if (groupEventId === event.id) {
      open.push(item);
      continue;
    }
    counted.push(event.id);
    folds.set(`${groupEventId}:${draft.recipientActorId}:${draft.group.key}`, {
      groupEventId,
      recipient: draft.recipientActorId,
      kind: draft.kind,
      group: draft.group,
    });
  }
  return { open, counted, fold: (c) => writeFolds(c, [...folds.values()]) };
}

/**
 * Records the event as a member of its group: of the nearest opener within the
 * window, or as the opener of a new group. Returns the group's opener, or null
 * when the event was already counted.
 */
async function claim(client: Queryable, event: EventDraft["event"], recipient: string, group: NotificationGroup): Promise<string | null> {
  const { rows } = await client.query<{ groupEventId: string }>(
    `with opener as (
       select source_event_id from notification_group_member
       where recipient_actor_id = $2::text and group_key = $3::text and group_event_id = source_event_id
         and occurred_at > $4::timestamptz - make_interval(secs => $5::double precision)
         and occurred_at < $4::timestamptz + make_interval(secs => $5::double precision)
       order by abs(extract(epoch from occurred_at - $4::timestamptz)), source_event_id
       limit 1
     )
     insert into notification_group_member (source_event_id, recipient_actor_id, group_key, group_event_id, occurred_at)
     values ($1::uuid, $2::text, $3::text, coalesce((select source_event_id from opener), $1::uuid), $4::timestamptz)
     on conflict (source_event_id, recipient_actor_id, group_key) do nothing
     returning group_event_id as "groupEventId"`,
    [event.id, recipient, group.key, event.occurredAt, group.windowSeconds],
  );
  return rows[0]?.groupEventId ?? null;
}

async function writeFolds(client: Queryable, folds: Fold[]): Promise<void> {
  for (const { groupEventId, recipient, kind, group } of folds) {
    const { rows } = await client.query<{ n: number }>(
      `select count(*)::int as n from notification_group_member
       where group_event_id = $1::uuid and recipient_actor_id = $2::text and group_key = $3::text`,
      [groupEventId, recipient, group.key],
    );
    const text = group.summary(rows[0]!.n);
    await client.query(
      `update notification
       set subject = $4::text, body = $5::text, data = $6::jsonb, updated_at = now(),
         read_at = case when channel = 'in_app' then null else read_at end
       where source_event_id = $1::uuid and recipient_actor_id = $2::text and kind = $3::text
         and (channel = 'in_app' or status <> 'sent')`,
      [groupEventId, recipient, kind, text.subject, text.body, JSON.stringify(text.data)],
    );
  }
}
