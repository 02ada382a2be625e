import type { Queryable } from "./db.js";

/**
 * Token buckets kept in Postgres, for limits that must hold across restarts
 * and API instances. take() runs inside the caller's transaction: the row
 * lock serialises concurrent takes for one key, and a rolled-back write
 * gives its token back.
 */
export interface BucketSpec {
  /** e.g. `report-create:<actor>` */
  key: string;
  capacity: number;
  refillPerSecond: number;
}

/**
 * The token-taking upsert, written with the caller's placeholders so a write
 * can embed it as a CTE: it returns a row only when a token was taken. The
 * row lock serialises concurrent takes for one key. With `onlyIf`, a SQL
 * condition, nothing is taken (nor inserted) while it is false.
 */
export function takeTokenSql(key: string, capacity: string, refillPerSecond: string, onlyIf = "true"): string {
  const refilled = `least(${capacity}, b.tokens + greatest(0, extract(epoch from clock_timestamp() - b.updated_at)) * ${refillPerSecond})`;
  return `insert into rate_limit_bucket as b (key, tokens, updated_at)
     select ${key}, ${capacity} - 1, clock_timestamp() where ${onlyIf}
     on conflict (key) do update
       set tokens = ${refilled} - 1, updated_at = clock_timestamp()
       where ${refilled} >= 1
     returning tokens`;
}

/** Returns 0 when a token was taken, else the seconds until one is available. */
export async function takeBucketToken(client: Queryable, spec: BucketSpec): Promise<number> {
  const taken = await client.query({
    name: "bucket-take",
    text: takeTokenSql("$1::text", "$2::double precision", "$3::double precision"),
    values: [spec.key, spec.capacity, spec.refillPerSecond],
  });
  return taken.rows.length > 0 ? 0 : secondsUntilToken(client, spec);
}

/** After a refused take: how long until the bucket holds a token again. */
export async function secondsUntilToken(client: Queryable, { key, capacity, refillPerSecond }: BucketSpec): Promise<number> {
  const { rows } = await client.query<{ tokens: number }>(
    `select least($2::double precision,
                  tokens + greatest(0, extract(epoch from clock_timestamp() - updated_at)) * $3::double precision) as tokens
     from rate_limit_bucket where key = $1::text`,
    [key, capacity, refillPerSecond],
  );
  const tokens = rows[0]?.tokens ?? 0;
  return Math.max(1, (1 - tokens) / refillPerSecond);
}

export const HOUR = 3_600;

/** Lost and found report creation share this per-actor bucket: 5 per hour. */
export function reportCreationBucket(actorId: string): BucketSpec {
  return { key: `report-create:${actorId}`, capacity: 5, refillPerSecond: 5 / HOUR };
}

/** Edits (PATCH) of an actor's lost and found reports share this per-actor bucket. */
export const REPORT_EDITS_PER_HOUR = 20;
export function reportEditBucket(actorId: string): BucketSpec {
  return { key: `report-edit:${actorId}`, capacity: REPORT_EDITS_PER_HOUR, refillPerSecond: REPORT_EDITS_PER_HOUR / HOUR };
}

/** Anonymous contact messages: 5 per hour per client IP. The stored key keeps its first name, so no bucket restarts. */
export function contactMessageBucket(clientIp: string): BucketSpec {
  return { key: `relay-message:${clientIp}`, capacity: 5, refillPerSecond: 5 / HOUR };
}

/** A bucket of `perHour` tokens that refills them over an hour. */
const hourly = (key: string, perHour: number): BucketSpec => ({ key, capacity: perHour, refillPerSecond: perHour / HOUR });

/** Sightings an actor makes: 20 per hour. A sighting notifies an owner and may carry a note, so it is not free to repeat. */
export const SIGHTINGS_PER_HOUR = 20;
export const sightingBucket = (actorId: string) => hourly(`sighting:${actorId}`, SIGHTINGS_PER_HOUR);

/** Moderation reports an actor files: the same 20 per hour as sightings, so the queue cannot be flooded either. */
export const MODERATION_REPORTS_PER_HOUR = 20;
export const moderationReportBucket = (actorId: string) => hourly(`moderation-report:${actorId}`, MODERATION_REPORTS_PER_HOUR);

/**
 * New animals a shelter partner publishes: 500 an hour (contract part 4). A
 * shelter's whole intake fits many times over; a runaway program does not
 * flood matching and alerts. Updates of an animal it has are not counted.
 */
export const PARTNER_ANIMALS_PER_HOUR = 500;
export const partnerAnimalCreationBucket = (partnerId: string) => hourly(`partner-animal-create:${partnerId}`, PARTNER_ANIMALS_PER_HOUR);
