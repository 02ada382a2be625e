import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { TEST_STREAM } from "../helpers/app.js";
import { useTestStack } from "../helpers/harness.js";
import type { ServiceProcess } from "../helpers/processes.js";
import { eventually, readStream } from "../helpers/stream.js";

const ROWS = 20_000;
const h = useTestStack();

/** The relay's own count of stream-acknowledged events, read from /metrics on its health port. */
async function publishedMetric(relay: ServiceProcess): Promise<number> {
  const port = (relay as ServiceProcess & { port?: number }).port;
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const match = /^relay_published_total(?:\{[^}]*\})? (\S+)$/m.exec(text);
  if (!match) throw new Error(`relay_published_total missing from /metrics on port ${port}`);
  return Number(match[1]);
}

/** Event ids the relay logged as published, counted from its "relay: events published" lines. */
function publishedLogged(relay: ServiceProcess): number {
  return relay.lines
    .filter((l) => l.msg === "relay: events published")
    .reduce((n, l) => n + (l.eventIds as string[]).length, 0);
}

describe(`fault: two relays drain ${ROWS} events at once`, () => {
  it("publishes none twice to the stream, shares the work between both relays, and logs no lock error", async () => {
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
      const perRelayLogged = relays.map(publishedLogged);
      const perRelayMetric = await Promise.all(relays.map(publishedMetric));
      console.log(
        `[two-relays] stream: ${messages.length} messages, ${distinct.size} distinct; published per relay: logs ${perRelayLogged.join(", ")}, relay_published_total ${perRelayMetric.join(", ")}`,
      );
      expect(messages).toHaveLength(ROWS);
      expect(distinct.size).toBe(ROWS);
      expect(perRelayLogged.reduce((a, b) => a + b, 0)).toBe(ROWS);
      // Both relays took part: SKIP LOCKED shares the backlog instead of one relay
      // holding every batch while the other waits on its locks.
      for (const [i, relay] of relays.entries()) {
        expect(perRelayLogged[i], `relay ${relay.child.pid} logged no published event`).toBeGreaterThan(0);
        // The metric counts the same acks as the log lines: two independent records of one relay's share.
        expect(perRelayMetric[i]).toBe(perRelayLogged[i]);
      }
      for (const relay of relays) {
        expect(relay.lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
        // Lock trouble shows up as a warn (40) or worse, in the message or in the logged error.
        expect(relay.lines.filter((l) => (l.level as number) >= 40 && /lock|deadlock/i.test(JSON.stringify(l)))).toEqual([]);
      }
    } finally {
      await nc.close();
    }
  }, 120_000);
});
