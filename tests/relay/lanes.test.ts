import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busClient } from "../../lib/bus.js";
import { EventType } from "../../lib/events.js";
import { OutboxRelay, type BatchResult } from "../../relay/outbox-relay.js";
import { TEST_STREAM } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { readStream } from "../helpers/stream.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** The real relay, counting the batches it has in flight at once. */
class CountingRelay extends OutboxRelay {
  inFlight = 0;
  mostInFlight = 0;
  batches = 0;
  override async publishBatch(): Promise<BatchResult> {
    this.inFlight += 1;
    this.batches += 1;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    try {
      return await super.publishBatch();
    } finally {
      this.inFlight -= 1;
    }
  }
}

const relay = () =>
  new CountingRelay({ pool: h.db.pool, js: busClient(h.api.nc), logger: pino({ level: "silent" }), publishTimeoutMs: 5_000, retryIntervalMs: 200, lanes: 4 });

async function backlog(rows: number): Promise<string[]> {
  const { rows: inserted } = await h.db.pool.query<{ id: string }>(
    `insert into outbox_event (type, payload) select $1, jsonb_build_object('n', n) from generate_series(1, $2::int) as n returning id`,
    [EventType.AnimalLostReported, rows],
  );
  return inserted.map((r) => r.id);
}

const unpublished = async () => (await h.db.pool.query(`select count(*)::int as n from outbox_event where published_at is null`)).rows[0].n;

describe("the relay drains a backlog in several lanes at once", () => {
  it("publishes 1,000 rows with four batches in flight, each row once", async () => {
    const ids = await backlog(1_000);
    const before = (await readStream(h.api.nc, TEST_STREAM)).length;
    const lanes = relay();
    await lanes.drain();
    expect(lanes.mostInFlight).toBe(4);
    expect(await unpublished()).toBe(0);
    const published = (await readStream(h.api.nc, TEST_STREAM)).slice(before).map((m) => m.body.id);
    expect(published.length).toBe(1_000);
    expect([...published].sort()).toEqual([...ids].sort());
  });

  it("takes a handful of rows in one batch, with no other lane started", async () => {
    await backlog(30);
    const single = relay();
    await single.drain();
    expect(await unpublished()).toBe(0);
    expect(single.mostInFlight).toBe(1);
    expect(single.batches).toBe(1);
  });
});
