import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { addProbeJob, PROBE_TASK, sampleValue, scrape } from "../helpers/exposition.js";
import { startTestBus, type TestBus } from "../helpers/nats.js";
import type { ServiceProcess } from "../helpers/processes.js";
import { Stack } from "../helpers/stack.js";
import { eventually } from "../helpers/stream.js";
import { startSmtpServer, type TestSmtpServer } from "../notifier/smtp.js";

let db: TestDatabase;
let bus: TestBus;
let stack: Stack;
let api: ServiceProcess;
let relay: ServiceProcess;
let notifier: ServiceProcess;
let smtp: TestSmtpServer;

beforeAll(async () => {
  db = await createTestDatabase();
  bus = await startTestBus();
  stack = new Stack(db.url, bus.url);
  // In-app rows are written sent; the email row is the one a delivery job sends, so the trace follows it to the wire.
  smtp = await startSmtpServer();
  [api, relay, notifier] = await Promise.all([
    stack.start("api"),
    stack.start("relay"),
    stack.start("notifier", { SMTP_URL: smtp.url, SMTP_FROM: "no-reply@example.org" }),
  ]);
});
afterAll(async () => {
  await stack?.stopAll();
  await smtp?.close();
  await bus?.dispose();
  await db?.drop();
});

describe("one event can be followed across the three processes by its id", () => {
  it("links the API's request id to the outbox event id, which the relay and the notifier log too", async () => {
    const owner = { "x-debug-actor": "trace-owner", "content-type": "application/json" };
    await fetch(`${stack.baseUrl}/v1/me/notification-preferences`, {
      method: "PUT",
      headers: owner,
      body: JSON.stringify({ email: "trace-owner@example.org" }),
    });
    const report = await fetch(`${stack.baseUrl}/v1/safety/lost-reports`, {
      method: "POST",
      headers: owner,
      body: JSON.stringify({ animal: { species: "dog", name: "Scout" }, lastSeenAt: "2026-11-20T08:00:00Z", location: { lat: 47.2, lon: 8.5 } }),
    });
    expect(report.status).toBe(201);
    const { id: reportId } = (await report.json()) as { id: string };

    const res = await fetch(`${stack.baseUrl}/v1/safety/lost-reports/${reportId}/relay-message`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "Seen near the station", fromContact: "finder@example.org" }),
    });
    expect(res.status).toBe(202);
    const requestId = res.headers.get("x-request-id");
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);

    const recorded = await api.waitForLog((l) => l.reqId === requestId && l.msg === "outbox: event recorded");
    const eventId = recorded.eventId as string;
    expect(recorded.eventType).toBe("events.safety.relay_message_received.v1");

    await relay.waitForLog((l) => l.msg === "relay: events published" && (l.eventIds as string[]).includes(eventId));
    await notifier.waitForLog((l) => l.msg === "notifier: event handled" && l.eventId === eventId);
    await notifier.waitForLog((l) => l.msg === "notifier: delivered" && l.eventId === eventId);

    const rows = await eventually(async () => {
      const { rows: found } = await db.pool.query(
        `select status, channel, recipient_actor_id from notification where source_event_id = $1 order by channel`,
        [eventId],
      );
      return found.length === 2 && found.every((r) => r.status === "sent") ? found : undefined;
    });
    expect(rows).toEqual([
      { status: "sent", channel: "email", recipient_actor_id: "trace-owner" },
      { status: "sent", channel: "in_app", recipient_actor_id: "trace-owner" },
    ]);
    // The relay message's mail (filing the report also mailed the owner its first hour's guide).
    expect(smtp.received.filter((m) => !/what to do in the first hour/.test(m.raw)).map((m) => m.to)).toEqual([["trace-owner@example.org"]]);
    // Contact data stays out of every log line.
    for (const p of [api, relay, notifier]) {
      expect(JSON.stringify(p.lines)).not.toContain("finder@example.org");
    }
  });
});

describe("the notifier exposes consumer lag, notifications by status and channel, delivery latency and queue depth", () => {
  it("serves them on its health port after a delivery, and both worker processes count a queued job", async () => {
    await addProbeJob(db.pool);
    const port = (notifier as ServiceProcess & { port: number }).port;
    const text = await eventually(async () => {
      const { text: body } = await scrape(port);
      return (sampleValue(body, "notifier_delivery_seconds_count", { channel: "email", outcome: "sent" }) ?? 0) >= 1 ? body : undefined;
    });
    expect(sampleValue(text, "notifier_consumer_lag", { kind: "pending" })).toBe(0);
    expect(sampleValue(text, "notifications", { status: "sent", channel: "in_app" })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
    for (const [process, service] of [["notifier", notifier], ["relay", relay]] as const) {
      const { text: body } = await scrape((service as ServiceProcess & { port: number }).port);
      expect(sampleValue(body, "worker_jobs", { task: PROBE_TASK, state: "scheduled", process })).toBe(1);
    }
  });
});
