import { connect } from "@nats-io/transport-node";
import { beforeAll, describe, expect, it } from "vitest";
import { TEST_STREAM } from "../helpers/app.js";
import { createAtRate } from "../helpers/stack.js";
import { useTestStack } from "../helpers/harness.js";
import { eventually, readStream } from "../helpers/stream.js";

const h = useTestStack();

beforeAll(async () => {
  await h.stack.start("api");
  await h.stack.start("relay");
});

describe("fault: NATS stopped for 15 s during 500 creates at 50 rps", () => {
  it("fails no API write, and after NATS returns the backlog drains within 10 s and every event is on the stream exactly once", async () => {
    if (!h.bus.server) return expect.fail("needs its own nats-server");
    const server = h.bus.server;
    let returnedAt = 0;
    const outage = (async () => {
      await new Promise((r) => setTimeout(r, 1_000));
      await server.stop();
      console.log("[nats-outage] NATS stopped");
      await new Promise((r) => setTimeout(r, 15_000));
      await server.start();
      returnedAt = Date.now();
      console.log("[nats-outage] NATS started again");
    })();
    const outcomes = await createAtRate(h.stack.baseUrl, "outage", 500, 50);
    await outage;
    const failed = outcomes.filter((o) => o.status !== 201);
    console.log(`[nats-outage] writes: ${outcomes.length - failed.length} × 201, ${failed.length} failed`);
    expect(failed).toEqual([]);

    // The drain clock starts when the bus is back and stops when the outbox has no unpublished row:
    // with publish attempts about 5 s apart during the outage, the next attempt must empty it well inside 10 s.
    await eventually(async () => {
      const { rows } = await h.db.pool.query<{ n: number }>(`select count(*)::int as n from outbox_event where published_at is null`);
      return rows[0]!.n === 0 ? true : undefined;
    }, 20_000, 50);
    const drainSeconds = (Date.now() - returnedAt) / 1000;
    console.log(`[nats-outage] backlog drained ${drainSeconds.toFixed(2)} s after NATS returned`);
    expect(drainSeconds).toBeLessThanOrEqual(10);

    const { rows } = await h.db.pool.query<{ id: string }>(`select id from outbox_event`);
    expect(rows).toHaveLength(500);
    const nc = await connect({ servers: h.bus.url });
    try {
      // Every row is marked published only after its stream ack, so the stream is already complete here.
      const messages = await readStream(nc, TEST_STREAM);
      const ids = messages.map((m) => m.body.id);
      console.log(`[nats-outage] stream: ${messages.length} messages, ${new Set(ids).size} distinct`);
      expect(messages).toHaveLength(500);
      expect(new Set(ids)).toEqual(new Set(rows.map((r) => r.id)));
    } finally {
      await nc.close();
    }
  }, 90_000);
});
