import type { Queryable } from "./db.js";
import type { EventEnvelope, EventType } from "./events.js";

/** The slice of a logger the outbox needs; a request's logger carries the request id. */
export interface EventLog {
  info(fields: Record<string, unknown>, message: string): void;
}

/**
 * The outbox: every domain change inserts its event here in the same
 * transaction. A statement trigger queues the relay job (see migrations).
 */

export interface OutboxRow {
  id: string;
  type: EventType;
  occurredAt: Date;
  publishedAt: Date | null;
  requeueCount: number;
  payload: Record<string, unknown>;
}

const outboxColumns = `id, type, occurred_at as "occurredAt", published_at as "publishedAt",
  requeue_count as "requeueCount", payload`;

export const REQUEUE_LIMIT = 5;

/**
 * The outbox insert, with the caller's placeholders. `from` names a CTE whose
 * rows gate it: a write that embeds it inserts its event only when the
 * domain insert returned a row.
 */
export function outboxInsertSql(type: string, payload: string, from?: string): string {
  return `insert into outbox_event (type, payload) select ${type}, ${payload}${from ? ` from ${from}` : ""}
     returning id, occurred_at as "occurredAt"`;
}

/**
 * Inserts the event in the caller's transaction. With a log, it writes the
 * event id beside the request id, so one event can be followed from the API
 * through the relay to the notifier.
 */
export async function insertOutboxEvent(
  client: Queryable,
  type: EventType,
  data: Record<string, unknown>,
  log?: EventLog,
): Promise<{ id: string; occurredAt: Date }> {
  const { rows } = await client.query<{ id: string; occurredAt: Date }>({
    name: "outbox-insert",
    text: outboxInsertSql("$1::text", "$2::jsonb"),
    values: [type, JSON.stringify(data)],
  });
  const event = rows[0]!;
  logEventRecorded(log, event.id, type);
  return event;
}

export function logEventRecorded(log: EventLog | undefined, eventId: string, type: EventType): void {
  log?.info({ eventId, eventType: type }, "outbox: event recorded");
}

/**
 * Locks up to `limit` unpublished rows, oldest first, skipping rows another
 * relay holds. The locks last until the caller's transaction ends, so a
 * crashed relay releases its rows the moment its connection drops.
 */
export async function claimUnpublishedBatch(client: Queryable, limit: number): Promise<OutboxRow[]> {
  const { rows } = await client.query<OutboxRow>(
    `select ${outboxColumns}
     from outbox_event
     where published_at is null
     order by occurred_at, id
     limit $1::int
     for update skip locked`,
    [limit],
  );
  return rows;
}

export async function markPublished(client: Queryable, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await client.query(
    `update outbox_event set published_at = now()
     where id = any($1::uuid[]) and published_at is null`,
    [ids],
  );
}

/** Locks one row for a requeue; null when it does not exist. */
export async function lockOutboxEvent(client: Queryable, id: string): Promise<OutboxRow | null> {
  const { rows } = await client.query<OutboxRow>(
    `select ${outboxColumns} from outbox_event where id = $1::uuid for update`,
    [id],
  );
  return rows[0] ?? null;
}

export async function incrementRequeueCount(client: Queryable, id: string): Promise<number> {
  const { rows } = await client.query<{ requeueCount: number }>(
    `update outbox_event set requeue_count = requeue_count + 1 where id = $1::uuid
     returning requeue_count as "requeueCount"`,
    [id],
  );
  return rows[0]!.requeueCount;
}

/**
 * A stuck row with its age by Postgres' clock (the one the threshold uses) and
 * its occurred_at as exact microsecond text: a cursor built from the
 * millisecond Date would repeat rows at a page edge.
 */
export interface StuckOutboxRow extends OutboxRow {
  ageSeconds: number;
  cursorAt: string;
}

export async function listStuckEvents(
  client: Queryable,
  olderThanSeconds: number,
  limit: number,
  after: { occurredAt: string; id: string } | null,
): Promise<StuckOutboxRow[]> {
  const { rows } = await client.query<StuckOutboxRow>(
    `select ${outboxColumns},
            floor(extract(epoch from now() - occurred_at))::int as "ageSeconds",
            to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as "cursorAt"
     from outbox_event
     where published_at is null
       and occurred_at < now() - make_interval(secs => $1::double precision)
       and ($2::timestamptz is null or (occurred_at, id) > ($2::timestamptz, $3::uuid))
     order by occurred_at, id
     limit $4::int`,
    [olderThanSeconds, after?.occurredAt ?? null, after?.id ?? null, limit],
  );
  return rows;
}

export function toEnvelope(row: OutboxRow): EventEnvelope {
  return { id: row.id, type: row.type, occurredAt: row.occurredAt.toISOString(), data: row.payload };
}
