import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectBus, ensureStream, type NatsConnection } from "../../lib/bus.js";
import { EventType } from "../../lib/events.js";
import { recordEvent } from "../../lib/outbox.js";
import { devEnv, TEST_STREAM } from "../helpers/app.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { freePort, startTestBus, type TestBus } from "../helpers/nats.js";
import { ServiceProcess } from "../helpers/processes.js";
import { eventually } from "../helpers/stream.js";
import {
  consumerInfo,
  maxRowsPerSourceEvent,
  notificationsFor,
  publishEnvelope,
  contactMessageEnvelope,
  contactMessageData,
  setPreference,
  startNotifier,
} from "./support.js";

let db: TestDatabase;
let bus: TestBus;
let nc: NatsConnection;
const started: ServiceProcess[] = [];

async function notifier(extra: Record<string, string> = {}) {
  // A short ack wait: the SIGKILL case waits it out for the victim's unacked messages.
  const p = await startNotifier(db.url, bus.url, { NOTIFIER_ACK_WAIT_MS: "3000", ...extra });
  started.push(p);
  return p;
}

async function relay(): Promise<ServiceProcess> {
  const p = ServiceProcess.start("relay", devEnv(db.url, bus.url, { RELAY_HEALTH_ADDR: `127.0.0.1:${await freePort()}`, LOG_LEVEL: "info", RELAY_RETRY_INTERVAL_MS: "500", RELAY_PUBLISH_TIMEOUT_MS: "1000" }));
  started.push(p);
  await p.waitForLog((l) => l.msg === "relay: started");
  return p;
}

async function stopNotifiers(): Promise<void> {
  for (const p of started.filter((s) => s.name === "notifier")) await p.stop();
}

/** Ids of the given events that this process logged as handled with that outcome. */
function handledEvents(p: ServiceProcess, eventIds: string[], outcome: "created" | "duplicate"): string[] {
  const wanted = new Set(eventIds);
  return p.lines
    .filter((l) => l.msg === "notifier: event handled" && l.outcome === outcome && wanted.has(String(l.eventId)))
    .map((l) => String(l.eventId));
}

async function allHaveOneRow(eventIds: string[], timeoutMs = 20_000): Promise<void> {
  await eventually(async () => ((await notificationsFor(db.pool, eventIds)).length === eventIds.length ? true : undefined), timeoutMs);
}

beforeAll(async () => {
  db = await createTestDatabase();
  bus = await startTestBus();
  nc = await connectBus(bus.url, "process-test", pino({ level: "silent" }));
  await ensureStream(nc, TEST_STREAM);
});

afterAll(async () => {
  await Promise.all(started.map((p) => p.stop()));
  await nc?.close();
  await bus?.dispose();
  await db?.drop();
});

describe("end to end: a contact message event reaches a notification row through the relay, NATS and the notifier", () => {
  it("in_app is always sent; the email of a recipient with an address dead-letters when SMTP is unset", async () => {
    await relay();
    await notifier();
    await setPreference(db.pool, "e2e-inapp", "in_app");
    await setPreference(db.pool, "e2e-email", "email", "owner@example.org");
    const client = await db.pool.connect();
    let ids: string[];
    try {
      await client.query("begin");
      const inApp = await recordEvent(client, EventType.ContactMessageReceived, contactMessageData("e2e-inapp", "Found your dog!"));
      const email = await recordEvent(client, EventType.ContactMessageReceived, contactMessageData("e2e-email"));
      await client.query("commit");
      ids = [inApp.id, email.id];
    } finally {
      client.release();
    }
    const rows = await eventually(async () => {
      const found = await notificationsFor(db.pool, ids);
      return found.length === 3 && found.every((r) => r.status === "sent" || r.status === "dead_letter") ? found : undefined;
    }, 10_000, 25);
    const byKey = Object.fromEntries(rows.map((r) => [`${r.recipient_actor_id}/${r.channel}`, r]));
    expect(Object.keys(byKey).sort()).toEqual(["e2e-email/email", "e2e-email/in_app", "e2e-inapp/in_app"]);
    expect(byKey["e2e-inapp/in_app"]).toMatchObject({ status: "sent", source_event_id: ids[0] });
    expect(byKey["e2e-inapp/in_app"]!.body).toContain("Found your dog!");
    expect(byKey["e2e-email/in_app"]).toMatchObject({ status: "sent", source_event_id: ids[1] });
    expect(byKey["e2e-email/email"]).toMatchObject({ status: "dead_letter", attempts: 1, source_event_id: ids[1] });
    expect(byKey["e2e-email/email"]!.last_error).toContain("no deliverer configured for channel");
  });
});

