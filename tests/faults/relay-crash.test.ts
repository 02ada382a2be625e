import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { TEST_STREAM } from "../helpers/app.js";
import { useTestStack } from "../helpers/harness.js";
import { eventually, readStream } from "../helpers/stream.js";

// `npm run faults` drains the 20,000 rows; `npm test` runs the same case on 3,000.
const ROWS = process.env.FAULTS_FULL === "1" ? 20_000 : 3_000;
const h = useTestStack();

async function published(): Promise<number> {
  const { rows } = await h.db.pool.query(`select count(*)::int as n from outbox_event where published_at is not null`);
  return rows[0].n;
}

describe(`fault: the relay is killed with SIGKILL mid-drain of ${ROWS} rows and restarted`, () => {
  it(`leaves exactly ${ROWS} distinct events on the stream: Msg-Id dedup covers the republished tail`, async () => {
    await h.db.pool.query(
      `insert into outbox_event (type, payload) select $1, jsonb_build_object('n', n) from generate_series(1, $2::int) n`,
      [EventType.AnimalLostReported, ROWS],
    );
    const first = await h.stack.start("relay");
    // Kill as soon as the first batch is marked, leaving most of the backlog still to drain.
    await eventually(async () => ((await published()) > 0 ? true : undefined), 60_000, 5);
    first.signal("SIGKILL");
    await first.exited;
    const atKill = await published();
    console.log(`[relay-crash] killed with ${atKill} of ${ROWS} marked published`);
    expect(atKill).toBeLessThan(ROWS);

    await h.stack.start("relay");
    await eventually(async () => ((await published()) === ROWS ? true : undefined), 60_000);
    const nc = await connect({ servers: h.bus.url });
    try {
      const messages = await readStream(nc, TEST_STREAM);
      const distinct = new Set(messages.map((m) => m.body.id));
      console.log(`[relay-crash] stream: ${messages.length} messages, ${distinct.size} distinct`);
      expect(messages).toHaveLength(ROWS);
      expect(distinct.size).toBe(ROWS);
    } finally {
      await nc.close();
    }
  }, 120_000);
});
