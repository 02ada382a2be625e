import type { z } from "zod";
import type { QueryResult } from "pg";
import { exactTime, type Queryable } from "./db.js";
import { eventCatalogue, parseEventData, type EventData, type EventType } from "./events.js";
import { checkedIdentifier, type SqlColumn } from "./sql.js";

/** The slice of a logger the outbox needs; a request's logger carries the request id. */
export interface EventLog {
  info(fields: Record<string, unknown>, message: string): void;
}

/**
 * The outbox: every domain change inserts its event here in the same
 * transaction. Nothing in Postgres wakes the relay: each writer with a bus
 * connection publishes a wake-up after its commit (lib/bus.ts relayWaker),
 * and the relay's poll finds the rest (docs/decisions/0054-*).
 */

/**
 * The core NATS subject (no stream keeps it) every writer publishes on after
 * a commit that wrote outbox rows, and the relays listen on as one queue
 * group: a wake-up needs one relay.
 */
export const OUTBOX_WAKE_SUBJECT = "outbox.wake";
export const OUTBOX_WAKE_QUEUE = "relay";

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

/** What goes on the stream: the row's envelope as JSON text, with its subject (type) and Msg-Id (id). */
export interface PublishableOutboxRow {
  id: string;
  type: EventType;
  envelope: string;
}

/**
 * An outbox row's event envelope (lib/events.ts EventEnvelope: id, type,
 * occurredAt to the millisecond, data), written by Postgres as JSON text. The
 * relay publishes it as it comes: parsing each payload, its timestamp and the
 * row into objects only to serialise them again would cost a sixth of the
 * relay's CPU per event (process CPU over a 100,000-row drain, as
 * `npm run bench`'s relay drain runs it). Every publisher (relay, admin
 * requeue, republish task) takes its envelope from here.
 */
export const envelopeSql = `json_build_object('id', id, 'type', type,
  'occurredAt', to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'data', payload)::text`;

export const REQUEUE_LIMIT = 5;

export interface RecordedEvent {
  id: string;
  occurredAt: Date;
}

const insertEventSql = (type: string, payload: string, from?: string) =>
  `insert into outbox_event (type, payload) select ${type}, ${payload}${from ? ` from ${from}` : ""}
   returning id, occurred_at as "occurredAt"`;

/** SQL giving a geography column's point as an event's `{lat, lon}`. */
export const pointJson = (column: SqlColumn) =>
  `jsonb_build_object('lat', st_y(${column}::geometry), 'lon', st_x(${column}::geometry))`;

/**
 * Writes an event in the caller's transaction: the one way to write an event
 * when the domain change is its own statement. The payload is checked against
 * its type's schema (lib/events.ts) before anything is sent. With a log, it
 * writes the event id beside the request id, so one event can be followed
 * from the API through the relay to the notifier.
 */
export async function recordEvent<T extends EventType>(
  client: Queryable,
  type: T,
  data: EventData<T>,
  log?: EventLog,
): Promise<RecordedEvent> {
  const payload = parseEventData(type, data);
  const { rows } = await client.query<RecordedEvent>({
    name: "outbox-insert",
    text: insertEventSql("$1::text", "$2::jsonb"),
    values: [type, JSON.stringify(payload)],
  });
  const event = rows[0]!;
  logRecorded(log, event.id, type);
  return event;
}

/**
 * Several events of one type in one statement (a job that suggests many
 * matches at once), each payload checked against the type's schema first.
 */
export async function recordEventBatch<T extends EventType>(
  client: Queryable,
  type: T,
  batch: EventData<T>[],
  log?: EventLog,
): Promise<RecordedEvent[]> {
  if (batch.length === 0) return [];
  const payloads = batch.map((data) => JSON.stringify(parseEventData(type, data)));
  const { rows } = await client.query<RecordedEvent>({
    name: "outbox-insert-batch",
    text: insertEventSql("$1::text", "payload", "unnest($2::jsonb[]) as payload"),
    values: [type, payloads],
  });
  for (const event of rows) logRecorded(log, event.id, type);
  return rows;
}

/**
 * A domain write to embed with its event in one statement (recordWithEvent),
 * described rather than spliced: recordWithEvent names the write's CTE and
 * its own, so no caller spells them.
 */
export interface EmbeddedWrite<R extends object> {
  /** Prepared-statement name: the statement is planned once per connection. */
  name: string;
  /**
   * CTEs the write reads, by name, in order (the throttle's `token`); the
   * write refers to them by these names. `created` and `event` are taken.
   */
  reads?: Readonly<Record<string, string>>;
  /** The write: an insert `returning` the new row, or no row (then no event either). */
  write: string;
  /** Every parameter of `reads` and `write`, $1..$n in order (lib/sql.ts SqlParams numbers them). */
  values: unknown[];
  /** Each field of the result, as the column of the written row it comes from. */
  returns: { readonly [F in keyof R]: string };
}

