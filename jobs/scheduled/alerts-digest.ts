import { actorSuspendedSql } from "../../lib/accounts.js";
import { DAILY_ALERT_CAP, NEARBY_DELIVERY_BATCH, NEARBY_DELIVERY_PRIORITY } from "../../lib/alerts.js";
import { withTransaction, type Pool, type Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { enqueueDeliveryBatches } from "../queue.js";
import { channelsFor, emailPreferences, insertNotifications, needingDelivery, type NewNotification } from "../../lib/notification-rows.js";
import { closestCoveringSubscriptions } from "../fanout/coverage.js";
import { digestDraft, digestSourceId, type AlertReport } from "../fanout/messages.js";

/**
 * The morning digest (graphile-worker cron in the notifier's worker): each
 * subscriber's alerts deferred past the daily cap on an earlier UTC day
 * become one nearby_lost notification per day, listing the reports that are
 * still open and not moderated. Idempotent: the ledger rows move from
 * deferred to digested in the transaction that writes the notification,
 * whose source id is derived from (subscriber, day). A subscriber suspended
 * by then, or whose subscription is gone (unsubscribed since), gets none of
 * those reports: their rows move to skipped instead.
 *
 * A fan-out writes no row for a subscriber it defers (a burst in a city
 * would write hundreds of thousands), so the digest first writes them
 * (recordDeferrals): per fan-out that deferred anyone, the subscribers
 * it covers who had reached the cap on a day it ran and have no row.
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

/**
 * The digest's first pass: fan-outs that deferred subscribers and whose
 * deferred ledger rows are not all written yet, started before `today`
 * (UTC date), oldest first.
 */
async function fanoutsWithUnlistedDeferrals(client: Queryable, today: string): Promise<string[]> {
  const { rows } = await client.query<{ eventId: string }>(
    `select event_id as "eventId" from alert_fanout
     where deferred > 0 and not deferrals_listed and created_at < $1::date::timestamp at time zone 'utc'
     order by created_at`,
    [today],
  );
  return rows.map((r) => r.eventId);
}

/**
 * Writes a fan-out's deferred ledger rows, as of the days before `today` it
 * ran on: every subscriber its report reaches through a subscription that
 * existed when the fan-out started, with no ledger row for the report yet
 * (not notified, nor listed by an earlier pass), whose count reached the cap
 * on one of those days (the first such day is theirs). That is who its
 * batches deferred, as they wrote nothing for them. A fan-out finished before
 * `today` is then marked listed; a running one is looked at again tomorrow.
 * Safe to run twice. Returns the rows written.
 */
async function recordDeferrals(client: Queryable, eventId: string, today: string, dailyCap: number): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    `with fanout as (
       select f.event_id, f.report_id, f.created_at, (f.created_at at time zone 'utc')::date as first_day,
         least(coalesce((f.finished_at at time zone 'utc')::date, $2::date), $2::date - 1) as last_day,
         f.status <> 'running' and f.finished_at < $2::date::timestamp at time zone 'utc' as finished
       from alert_fanout f where f.event_id = $1::uuid
     ),
     deferred as (
       insert into alert_ledger (report_id, actor_id, fanout_event_id, subscription_id, distance_m, status, day, decided_at)
       select f.report_id, c.actor_id, f.event_id, c.subscription_id, c.distance_m, 'deferred', capped.day, now()
       from fanout f
       cross join lateral (${closestCoveringSubscriptions("f.report_id", { subscribedBy: "f.created_at" })}) c
       cross join lateral (
         select q.day from alert_daily_quota q
         where q.actor_id = c.actor_id and q.day between f.first_day and f.last_day and q.sent >= $3::int
         order by q.day limit 1
       ) capped
       where not exists (select 1 from alert_ledger l where l.report_id = f.report_id and l.actor_id = c.actor_id)
       on conflict (report_id, actor_id) do nothing
       returning 1
     ),
     listed as (
       update alert_fanout a set deferrals_listed = true from fanout f where a.event_id = f.event_id and f.finished
     )
     select count(*)::int as n from deferred`,
    [eventId, today, dailyCap],
  );
  return rows[0]!.n;
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
export async function runDigest(pool: Pool, today?: string, dailyCap = DAILY_ALERT_CAP, deliveryBatch = NEARBY_DELIVERY_BATCH): Promise<DigestResult> {
  const day =
    today ?? (await pool.query<{ day: string }>(`select to_char((now() at time zone 'utc')::date, 'YYYY-MM-DD') as day`)).rows[0]!.day;
  for (const fanout of await fanoutsWithUnlistedDeferrals(pool, day)) {
    await withTransaction(pool, (client) => recordDeferrals(client, fanout, day, dailyCap));
  }
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
          // Fixed with the id, so a retried digest conflicts with the first (jobs/delivery/store.ts NewNotification).
          sourceOccurredAt: `${itemDay}T00:00:00Z`,
          eventType: EventType.AnimalLostReported,
          channel,
        }));
      });
      const inserted = await insertNotifications(client, notifications);
      await enqueueDeliveryBatches(client, needingDelivery(inserted), { priority: NEARBY_DELIVERY_PRIORITY, size: deliveryBatch });
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
