import { MAX_SUBSCRIPTIONS_PER_ACTOR } from "../../lib/alerts.js";
import type { Species } from "../../lib/animals.js";
import { HOUR, type BucketSpec } from "../../lib/buckets.js";
import { exactTime, type Queryable } from "../../lib/db.js";
import { toWkt } from "../../lib/geo.js";
import type { TimeIdCursor } from "../pagination.js";
import type { CreateAlertSubscriptionBody } from "./schemas.js";

/** Subscription creation: 10 per hour per actor, kept in Postgres (lib/buckets.ts), on top of the 5 live at once. */
export function subscriptionCreationBucket(actorId: string): BucketSpec {
  return { key: `alert-subscription-create:${actorId}`, capacity: 10, refillPerSecond: 10 / HOUR };
}

/**
 * Inserts the subscription unless the actor has the maximum already; null
 * then. Run after the creation token was taken in the same transaction: the
 * bucket row's lock serialises an actor's creates, so this statement's count
 * (taken after the lock) cannot be raced past the limit.
 */
export async function insertSubscription(
  client: Queryable,
  actorId: string,
  body: CreateAlertSubscriptionBody,
): Promise<{ id: string; createdAt: Date } | null> {
  const { rows } = await client.query<{ id: string; createdAt: Date }>(
    `insert into alert_subscription (actor_id, location, radius_m, species)
     select $1::text, $2::geography, $3::double precision, $4::text[]
     where (select count(*) from alert_subscription where actor_id = $1::text) < $5::int
     returning id, created_at as "createdAt"`,
    [actorId, toWkt(body.location), body.radiusKm * 1000, body.species ?? null, MAX_SUBSCRIPTIONS_PER_ACTOR],
  );
  return rows[0] ?? null;
}

export interface SubscriptionRow {
  id: string;
  lat: number;
  lon: number;
  radiusM: number;
  species: Species[] | null;
  createdAt: Date;
  cursorAt: string;
}

/** The actor's own subscriptions, newest first: the one place their precise points are shown. */
export async function listSubscriptions(client: Queryable, actorId: string, limit: number, after: TimeIdCursor | null): Promise<SubscriptionRow[]> {
  const { rows } = await client.query<SubscriptionRow>(
    `select id, st_y(location::geometry) as lat, st_x(location::geometry) as lon, radius_m as "radiusM", species,
       created_at as "createdAt", ${exactTime("created_at")} as "cursorAt"
     from alert_subscription
     where actor_id = $1::text
       and ($2::timestamptz is null or (created_at, id) < ($2::timestamptz, $3::uuid))
     order by created_at desc, id desc
     limit $4::int`,
    [actorId, after?.at ?? null, after?.id ?? null, limit],
  );
  return rows;
}

/** False when the subscription does not exist or is someone else's. */
export async function deleteOwnSubscription(client: Queryable, actorId: string, id: string): Promise<boolean> {
  const { rowCount } = await client.query(`delete from alert_subscription where id = $1::uuid and actor_id = $2::text`, [id, actorId]);
  return rowCount === 1;
}

/** The one-click unsubscribe: deletes exactly the subscriptions a verified token names, whoever owns them. */
export async function deleteSubscriptions(client: Queryable, ids: string[]): Promise<number> {
  const { rowCount } = await client.query(`delete from alert_subscription where id = any($1::uuid[])`, [ids]);
  return rowCount ?? 0;
}
