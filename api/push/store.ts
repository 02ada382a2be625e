import type { Queryable } from "../../lib/db.js";
import { MAX_PUSH_SUBSCRIPTIONS_PER_ACTOR } from "../../lib/push.js";
import type { CreatePushSubscriptionBody } from "./schemas.js";

/** Push subscriptions (migration 000020): one row per endpoint, owned by the actor who posted it. */

/** Serialises one actor's creations, so two posts at once cannot both pass the count. */
export async function lockActorSubscriptions(client: Queryable, actorId: string): Promise<void> {
  await client.query(`select pg_advisory_xact_lock(hashtextextended($1::text, 0))`, [`push-subscriptions:${actorId}`]);
}

/** The row of this endpoint, whoever owns it. */
export async function findByEndpoint(client: Queryable, endpoint: string): Promise<{ id: string; actorId: string } | null> {
  const { rows } = await client.query<{ id: string; actorId: string }>(
    `select id, actor_id as "actorId" from push_subscription where endpoint = $1::text`,
    [endpoint],
  );
  return rows[0] ?? null;
}

/** Updates the keys of the actor's existing endpoint (a browser re-subscribing gets new keys). */
export async function refreshKeys(client: Queryable, id: string, keys: CreatePushSubscriptionBody["keys"]): Promise<void> {
  await client.query(`update push_subscription set p256dh = $2::text, auth = $3::text where id = $1::uuid`, [id, keys.p256dh, keys.auth]);
}

/**
 * Inserts the subscription while the actor has fewer than the maximum; null
 * at the maximum. An endpoint belongs to one actor (contract part 4): one
 * another actor holds is never taken over, "taken" (which only a concurrent
 * post of the same endpoint by another actor reaches; the route read it first).
 */
export async function insertSubscription(
  client: Queryable,
  actorId: string,
  body: CreatePushSubscriptionBody,
): Promise<{ id: string } | "taken" | null> {
  const { rows } = await client.query<{ id: string | null }>(
    `with inserted as (
       insert into push_subscription (actor_id, endpoint, p256dh, auth)
       select $1::text, $2::text, $3::text, $4::text
       where (select count(*) from push_subscription where actor_id = $1::text) < $5::int
       on conflict (endpoint) do nothing
       returning id)
     select (select id from inserted) as id,
            (select count(*) from push_subscription where actor_id = $1::text) < $5::int as "underLimit"`,
    [actorId, body.endpoint, body.keys.p256dh, body.keys.auth, MAX_PUSH_SUBSCRIPTIONS_PER_ACTOR],
  );
  const row = rows[0] as { id: string | null; underLimit: boolean };
  if (row.id) return { id: row.id };
  return row.underLimit ? "taken" : null;
}

export async function listSubscriptions(
  client: Queryable,
  actorId: string,
): Promise<Array<{ id: string; endpoint: string; createdAt: Date }>> {
  const { rows } = await client.query<{ id: string; endpoint: string; createdAt: Date }>(
    `select id, endpoint, created_at as "createdAt" from push_subscription where actor_id = $1::text order by created_at desc, id`,
    [actorId],
  );
  return rows;
}

export async function deleteOwnSubscription(client: Queryable, actorId: string, id: string): Promise<boolean> {
  const { rowCount } = await client.query(`delete from push_subscription where id = $1::uuid and actor_id = $2::text`, [id, actorId]);
  return (rowCount ?? 0) > 0;
}
