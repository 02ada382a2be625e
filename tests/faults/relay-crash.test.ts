import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { TEST_STREAM } from "../helpers/app.js";
import { relaysHeldBeforeMarkPublished } from "../helpers/db.js";
import { useTestStack } from "../helpers/harness.js";
import { eventually, readStream } from "../helpers/stream.js";

// `npm run faults` drains the 20,000 rows; `npm test` runs the same case on 3,000.
const ROWS = process.env.FAULTS_FULL === "1" ? 20_000 : 3_000;
const h = useTestStack();

async function published(): Promise<number> {
  const { rows } = await h.db.pool.query(`select count(*)::int as n from outbox_event where published_at is not null`);
  return rows[0].n;
}

async function unpublishedIds(): Promise<Set<string>> {
  const { rows } = await h.db.pool.query<{ id: string }>(`select id from outbox_event where published_at is null`);
  return new Set(rows.map((r) => r.id));
}

describe(`fault: the relay is killed with SIGKILL mid-drain of ${ROWS} rows and restarted`, () => {
  it(`leaves exactly ${ROWS} distinct events on the stream: Msg-Id dedup covers the republished tail`, async () => {
    await h.db.pool.query(
      `insert into outbox_event (type, payload) select $1, jsonb_build_object('n', n) from generate_series(1, $2::int) n`,
      [EventType.AnimalLostReported, ROWS],
    );
    // The relay sends its mark and its commit in one message, so a held update that ran
    // after the kill would commit too. Postgres drops a query whose client is gone at the
    // next connection check, lock waits included: the kill then leaves its tail for sure.
    await h.db.pool.query(`alter database ${h.db.name} set client_connection_check_interval = '50ms'`);
    const nc = await connect({ servers: h.bus.url });
    try {
      const jsm = await jetstreamManager(nc);
      const first = await h.stack.start("relay");
      await eventually(async () => ((await published()) > 0 ? true : undefined), 60_000, 5);
      // A share lock lets the relay claim and publish a batch but holds its markPublished
      // update, so the kill always lands with batches acknowledged by the stream and not yet
      // committed as published: that tail is what the restarted relay must publish again,
      // and what dedup must drop. Waiting on timing alone once let the kill land between
      // batches, with no tail at all.
      const gate = await h.db.pool.connect();
      try {
        await gate.query("begin");
        await gate.query("lock table outbox_event in share mode");
        await eventually(async () => {
          const onStream = (await jsm.streams.info(TEST_STREAM)).state.messages;
          return (await relaysHeldBeforeMarkPublished(h.db)) > 0 && onStream > (await published()) ? true : undefined;
        }, 60_000, 5);
        first.signal("SIGKILL");
        await first.exited;
        // The killed relay's held mark-and-commit is dropped once Postgres sees its connection closed.
        await eventually(async () => ((await relaysHeldBeforeMarkPublished(h.db)) === 0 ? true : undefined), 10_000, 20);
      } finally {
        await gate.query("rollback");
        gate.release();
      }
      const atKill = await published();
      const unmarked = await unpublishedIds();
      const onStreamAtKill = new Set((await readStream(nc, TEST_STREAM)).map((m) => m.body.id));
      // The tail: rows the stream already holds but whose batch never committed, so the restarted relay publishes them again.
      const tail = [...unmarked].filter((id) => onStreamAtKill.has(id)).length;
      console.log(`[relay-crash] killed with ${atKill} of ${ROWS} marked published, ${onStreamAtKill.size} on the stream, ${tail} to be republished`);
      expect(atKill).toBeLessThan(ROWS);
      // Without a tail the restart would publish only new rows and the dedup would go untested.
      expect(tail).toBeGreaterThan(0);

      const second = await h.stack.start("relay");
      await eventually(async () => ((await published()) === ROWS ? true : undefined), 60_000);
      // The relay logs a batch after its commit: the last batch's line may still be on its way.
      const loggedIds = () => second.lines.filter((l) => l.msg === "relay: events published").flatMap((l) => l.eventIds as string[]);
      await eventually(async () => (loggedIds().length >= unmarked.size ? true : undefined), 10_000, 20).catch(() => undefined);
      const republishedIds = loggedIds();
      const duplicatesDropped = republishedIds.filter((id) => onStreamAtKill.has(id)).length;
      const info = await jsm.streams.info(TEST_STREAM);
      const messages = await readStream(nc, TEST_STREAM);
      const ids = messages.map((m) => m.body.id);
      const { rows: outbox } = await h.db.pool.query<{ id: string }>(`select id from outbox_event`);
      console.log(
        `[relay-crash] restarted relay published ${republishedIds.length}, of which ${duplicatesDropped} were republished and dropped by Msg-Id dedup; stream: ${messages.length} messages (last seq ${info.state.last_seq}), ${new Set(ids).size} distinct`,
      );
      // The restarted relay sends exactly the rows left unmarked, each once: the whole tail is re-sent, nothing marked is.
      expect(republishedIds).toHaveLength(unmarked.size);
      expect(new Set(republishedIds)).toEqual(unmarked);
      expect(duplicatesDropped).toBe(tail);
      // Dedup dropped every re-sent copy: the stream never stored a second message for any of them.
      expect(info.state.last_seq).toBe(ROWS);
      expect(messages).toHaveLength(ROWS);
      expect(new Set(ids)).toEqual(new Set(outbox.map((r) => r.id)));
      for (const m of messages) expect(m.msgId).toBe(m.body.id);
    } finally {
      await nc.close();
    }
  }, 120_000);
});