describe("the notifier serves /healthz, and /readyz checks the database only", () => {
  it("answers ok and ready on NOTIFIER_HEALTH_ADDR, and stays ready while NATS is down", async () => {
    const n = started.find((p) => p.name === "notifier") as Awaited<ReturnType<typeof notifier>> | undefined ?? (await notifier());
    const base = `http://127.0.0.1:${n.healthPort}`;
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: "ok" });
    if (!bus.server) return expect.fail("this test needs its own nats-server");
    await bus.server.stop();
    try {
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: "ready" });
    } finally {
      await bus.server.start();
    }
  });
});

describe("the notifier survives a NATS restart and resumes consuming without losing messages", () => {
  it("creates a row for every event queued while NATS was down and for events published after it returned", async () => {
    if (!bus.server) return expect.fail("this test needs its own nats-server");
    if (!started.some((p) => p.name === "relay")) await relay();
    if (!started.some((p) => p.name === "notifier")) await notifier();
    await bus.server.stop();
    const queued: string[] = [];
    for (let i = 0; i < 10; i++) {
      queued.push((await recordEvent(db.pool, EventType.ContactMessageReceived, contactMessageData(`restart-${i}`))).id);
    }
    await bus.server.start();
    await allHaveOneRow(queued);
    const after = contactMessageEnvelope("restart-after");
    await eventually(async () => {
      await publishEnvelope(nc, after);
      return true;
    });
    await allHaveOneRow([after.id]);
    expect(await maxRowsPerSourceEvent(db.pool)).toBe(1);
  });
});

describe("the notifier rides out a NATS restart in the middle of consuming a backlog", () => {
  it("the same process resumes after nats-server is stopped mid-backlog and started again on its port and store, with one row per event", async () => {
    if (!bus.server) return expect.fail("this test needs its own nats-server");
    await stopNotifiers();
    const events = Array.from({ length: 1000 }, (_, i) => contactMessageEnvelope(`midway-${i}`));
    const ids = events.map((e) => e.id);
    await Promise.all(events.map((e) => publishEnvelope(nc, e)));
    // One message at a time, so the backlog is still being consumed when the server goes away.
    const consumer = await notifier({ NOTIFIER_CONSUME_CONCURRENCY: "1" });
    await eventually(async () => ((await notificationsFor(db.pool, ids)).length > 0 ? true : undefined), 10_000, 5);

    await bus.server.stop();
    const createdBeforeStop = (await notificationsFor(db.pool, ids)).length;
    expect(createdBeforeStop, "the stop must land mid-backlog").toBeLessThan(ids.length);
    await consumer.waitForLog((l) => l.msg === "bus: disconnect");
    // Kept: the outage's length is the scenario, not a wait for something. Down for longer than a
    // few reconnect attempts (500 ms apart), which leave no sign in the notifier's log.
    await new Promise((r) => setTimeout(r, 2_000));
    await bus.server.start();
    await consumer.waitForLog((l) => l.msg === "bus: reconnect");

    // Events published after the restart are consumed too, not only the backlog.
    const later = Array.from({ length: 10 }, (_, i) => contactMessageEnvelope(`midway-later-${i}`));
    await eventually(async () => {
      await Promise.all(later.map((e) => publishEnvelope(nc, e)));
      return true;
    });
    const all = [...ids, ...later.map((e) => e.id)];
    // Messages delivered but unacked when the server went away come back after the ack wait (3 s here).
    await allHaveOneRow(all, 60_000);
    expect(await maxRowsPerSourceEvent(db.pool)).toBe(1);
    await eventually(async () => {
      const info = await consumerInfo(nc);
      return info.num_pending === 0 && info.num_ack_pending === 0 ? true : undefined;
    }, 20_000);
    expect(consumer.child.exitCode, "the notifier must still be running").toBeNull();
    // The one process running created every row, before and after the restart, each once.
    expect(handledEvents(consumer, all, "created").length).toBe(all.length);
  }, 120_000);
});