/** The name recordWithEvent gives the written row; the event's SQL fields read it (`fromWritten`). */
const WRITTEN = "created";
const OWN_CTES = new Set([WRITTEN, "event"]);

const schemasWithout = new Map<string, z.ZodObject>();

/**
 * The type's payload schema less the fields SQL fills in, made once: zod 4
 * compiles an object schema's parser on its first parse, so an `omit` per
 * call would pay that compilation on every create (13 % of the API's CPU in
 * `COST_PROFILE=<dir> npm run bench:cost`'s profile).
 */
function payloadSchemaWithout(type: EventType, fields: readonly string[]): z.ZodObject {
  const key = `${type}:${fields.join(",")}`;
  let schema = schemasWithout.get(key);
  if (!schema) {
    schema = (eventCatalogue[type] as z.ZodObject).omit(Object.fromEntries(fields.map((k) => [k, true])) as never);
    schemasWithout.set(key, schema);
  }
  return schema;
}

/**
 * The same event write, embedded in ONE statement with its domain write: the
 * event is inserted only when the write returned a row. One round trip and
 * atomic on its own, for the hot creates (`npm run bench:statements` counts
 * their round trips). Payload fields named in `fromWritten` are SQL over the
 * written row, given its alias (so a coarse point comes from the stored
 * row); the rest is checked against the type's schema here. Returns the
 * `returns` fields and `eventId`, or null when nothing was written.
 */
export async function recordWithEvent<R extends object, T extends EventType, K extends keyof EventData<T> & string>(
  client: Queryable,
  write: EmbeddedWrite<R>,
  type: T,
  data: Omit<EventData<T>, K>,
  fromWritten: Record<K, (written: string) => string>,
  log?: EventLog,
): Promise<(R & { eventId: string }) | null> {
  const sqlFields = Object.keys(fromWritten) as K[];
  const checked = payloadSchemaWithout(type, sqlFields).parse(data);
  const n = write.values.length;
  const reads = Object.entries(write.reads ?? {}).map(([name, sql]) => {
    if (OWN_CTES.has(name)) throw new Error(`recordWithEvent names its own ${name} CTE`);
    return `${checkedIdentifier(name)} as (${sql}),`;
  });
  const fromRow = sqlFields.map((k) => `'${k}', ${fromWritten[k](WRITTEN)}`).join(", ");
  const columns = Object.entries<string>(write.returns).map(([field, column]) => `${WRITTEN}.${checkedIdentifier(column)} as "${field}"`);
  const { rows } = await client.query<R & { eventId: string }>({
    name: write.name,
    text: `with ${reads.join("\n     ")}
     ${WRITTEN} as (${write.write}),
     event as (${insertEventSql(`$${n + 1}::text`, `$${n + 2}::jsonb || jsonb_build_object(${fromRow})`, WRITTEN)})
     select ${columns.join(", ")}, event.id as "eventId" from ${WRITTEN}, event`,
    values: [...write.values, type, JSON.stringify(checked)],
  });
  const row = rows[0] ?? null;
  if (row) logRecorded(log, row.eventId, type);
  return row;
}

function logRecorded(log: EventLog | undefined, eventId: string, type: EventType): void {
  log?.info({ eventId, eventType: type }, "outbox: event recorded");
}

/**
 * Where a scan of the outbox in (occurred_at, id) order resumes: past this
 * row. The relay's claim (beginAndClaimUnpublishedBatch) and the republish
 * task's pages both walk it.
 */
export interface OutboxCursor {
  /** occurred_at as exact microsecond text (exactTime). */
  cursorAt: string;
  id: string;
}

