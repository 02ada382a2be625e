import { randomUUID } from "node:crypto";
import type pg from "pg";
import { withTransaction } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { enqueueMany } from "../../jobs/queue.js";
import { fanoutStartJob } from "../../jobs/fanout/fanout.js";
import { insertFanout } from "../../jobs/fanout/store.js";

/** Set-up shared by the alert test files: subscriptions and fan-outs straight in the database. */

export interface LatLon {
  lat: number;
  lon: number;
}

/** A point `km` north and `eastKm` east of `from` (small distances; about 111.2 km per degree of latitude). */
export function offset(from: LatLon, km: number, eastKm = 0): LatLon {
  const lat = from.lat + km / 111.2;
  const lon = from.lon + eastKm / (111.2 * Math.cos((from.lat * Math.PI) / 180));
  return { lat: Number(lat.toFixed(6)), lon: Number(lon.toFixed(6)) };
}

/** Inserts a subscription as the API stores it; returns its id. */
export async function subscribe(db: pg.Pool, actorId: string, point: LatLon, radiusKm: number, species: string[] | null = null): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `insert into alert_subscription (actor_id, location, radius_m, species)
     values ($1, st_setsrid(st_makepoint($3, $2), 4326)::geography, $4, $5) returning id`,
    [actorId, point.lat, point.lon, radiusKm * 1000, species],
  );
  return rows[0]!.id;
}

/**
 * Starts a fan-out for an event id of our own (a new report, or a move): its
 * start job queued as the consumer queues it, and its row recorded as that
 * job's batch 0 would, so a test may run batch 0 itself with runFanoutBatch.
 */
export async function startTestFanout(pool: pg.Pool, reportId: string, eventId = randomUUID()): Promise<string> {
  const start = { reportId, eventId, eventType: EventType.AnimalLostReported };
  await withTransaction(pool, async (c) => {
    await enqueueMany(c, [fanoutStartJob(start)]);
    await insertFanout(c, start);
  });
  return eventId;
}

export interface FanoutRow {
  status: string;
  stop_reason: string | null;
  next_batch: number;
  recipients: number | null;
  notified: number;
  deferred: number;
  skipped: number;
  batches_done: number;
}

/** The fan-out's row; undefined before its start job recorded it. */
export async function fanoutRow(db: pg.Pool, eventId: string): Promise<FanoutRow> {
  const { rows } = await db.query<FanoutRow>(`select * from alert_fanout where event_id = $1`, [eventId]);
  return rows[0]!;
}

export async function nearbyRecipients(db: pg.Pool, reportId: string): Promise<string[]> {
  const { rows } = await db.query<{ r: string }>(
    `select recipient_actor_id as r from notification where kind = 'nearby_lost' and data->>'lostReportId' = $1 and channel = 'in_app' order by 1`,
    [reportId],
  );
  return rows.map((row) => row.r);
}

/** The stored coarse point of a report (what its public view shows). */
export async function coarsePoint(db: pg.Pool, reportId: string): Promise<LatLon> {
  const { rows } = await db.query<LatLon>(
    `select st_y(coarse_location::geometry) as lat, st_x(coarse_location::geometry) as lon from safety_lost_report where id = $1`,
    [reportId],
  );
  return rows[0]!;
}

/** The database's UTC date (YYYY-MM-DD): the day a fan-out counts its alerts against the cap. */
export async function utcToday(db: pg.Pool): Promise<string> {
  const { rows } = await db.query<{ day: string }>(`select to_char((now() at time zone 'utc')::date, 'YYYY-MM-DD') as day`);
  return rows[0]!.day;
}

/** The UTC date after `day`: when the morning digest for `day` runs. */
export const dayAfter = (day: string): string => new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);

/** The sizes of a fan-out's batches still to run, in order. */
export async function batchSizes(db: pg.Pool, eventId: string): Promise<number[]> {
  const { rows } = await db.query<{ n: number }>(
    `select cardinality(actor_ids) as n from alert_fanout_batch where fanout_event_id = $1 order by batch`,
    [eventId],
  );
  return rows.map((r) => r.n);
}
