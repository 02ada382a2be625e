import { actorSuspendedSql } from "../../lib/accounts.js";
import { NEARBY_DELIVERY_PRIORITY } from "../../lib/alerts.js";
import { withTransaction, type Pool, type Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { enqueueDeliveries } from "../../lib/notifications.js";
import { channelsFor, emailPreferences, type NewNotification } from "../store.js";
import { digestDraft, digestSourceId, type AlertReport } from "./messages.js";
import { insertAlertNotifications, needingDelivery } from "./store.js";

/**
 * The morning digest (graphile-worker cron in the notifier's worker): each
 * subscriber's alerts deferred past the daily cap on an earlier UTC day
 * become one nearby_lost notification per day, listing the reports that are
 * still open and not moderated. Idempotent: the ledger rows move from
 * deferred to digested in the transaction that writes the notification,
 * whose source id is derived from (subscriber, day). A subscriber suspended
 * by then, or whose subscription is gone (unsubscribed since), gets none of
 * those reports: their rows move to skipped instead.
 */

/** Subscriber-days per transaction. */
const DIGEST_SLICE = 500;

interface DigestRow extends AlertReport {
  actorId: string;
  day: string;
  subscriptionId: string;
  distanceM: number;
  /** To list: not skipped, and the report is still open and not moderated. */
  due: boolean;
}

async function takeDeferred(client: Queryable, today: string, limit: number): Promise<DigestRow[]> {
  const { rows } = await client.query<DigestRow>(
    `with picked as (
       select distinct actor_id, day from alert_ledger
       where status = 'deferred' and day < $1::date
       order by day, actor_id
       limit $2::int
     ),
     taken as (
       update alert_ledger l
       set status = case
           when ${actorSuspendedSql("l.actor_id")} or not exists (select 1 from alert_subscription s where s.id = l.subscription_id) then 'skipped'
           else 'digested'
         end,
         decided_at = now()
       from picked p
       where l.actor_id = p.actor_id and l.day = p.day and l.status = 'deferred'
       returning l.actor_id, l.day, l.report_id, l.subscription_id, l.distance_m, l.status
     )
     select t.actor_id as "actorId", to_char(t.day, 'YYYY-MM-DD') as day, t.report_id as "reportId",
       t.subscription_id as "subscriptionId", t.distance_m as "distanceM",
       r.species as "species", st_y(r.coarse_location::geometry) as lat, st_x(r.coarse_location::geometry) as lon,
       r.last_seen_at as "lastSeenAt", (t.status = 'digested' and r.status = 'open' and m.state is null) as "due"
     from taken t
     join safety_lost_report r on r.id = t.report_id
     left join moderation_content_state m on m.target_type = 'lost_report' and m.target_id = r.id
     order by t.actor_id, t.day, r.created_at`,
    [today, limit],
  );
  return rows;
}

export interface DigestResult {
  subscriberDays: number;
  notifications: number;
}

/** Sends every digest due before `today` (UTC date, YYYY-MM-DD; defaults to the database's today). */
export async function runDigest(pool: Pool, today?: string): Promise<DigestResult> {
  const day =
    today ?? (await pool.query<{ day: string }>(`select to_char((now() at time zone 'utc')::date, 'YYYY-MM-DD') as day`)).rows[0]!.day;
  const result: DigestResult = { subscriberDays: 0, notifications: 0 };
  for (;;) {
    const slice = await withTransaction(pool, async (client) => {
      const rows = await takeDeferred(client, day, DIGEST_SLICE);
      const groups = Map.groupBy(rows.filter((r) => r.due), (r) => `${r.actorId}\n${r.day}`);
      const preferences = await emailPreferences(client, [...new Set(rows.map((r) => r.actorId))]);
      const notifications: NewNotification[] = [...groups.values()].flatMap((items) => {
        const { actorId, day: itemDay } = items[0]!;
        const draft = digestDraft(actorId, itemDay, items);
        return channelsFor(draft.kind, preferences.get(actorId)).map((channel) => ({
          ...draft,
          sourceEventId: digestSourceId(actorId, itemDay),
          eventType: EventType.AnimalLostReported,
          channel,
        }));
      });
      const inserted = await insertAlertNotifications(client, notifications);
      await enqueueDeliveries(client, needingDelivery(inserted), { priority: NEARBY_DELIVERY_PRIORITY });
      return { subscriberDays: new Set(rows.map((r) => `${r.actorId}\n${r.day}`)).size, notifications: inserted.length };
    });
    result.subscriberDays += slice.subscriberDays;
    result.notifications += slice.notifications;
    if (slice.subscriberDays === 0) break;
  }
  // Counts of days before yesterday can no longer cap anything.
  await pool.query(`delete from alert_daily_quota where day < $1::date - 1`, [day]);
  return result;
}