describe("two notifier processes consuming at once never create a second row for an event", () => {
  it("shares 200 events, each also published a second time past the duplicate window, with one row per event", async () => {
    // Only these two consume, so their logs account for every event.
    await stopNotifiers();
    const pair = [await notifier(), await notifier()];
    const events = Array.from({ length: 200 }, (_, i) => contactMessageEnvelope(`pair-${i}`));
    const ids = events.map((e) => e.id);
    await Promise.all(events.flatMap((e) => [publishEnvelope(nc, e), publishEnvelope(nc, e, `${e.id}-dup`)]));
    await allHaveOneRow(ids);
    await eventually(async () => {
      const info = await consumerInfo(nc);
      return info.num_pending === 0 && info.num_ack_pending === 0 ? true : undefined;
    }, 20_000);
    expect(await notificationsFor(db.pool, ids)).toHaveLength(200);
    expect(await maxRowsPerSourceEvent(db.pool)).toBe(1);

    // Both took part, and between them each event was created once and only once.
    const createdBy = pair.map((p) => handledEvents(p, ids, "created"));
    expect(createdBy[0]!.length, "events the first notifier created").toBeGreaterThan(0);
    expect(createdBy[1]!.length, "events the second notifier created").toBeGreaterThan(0);
    expect([...createdBy[0]!, ...createdBy[1]!].sort()).toEqual([...ids].sort());
    expect(pair.every((p) => p.child.exitCode === null)).toBe(true);
  });
});

describe("a notifier killed with SIGKILL mid-stream loses nothing and duplicates nothing", () => {
  it("a new notifier finishes the backlog with exactly one row per event", async () => {
    await stopNotifiers();
    // The backlog is on the stream before the victim starts, so it is still busy when killed.
    const events = Array.from({ length: 5000 }, (_, i) => contactMessageEnvelope(`kill-${i}`));
    const ids = events.map((e) => e.id);
    await Promise.all(events.map((e) => publishEnvelope(nc, e)));
    // One message at a time, so the victim is still mid-backlog when the first row lets the test kill it.
    const victim = await notifier({ NOTIFIER_CONSUME_CONCURRENCY: "1" });
    await eventually(async () => ((await notificationsFor(db.pool, ids)).length > 0 ? true : undefined), 10_000, 5);
    victim.signal("SIGKILL");
    expect(await victim.exited).toBeNull();
    const created = (await notificationsFor(db.pool, ids)).length;
    expect(created).toBeLessThan(5000);

    await notifier();
    // Unacked messages come back after the ack wait (3 s here) at the latest; 5,000 rows take seconds alone,
    // and minutes when the whole suite shares the two cores.
    await allHaveOneRow(ids, 90_000);
    expect(await maxRowsPerSourceEvent(db.pool)).toBe(1);
  }, 150_000);
});

describe("a notifier that cannot reach NATS at startup exits", () => {
  it("logs a fatal line beginning `notifier: connect` and exits 1 without serving health", async () => {
    const healthPort = await freePort();
    const p = ServiceProcess.start(
      "notifier",
      devEnv(db.url, `nats://127.0.0.1:${await freePort()}`, { NOTIFIER_HEALTH_ADDR: `127.0.0.1:${healthPort}`, LOG_LEVEL: "info" }),
    );
    expect(await p.exited).toBe(1);
    const fatal = p.lines.find((l) => l.level === 60);
    expect(String(fatal?.msg)).toMatch(/^notifier: connect/);
    await expect(fetch(`http://127.0.0.1:${healthPort}/healthz`)).rejects.toThrow();
  });
});

describe("SIGTERM shuts the notifier down in order", () => {
  it("stops consuming, then the job families, health, the bus and the pool, and exits 0", async () => {
    const p = await notifier();
    expect(await p.stop()).toBe(0);
    const stages = p.lines.filter((l) => l.msg === "shutdown: stage done").map((l) => l.stage);
    expect(stages).toEqual([
      "stop consuming",
      "stop stall sweep",
      "stop job families",
      "close health server",
      "close deliverers",
      "drain bus",
      "close photo storage",
      "end pools",
    ]);
  });
});