/** A row to publish, with the cursor that resumes the scan past it. */
export interface CursoredOutboxRow extends PublishableOutboxRow, OutboxCursor {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const EXACT_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/**
 * Locks up to `limit` unpublished rows, oldest first, skipping rows another
 * relay holds. The locks last until the transaction ends, so a crashed relay
 * releases its rows the moment its connection drops.
 *
 * The relay's claim, with the `begin` of its transaction in the same
 * message: the simple query protocol carries several statements (and no
 * parameters, so the limit and cursor are inlined, checked) in one round
 * trip. Every relay wake-up pays this, so at a few creates a second the
 * relay's round trips per batch are two, not four (`npm run bench:statements`). The caller
 * ends the transaction with markPublishedAndCommit, or rolls it back.
 *
 * With `after`, the scan starts past the drain's last claimed row. Without
 * it, every claim of a long drain walked the partial index from its start,
 * over the entries of every row published since the last vacuum: a
 * published row leaves its entry behind, and autovacuum does not run inside a
 * drain of seconds (nor at all on the CI machine). Postgres would spend most
 * of a drain's CPU there (`npm run bench`, relay drain).
 */
export async function beginAndClaimUnpublishedBatch(
  client: Queryable,
  limit: number,
  after: OutboxCursor | null = null,
): Promise<CursoredOutboxRow[]> {
  const results = (await client.query(`begin; ${CLAIM_BY_INDEX_SCAN}; ${claimSql(limit, after)}`)) as unknown as Array<
    QueryResult<CursoredOutboxRow>
  >;
  return results[2]!.rows;
}

/**
 * The claim's plan, set for its transaction: a plain scan of the partial
 * index, never a bitmap scan (nor a sequential one, which reads every
 * page). Estimating a handful of unpublished rows (the usual state), the
 * planner picks a bitmap scan and a sort, and a bitmap scan never marks
 * dead the entries that published rows leave behind (btree's
 * kill_prior_tuple is for plain index scans only). So every claim
 * rechecked, in the heap, every row published since the last vacuum: with
 * 3,600 of them, 167 heap pages and 1.15 ms a claim, more Postgres CPU per
 * create than the create's own transaction (`npm run bench:cost`).
 * A plain scan marks them on its first pass, and later claims step over them
 * in the index: 19 index pages and 0.08 ms.
 */
export const CLAIM_BY_INDEX_SCAN = "select set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true)";

/** The relay's claim, exported for the plan test; checks what it inlines. */
export function claimSql(limit: number, after: OutboxCursor | null): string {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`claim limit must be a positive integer, got ${limit}`);
  if (after && !(EXACT_TIME.test(after.cursorAt) && UUID.test(after.id))) {
    throw new Error(`not a claim cursor: ${JSON.stringify(after)}`);
  }
  // The first bound is implied by the second, but the planner prunes partitions on a plain comparison of the
  // partition key and not on a row comparison: with it, a claim past the cursor plans and scans only the days
  // from the cursor's on (0.23 ms of planning against 0.76 ms over 7 days, `explain (analyze, summary)`).
  const past = after
    ? `and occurred_at >= '${after.cursorAt}'::timestamptz and (occurred_at, id) > ('${after.cursorAt}'::timestamptz, '${after.id}'::uuid)`
    : "";
  return `select id, type, ${envelopeSql} as envelope, ${exactTime("occurred_at")} as "cursorAt"
     from outbox_event
     where published_at is null ${past}
     order by occurred_at, id
     limit ${limit}
     for update skip locked`;
}

/**
 * Marks the claimed rows published and commits, in one round trip (see
 * beginAndClaimUnpublishedBatch); the ids are the claim's own uuids, checked
 * before they are inlined. No `published_at is null` test: the claim's row
 * locks keep every other writer off these rows, and with that test the
 * planner may pick the partial index of unpublished rows, whose predicate it
 * implies, over the primary key. It does when its statistics were taken with
 * no backlog (the usual state) and a backlog has built up since, a bus outage
 * say: each update then walked the whole backlog's index entries, 116 ms per
 * batch of 100 with 27,000 rows left against 5.6 ms by primary key, and the
 * drain fell from about 4,500 to 560 events/s, just when it had most to do.
 */
export async function markPublishedAndCommit(client: Queryable, ids: string[], within?: ClaimedSpan): Promise<void> {
  for (const id of ids) if (!UUID.test(id)) throw new Error(`not an outbox id: ${JSON.stringify(id)}`);
  if (within && !(EXACT_TIME.test(within.from) && EXACT_TIME.test(within.to))) {
    throw new Error(`not a claimed span: ${JSON.stringify(within)}`);
  }
  await client.query(ids.length === 0 ? "commit" : `${markPublishedSql(ids, within)}; commit`);
}

/**
 * The occurred_at of a claimed batch's first and last rows (exact
 * microsecond text, the claim's cursorAt). Given to the mark, it bounds the
 * update to the days the batch lies in: the outbox is partitioned by day
 * (migration 000022), and the planner then prunes every other day's
 * partition instead of probing each day's key index for each id.
 */
export interface ClaimedSpan {
  from: string;
  to: string;
}

/** The claimed span of rows in (occurred_at, id) order, as the claim returns them. */
export const claimedSpan = (rows: OutboxCursor[]): ClaimedSpan | undefined =>
  rows.length === 0 ? undefined : { from: rows[0]!.cursorAt, to: rows.at(-1)!.cursorAt };

/** The relay's mark, exported for the plan test; `ids` must be checked uuids, `within` checked times. */
export const markPublishedSql = (ids: string[], within?: ClaimedSpan) =>
  `update outbox_event set published_at = now() where id = any('{${ids.join(",")}}'::uuid[])` +
  (within ? ` and occurred_at between '${within.from}'::timestamptz and '${within.to}'::timestamptz` : "");

export async function markPublished(client: Queryable, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await client.query(
    `update outbox_event set published_at = now()
     where id = any($1::uuid[]) and published_at is null`,
    [ids],
  );
}

/** Locks one row for a requeue; null when it does not exist. */
export async function lockOutboxEvent(client: Queryable, id: string): Promise<(OutboxRow & PublishableOutboxRow) | null> {
  const { rows } = await client.query<OutboxRow & PublishableOutboxRow>(
    `select ${outboxColumns}, ${envelopeSql} as envelope from outbox_event where id = $1::uuid for update`,
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
            ${exactTime("occurred_at")} as "cursorAt"
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
