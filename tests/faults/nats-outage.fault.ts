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
  it("fails no API write, and after NATS returns every event is on the stream exactly once within 10 s", async () => {
    if (!h.bus.server) return expect.fail("needs its own nats-server");
    const server = h.bus.server;
    const outage = (async () => {
      await new Promise((r) => setTimeout(r, 1_000));
      await server.stop();
      console.log("[nats-outage] NATS stopped");
      await new Promise((r) => setTimeout(r, 15_000));
      await server.start();
      console.log("[nats-outage] NATS started again");
    })();
    const outcomes = await createAtRate(h.stack.baseUrl, "outage", 500, 50);
    await outage;
    const returnedAt = Date.now();
    const failed = outcomes.filter((o) => o.status !== 201);
    console.log(`[nats-outage] writes: ${outcomes.length - failed.length} × 201, ${failed.length} failed`);
    expect(failed).toEqual([]);

    const { rows } = await h.db.pool.query<{ id: string }>(`select id from outbox_event`);
    expect(rows).toHaveLength(500);
    const nc = await connect({ servers: h.bus.url });
    try {
      const messages = await eventually(async () => {
        const all = await readStream(nc, TEST_STREAM);
        return all.length >= 500 ? all : undefined;
      }, 10_000);
      const seconds = (Date.now() - returnedAt) / 1000;
      const ids = messages.map((m) => m.body.id);
      console.log(`[nats-outage] stream: ${messages.length} messages, ${new Set(ids).size} distinct, complete ${seconds.toFixed(1)} s after NATS returned`);
      expect(messages).toHaveLength(500);
      expect(new Set(ids)).toEqual(new Set(rows.map((r) => r.id)));
    } finally {
      await nc.close();
    }
  }, 90_000);
});
