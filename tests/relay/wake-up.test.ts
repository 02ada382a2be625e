import { describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { sampleValue, scrape } from "../helpers/exposition.js";
import { useTestStack } from "../helpers/harness.js";
import { createLostReport } from "../helpers/stack.js";
import type { ServiceProcess } from "../helpers/processes.js";
import { eventually } from "../helpers/stream.js";

// The relay's poll at a minute: only the commit's notification can publish a row within seconds.
const h = useTestStack({ RELAY_POLL_INTERVAL_MS: "60000" });

async function insertEvent(): Promise<string> {
  const { rows } = await h.db.pool.query<{ id: string }>(`insert into outbox_event (type) values ($1) returning id`, [EventType.AnimalLostReported]);
  return rows[0]!.id;
}

/** The relay's wake-up gauges from its /metrics (on its health port). */
async function wakeUpMetrics(relay: ServiceProcess): Promise<{ listening?: number; lost?: number }> {
  const { text } = await scrape((relay as ServiceProcess & { port: number }).port);
  return { listening: sampleValue(text, "relay_wake_up_listening"), lost: sampleValue(text, "relay_wake_up_connections_lost_total") };
}

async function publishedWithin(id: string, timeoutMs: number): Promise<void> {
  await eventually(async () => {
    const { rows } = await h.db.pool.query(`select 1 from outbox_event where id = $1 and published_at is not null`, [id]);
    return rows.length === 1 ? true : undefined;
  }, timeoutMs, 20);
}

describe("an API write wakes the relay over the bus", () => {
  it("publishes a report the API created, whose commit sent no notification, while the relay's poll is a minute away", async () => {
    const relay = await h.stack.start("relay");
    await relay.waitForLog((l) => l.msg === "relay: listening for outbox wake-ups");
    await h.stack.start("api");
    const created = await createLostReport(h.stack.baseUrl, "bus-wake");
    expect(created.status).toBe(201);
    await eventually(async () => {
      const { rows } = await h.db.pool.query(
        `select 1 from outbox_event where type = $1 and payload->>'reportId' = $2 and published_at is not null`,
        [EventType.AnimalLostReported, created.id],
      );
      return rows.length === 1 ? true : undefined;
    }, 5_000, 20);
    // The notification path is idle: the API's connections do not notify (tests/foundation/migrations.test.ts).
    expect(await wakeUpMetrics(relay)).toEqual({ listening: 1, lost: 0 });
    await relay.stop();
    h.stack.processes.splice(h.stack.processes.indexOf(relay), 1);
  });
});

describe("a commit wakes the relay through the outbox's notification", () => {
  it("publishes a committed row within seconds while the relay's poll is a minute away", async () => {
    const relay = await h.stack.start("relay");
    await relay.waitForLog((l) => l.msg === "relay: listening for outbox wake-ups");
    expect(await wakeUpMetrics(relay)).toEqual({ listening: 1, lost: 0 });
    const startedAt = Date.now();
    await publishedWithin(await insertEvent(), 5_000);
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    // No job carried it: the trigger queues none.
    const { rows } = await h.db.pool.query(`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'outbox_relay'`);
    expect(rows[0].n).toBe(0);
  });

  it("reconnects when its listening connection is cut, and publishes what was committed while it was away", async () => {
    const relay = h.stack.processes.find((p) => p.name === "relay")!;
    const listening = () => relay.lines.filter((l) => l.msg === "relay: listening for outbox wake-ups").length;
    const before = listening();
    const { rows: cut } = await h.db.pool.query(
      `select pg_terminate_backend(pid) as done from pg_stat_activity where datname = current_database() and application_name = 'relay-wake-up'`,
    );
    expect(cut).toEqual([{ done: true }]);
    await relay.waitForLog((l) => l.msg === "relay: wake-up listener lost its connection; reconnecting", 5_000);
    // Its first reconnect comes 500 ms after the loss.
    expect(await wakeUpMetrics(relay)).toEqual({ listening: 0, lost: 1 });
    // Committed while nothing listens: no notification reaches the relay for it, only the
    // wake-up that ends the reconnect (its first attempt comes 500 ms after the loss).
    const missed = await insertEvent();
    await publishedWithin(missed, 10_000);
    expect(listening()).toBe(before + 1);
    expect(await wakeUpMetrics(relay)).toEqual({ listening: 1, lost: 1 });
    // And the new connection carries the next commit's wake-up.
    await publishedWithin(await insertEvent(), 5_000);
    expect(relay.child.exitCode).toBeNull();
  });
});
