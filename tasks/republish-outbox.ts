/**
 * Republishes the published outbox rows of a time window to the stream, after
 * the bus lost data (a stream deleted or rebuilt, a node's unsynced writes
 * gone). The outbox stays the source of truth for OUTBOX_RETENTION_DAYS.
 *
 *   tsx tasks/republish-outbox.ts --from <ISO time> --to <ISO time> --operator <your id> [--execute]
 *
 * The window is [from, to) on occurred_at. Without --execute it only counts,
 * from the database. With it, every row goes out through the relay's own
 * publish (lib/bus.ts publishOutboxRow: Nats-Msg-Id = outbox id, stream ack),
 * and audit `operator.outbox_republished` with the counts is written in the
 * transaction that read the rows. A missing stream is created with the
 * processes' settings (NATS_STREAM, NATS_REPLICAS); an existing one is left as
 * it is. Running it twice is safe: inside the stream's duplicate window the
 * copies are dropped by Msg-Id, after it the notifier's unique index on
 * notification.source_event_id ignores them. Unpublished rows are the relay's.
 */
import { jetstreamManager, JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { pino } from "pino";
import type pg from "pg";
import { AuditAction, AuditObject, writeAuditEvent } from "../lib/audit.js";
import { busClient, connectBus, ensureStream, publishOutboxRow, type JetStreamClient } from "../lib/bus.js";
import { loadBusToolConfig, type BusToolConfig } from "../lib/config.js";
import { exactTime } from "../lib/db.js";
import { envelopeSql, type CursoredOutboxRow, type OutboxCursor } from "../lib/outbox.js";
import { parseTaskArgs, print, required, withTaskClient } from "./lib.js";

const usage = "republish-outbox --from <ISO time> --to <ISO time> --operator <id> [--execute]";
const args = parseTaskArgs(usage, {
  from: { type: "string" },
  to: { type: "string" },
  operator: { type: "string" },
});
const operator = required(args.operator, "operator", usage);
const from = new Date(required(args.from, "from", usage));
const to = new Date(required(args.to, "to", usage));
if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime()) || from >= to) {
  console.error(`--from and --to must be ISO times with from < to\nusage: ${usage}`);
  process.exit(2);
}
const window = { from: from.toISOString(), to: to.toISOString() };

/** As many as the relay publishes at once: one batch in flight. */
const PAGE = 100;

let config: BusToolConfig;
try {
  config = loadBusToolConfig(process.env);
} catch (err) {
  console.error((err as Error).message);
  process.exit(2);
}

/** One page of the window's published rows, in (occurred_at, id) order, after the cursor. */
async function readPage(client: pg.Client, after: OutboxCursor | null): Promise<CursoredOutboxRow[]> {
  const { rows } = await client.query<CursoredOutboxRow>(
    `select id, type, ${envelopeSql} as envelope,
            ${exactTime("occurred_at")} as "cursorAt"
     from outbox_event
     where published_at is not null and occurred_at >= $1::timestamptz and occurred_at < $2::timestamptz
       and ($3::timestamptz is null or (occurred_at, id) > ($3::timestamptz, $4::uuid))
     order by occurred_at, id
     limit $5::int`,
    [window.from, window.to, after?.cursorAt ?? null, after?.id ?? null, PAGE],
  );
  return rows;
}

async function summarize(client: pg.Client) {
  const { rows: byTypeRows } = await client.query<{ type: string; n: number }>(
    `select type, count(*)::int as n from outbox_event
     where published_at is not null and occurred_at >= $1::timestamptz and occurred_at < $2::timestamptz
     group by type order by type`,
    [window.from, window.to],
  );
  const { rows } = await client.query<{ unpublished: number; oldestRetained: Date | null }>(
    `select (select count(*) from outbox_event
             where published_at is null and occurred_at >= $1::timestamptz and occurred_at < $2::timestamptz)::int as unpublished,
            (select min(occurred_at) from outbox_event where published_at is not null) as "oldestRetained"`,
    [window.from, window.to],
  );
  const byType = Object.fromEntries(byTypeRows.map((r) => [r.type, r.n]));
  return {
    rows: byTypeRows.reduce((n, r) => n + r.n, 0),
    byType,
    // Left to the relay, which publishes them anyway.
    unpublishedSkipped: rows[0]!.unpublished,
    // Rows older than OUTBOX_RETENTION_DAYS are pruned: a window before this cannot be republished.
    oldestRetained: rows[0]!.oldestRetained?.toISOString() ?? null,
  };
}

interface Published {
  published: number;
  duplicates: number;
  failed: number;
  firstError: string | null;
  stoppedEarly: boolean;
}

/** Publishes the window page by page; stops after a page with a failure (the bus is down: rerun later, it is safe). */
async function republish(client: pg.Client, js: JetStreamClient): Promise<Published> {
  const result: Published = { published: 0, duplicates: 0, failed: 0, firstError: null, stoppedEarly: false };
  let after: OutboxCursor | null = null;
  for (;;) {
    const page = await readPage(client, after);
    if (page.length === 0) return result;
    const acks = await Promise.allSettled(page.map((row) => publishOutboxRow(js, row, config.RELAY_PUBLISH_TIMEOUT_MS)));
    for (const ack of acks) {
      if (ack.status === "rejected") {
        result.failed++;
        result.firstError ??= (ack.reason as Error).message;
      } else if (ack.value.duplicate) result.duplicates++;
      else result.published++;
    }
    if (result.failed > 0) {
      result.stoppedEarly = true;
      return result;
    }
    const { cursorAt, id } = page.at(-1)!;
    after = { cursorAt, id };
  }
}

/** Creates the stream when the bus lost it; an existing stream keeps its settings. */
async function streamPresentOrCreated(nc: Parameters<typeof jetstreamManager>[0]): Promise<boolean> {
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.streams.info(config.NATS_STREAM);
    return false;
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
    await ensureStream(nc, config.NATS_STREAM, { replicas: config.NATS_REPLICAS });
    return true;
  }
}

const outcome = await withTaskClient(async (client) => {
  await client.query("begin");
  try {
    const summary = await summarize(client);
    if (!args.execute) return { ok: true, dryRun: true, window, stream: config.NATS_STREAM, ...summary };
    // Logs go to stderr: stdout carries the task's JSON result.
    const logger = pino({ name: "republish-outbox", level: config.LOG_LEVEL }, pino.destination(2));
    const nc = await connectBus(config.NATS_URL, "republish-outbox", logger);
    try {
      const streamCreated = await streamPresentOrCreated(nc);
      const result = await republish(client, busClient(nc));
      const metadata = { ...window, stream: config.NATS_STREAM, streamCreated, rows: summary.rows, ...result };
      await writeAuditEvent(client, {
        actorId: operator,
        action: AuditAction.OutboxRepublished,
        objectType: AuditObject.OutboxEvent,
        // The window, as an ISO 8601 interval.
        objectId: `${window.from}/${window.to}`,
        metadata,
      });
      await client.query("commit");
      return { ok: result.failed === 0, dryRun: false, window, stream: config.NATS_STREAM, streamCreated, ...summary, ...result };
    } finally {
      await nc.close();
    }
  } finally {
    await client.query("rollback");
  }
});
print(outcome);
process.exit(outcome.ok ? 0 : 1);
