import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { devEnv, TEST_STREAM } from "../helpers/app.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { freePort, startTestBus, waitForPort, type TestBus } from "../helpers/nats.js";
import { ServiceProcess } from "../helpers/processes.js";
import { connect } from "@nats-io/transport-node";
import { eventually, readStream } from "../helpers/stream.js";
import { notificationsFor, publishEnvelope, contactMessageEnvelope, setPreference, startNotifier } from "../notifier/support.js";
import { startSmtpServer } from "../notifier/smtp.js";

let db: TestDatabase;
let bus: TestBus;

beforeAll(async () => {
  db = await createTestDatabase();
  bus = await startTestBus();
});
afterAll(async () => {
  await bus?.dispose();
  await db?.drop();
});

/**
 * Exit code 0 and "shutdown: complete" mean the stages finished before the
 * process's own deadline (lib/shutdown.ts), past which it exits 1.
 */
describe("SIGTERM stops intake, finishes in-flight work and exits 0 within its shutdown deadline", () => {
  it("API: every write answered 201 during shutdown is in the database with its outbox row", async () => {
    const port = await freePort();
    const api = ServiceProcess.start("api", devEnv(db.url, bus.url, { API_HTTP_ADDR: `127.0.0.1:${port}`, LOG_LEVEL: "info" }));
    await waitForPort(port, 20_000);
    const created: string[] = [];
    let refused = 0;
    const send = async (i: number) => {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v1/safety/lost-reports`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-debug-actor": `shutdown-${i}` },
          body: JSON.stringify({ animal: { species: "cat" }, lastSeenAt: "2026-11-20T08:00:00Z", location: { lat: 50, lon: 4 } }),
        });
        if (res.status === 201) created.push(((await res.json()) as { id: string }).id);
        else refused++;
      } catch {
        refused++;
      }
    };
    // The load's shape: one request every 2 ms, so the signal lands while writes are still arriving.
    const load = Array.from({ length: 200 }, (_, i) => new Promise((r) => setTimeout(r, i * 2)).then(() => send(i)));
    await eventually(async () => (created.length > 0 ? true : undefined), 20_000, 5);
    api.signal("SIGTERM");
    const code = await api.exited;
    await Promise.all(load);
    const counts: Record<string, number> = {};
    for (const l of api.lines) counts[String(l.msg)] = (counts[String(l.msg)] ?? 0) + 1;
    expect(code, JSON.stringify(counts)).toBe(0);
    expect(created.length).toBeGreaterThan(0);
    expect(created.length + refused).toBe(200);
    const { rows } = await db.pool.query(
      `select r.id, o.id as outbox_id from safety_lost_report r
       left join outbox_event o on o.payload->>'reportId' = r.id::text
       where r.reporter_id like 'shutdown-%'`,
    );
    expect(rows.map((r) => r.id).sort()).toEqual([...created].sort());
    expect(rows.every((r) => r.outbox_id !== null)).toBe(true);
    expect(api.lines.some((l) => l.msg === "shutdown: complete")).toBe(true);
  });

  it("relay: a SIGTERM mid-drain loses nothing; a new relay finishes and the stream holds every event once", async () => {
    await db.pool.query(
      `insert into outbox_event (type, payload) select $1, jsonb_build_object('n', n) from generate_series(1, 5000) n`,
      [EventType.AnimalLostReported],
    );
    const env = () => freePort().then((p) => devEnv(db.url, bus.url, { RELAY_HEALTH_ADDR: `127.0.0.1:${p}`, LOG_LEVEL: "info" }));
    const first = ServiceProcess.start("relay", await env());
    await first.waitForLog((l) => l.msg === "relay: events published");
    first.signal("SIGTERM");
    expect(await first.exited).toBe(0);
    expect(first.lines.some((l) => l.msg === "shutdown: complete")).toBe(true);

    const second = ServiceProcess.start("relay", await env());
    try {
      await eventually(async () => {
        const { rows } = await db.pool.query(`select count(*)::int as n from outbox_event where published_at is null`);
        return rows[0].n === 0 ? true : undefined;
      }, 30_000);
      const nc = await connect({ servers: bus.url });
      try {
        const messages = await readStream(nc, TEST_STREAM);
        const ids = messages.map((m) => m.body.id);
        const { rows } = await db.pool.query(`select id from outbox_event`);
        expect(new Set(ids).size).toBe(ids.length);
        expect(new Set(ids)).toEqual(new Set(rows.map((r) => r.id)));
      } finally {
        await nc.close();
      }
    } finally {
      expect(await second.stop()).toBe(0);
    }
  });

  it("notifier: deliveries in flight finish as sent, exit is 0, and the rest stay queued for the next notifier", async () => {
    // Each RCPT is answered after 1 s, so the SIGTERM lands while deliveries are open on the wire.
    const smtp = await startSmtpServer(() => new Promise((r) => setTimeout(r, 1_000)));
    const nc = await connect({ servers: bus.url });
    const env = {
      SMTP_URL: smtp.url,
      // Fewer workers than notifications: some deliveries are in flight, the others still queued.
      NOTIFIER_DELIVERY_CONCURRENCY: "3",
      DATABASE_POOL_SIZE: "8",
    };
    let second: ServiceProcess | null = null;
    try {
      const events = Array.from({ length: 8 }, (_, i) => contactMessageEnvelope(`shutdown-mail-${i}`));
      for (let i = 0; i < events.length; i++) await setPreference(db.pool, `shutdown-mail-${i}`, "email", `owner${i}@example.org`);
      const ids = events.map((e) => e.id);
      const first = await startNotifier(db.url, bus.url, env);
      await Promise.all(events.map((e) => publishEnvelope(nc, e)));
      // Every event is a row with its job before the signal: this test is about deliveries, not intake.
      // Each event gives an in_app row (sent at once) and an email row; this test follows the email ones.
      const emailRows = async () => (await notificationsFor(db.pool, ids)).filter((r) => r.channel === "email");
      await eventually(async () => ((await emailRows()).length === ids.length ? true : undefined), 15_000, 10);
      await eventually(async () => (smtp.rcptAttempts.length >= 3 ? true : undefined), 15_000, 10);
      first.signal("SIGTERM");
      const code = await first.exited;
      // Every delivery that reached the server before the exit, whether or not it began before the signal.
      const inFlight = [...smtp.rcptAttempts];
      expect(inFlight.length).toBeGreaterThanOrEqual(3);
      expect(code).toBe(0);
      expect(first.lines.some((l) => l.msg === "shutdown: complete")).toBe(true);

      const rows = await emailRows();
      expect(rows).toHaveLength(8);
      const addressOf = (r: { recipient_actor_id: string }) => `owner${r.recipient_actor_id.split("-").pop()}@example.org`;
      const started = rows.filter((r) => inFlight.includes(addressOf(r)));
      expect(started).toHaveLength(inFlight.length);
      expect(started.map((r) => [r.status, r.attempts])).toEqual(started.map(() => ["sent", 1]));
      expect(smtp.received.map((m) => m.to[0]).sort()).toEqual([...inFlight].sort());

      // What was not delivered is still deliverable, with a job no dead worker holds locked.
      const rest = rows.filter((r) => r.status !== "sent");
      expect(rest.length).toBeGreaterThan(0);
      expect(rest.every((r) => r.status === "pending" || r.status === "failed")).toBe(true);
      const { rows: jobs } = await db.pool.query<{ id: string; locked_at: Date | null }>(
        `select j.payload->>'notificationId' as id, j.locked_at from graphile_worker._private_jobs j where j.payload->>'notificationId' = any($1::text[])`,
        [rest.map((r) => r.id)],
      );
      expect(jobs.map((j) => j.id).sort()).toEqual(rest.map((r) => r.id).sort());
      expect(jobs.every((j) => j.locked_at === null)).toBe(true);

      // The next notifier delivers the rest at once, without waiting for the stall sweep, and sends nothing twice.
      second = await startNotifier(db.url, bus.url, env);
      await eventually(async () => {
        const now = await notificationsFor(db.pool, ids);
        return now.length === 16 && now.every((r) => r.status === "sent") ? true : undefined;
      }, 30_000);
      expect(smtp.received.map((m) => m.to[0]).sort()).toEqual(rows.map(addressOf).sort());
    } finally {
      if (second) expect(await second.stop()).toBe(0);
      await nc.close();
      await smtp.close();
    }
  });
});
