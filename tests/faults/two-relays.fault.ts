import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { TEST_STREAM } from "../helpers/app.js";
import { useTestStack } from "../helpers/harness.js";
import { eventually, readStream } from "../helpers/stream.js";

const ROWS = 20_000;
const h = useTestStack();

describe(`fault: two relays drain ${ROWS} events at once`, () => {
  it("publishes none twice to the stream and logs no lock error", async () => {
    await h.db.pool.query(
      `insert into outbox_event (type, payload) select $1, jsonb_build_object('n', n) from generate_series(1, $2::int) n`,
      [EventType.AnimalLostReported, ROWS],
    );
    const relays = await Promise.all([h.stack.start("relay"), h.stack.start("relay")]);
    await eventually(async () => {
      const { rows } = await h.db.pool.query(`select count(*)::int as n from outbox_event where published_at is null`);
      return rows[0].n === 0 ? true : undefined;
    }, 60_000);
    const nc = await connect({ servers: h.bus.url });
    try {
      const messages = await readStream(nc, TEST_STREAM);
      const distinct = new Set(messages.map((m) => m.body.id));
      const perRelay = relays.map((r) =>
        r.lines.filter((l) => l.msg === "relay: events published").reduce((n, l) => n + (l.eventIds as string[]).length, 0),
      );
      console.log(`[two-relays] stream: ${messages.length} messages, ${distinct.size} distinct; published per relay: ${perRelay.join(", ")}`);
      expect(messages).toHaveLength(ROWS);
      expect(distinct.size).toBe(ROWS);
      expect(perRelay.reduce((a, b) => a + b, 0)).toBe(ROWS);
      for (const relay of relays) {
        expect(relay.lines.filter((l) => (l.level as number) >= 50 || /lock|deadlock/i.test(String(l.msg)))).toEqual([]);
      }
    } finally {
      await nc.close();
    }
  }, 120_000);
});
