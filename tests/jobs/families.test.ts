import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import webpush from "web-push";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { createPool, type Pool } from "../../lib/db.js";
import { JOB_FAMILIES, type JobFamily } from "../../lib/job-families.js";
import { insertNotification } from "../../lib/notification-rows.js";
import type { Channel } from "../../lib/notifications.js";
import { buildDeliverers } from "../../jobs/delivery/deliverers/index.js";
import { startFamilies, type RunningFamilies } from "../../jobs/families.js";
import { MATCH_SUBJECT_TASK } from "../../jobs/matching/task.js";
import { enqueue, enqueueDeliveries } from "../../jobs/queue.js";
import { ALERTS_SWEEP_TASK } from "../../jobs/scheduled/task.js";
import { loadNotifierConfig } from "../../lib/config.js";
import { as } from "../helpers/app.js";
import { TestPushService } from "../helpers/push-service.js";
import { eventually } from "../helpers/stream.js";
import { startSmtpServer, type TestSmtpServer } from "../notifier/smtp.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { createFoundReport, createLostReport, freshActor } from "../safety/helpers.js";

/**
 * Each job family has slots of its own (jobs/families.ts): twenty pushes
 * hanging on a tarpit hold push slots and their own connections only, while
 * another person's email and push, a match and the scheduled jobs go on.
 */

const vapid = webpush.generateVAPIDKeys();
let h: Harness;
let push: TestPushService;
let smtp: TestSmtpServer;
let families: RunningFamilies;
const familyPools: Pool[] = [];

/** An HTTP server that accepts a request and answers one byte every 3 s, never finishing. */
const tarpitSockets = new Set<import("node:net").Socket>();
let tarpitOpen = true;
const tarpit = http.createServer((_req, res) => {
  // At the end the tarpit answers at once, so the hanging deliveries' retries finish and the runners stop.
  if (!tarpitOpen) return void res.writeHead(201).end();
  if (res.socket) tarpitSockets.add(res.socket);
  res.writeHead(201, { "content-length": "1000" });
  const drip = setInterval(() => res.write("x"), 3_000);
  res.on("close", () => clearInterval(drip));
});
let tarpitOrigin = "";
const tarpitRequests = () => tarpitSockets.size;

beforeAll(async () => {
  h = await startHarness({ VAPID_PUBLIC_KEY: vapid.publicKey, PUSH_ENDPOINT_ALLOW: "127.0.0.1" });
  push = await TestPushService.start();
  smtp = await startSmtpServer();
  tarpit.listen(0, "127.0.0.1");
  await new Promise((resolve) => tarpit.once("listening", resolve));
  tarpitOrigin = `http://127.0.0.1:${(tarpit.address() as AddressInfo).port}`;
  const deliverers = buildDeliverers(
    {
      SMTP_URL: smtp.url,
      SMTP_FROM: "no-reply@example.org",
      API_PUBLIC_BASE_URL: "https://pets.test.example",
      VAPID_PUBLIC_KEY: vapid.publicKey,
      VAPID_PRIVATE_KEY: vapid.privateKey,
      VAPID_SUBJECT: "mailto:ops@animal-safety.example",
      PUSH_ENDPOINT_ALLOW: ["127.0.0.1"],
    },
    h.api.pool,
  );
  const defaults = loadNotifierConfig({ DATABASE_URL: "postgres://x@127.0.0.1/x", NATS_URL: "nats://127.0.0.1:4222", NOTIFIER_ENV: "development" });
  const run: JobFamily[] = ["delivery-email", "delivery-push", "matching", "scheduled", "fanout"];
  families = await startFamilies(
    {
      pool: h.api.pool,
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
      deliverers,
      reportTtlDays: 30,
      outboxRetentionDays: 7,
    },
    run,
    (family) =>
      family.startsWith("delivery-") ? defaults.NOTIFIER_DELIVERY_CONCURRENCY : family === "matching" ? defaults.NOTIFIER_MATCHING_CONCURRENCY : 2,
    (family, max) => {
      const pool = createPool({ connectionString: h.db.url, max, applicationName: `test:${family}`, logger: pino({ level: "silent" }) });
      familyPools.push(pool);
      return pool;
    },
  );
});

afterAll(async () => {
  tarpitOpen = false;
  for (const socket of tarpitSockets) socket.destroy();
  await families?.stop();
  tarpit.close();
  await push?.close();
  await smtp?.close();
  await h?.close();
});

async function subscribe(actor: string, endpoint?: string): Promise<void> {
  const sub = push.subscribe();
  const res = await h.api.app.inject({
    method: "POST",
    url: "/v1/me/push-subscriptions",
    headers: as(actor),
    payload: endpoint ? { ...sub, endpoint } : sub,
  });
  expect(res.statusCode).toBe(201);
}

/** A notification row on `channel` and its delivery job, in one transaction, as the consumer writes them. */
async function notify(recipient: string, channel: Channel): Promise<string> {
  return withTransaction(h.api.pool, async (client) => {
    const id = await insertNotification(client, {
      recipientActorId: recipient,
      sourceKey: `relay_message:${randomUUID()}`,
      subject: "Someone sent a message about your lost animal",
      body: "I think I saw your dog near the park",
      sourceEventId: randomUUID(),
      sourceOccurredAt: new Date().toISOString(),
      eventType: EventType.ContactMessageReceived,
      kind: "relay_message",
      data: { lostReportId: randomUUID() },
      channel,
    });
    await enqueueDeliveries(client, [{ id: id!, channel }]);
    return id!;
  });
}

describe("job families", () => {
  it("are named in one list, and the notifier runs every one by default with at least 32 delivery slots", () => {
    const config = loadNotifierConfig({ DATABASE_URL: "postgres://x@127.0.0.1/x", NATS_URL: "nats://127.0.0.1:4222", NOTIFIER_ENV: "development" });
    expect(config.NOTIFIER_JOB_FAMILIES).toEqual([...JOB_FAMILIES]);
    expect(config.NOTIFIER_DELIVERY_CONCURRENCY).toBeGreaterThanOrEqual(32);
    expect(
      loadNotifierConfig({ DATABASE_URL: "postgres://x@127.0.0.1/x", NATS_URL: "nats://127.0.0.1:4222", NOTIFIER_ENV: "development", NOTIFIER_JOB_FAMILIES: "matching, photos" })
        .NOTIFIER_JOB_FAMILIES,
    ).toEqual(["matching", "photos"]);
    expect(() =>
      loadNotifierConfig({ DATABASE_URL: "postgres://x@127.0.0.1/x", NATS_URL: "nats://127.0.0.1:4222", NOTIFIER_ENV: "development", NOTIFIER_JOB_FAMILIES: "matching,everything" }),
    ).toThrow(expect.objectContaining({ setting: "NOTIFIER_JOB_FAMILIES" }));
    // A notifier may run job families alone, without consuming the stream.
    expect(config.NOTIFIER_CONSUME).toBe(true);
    expect(
      loadNotifierConfig({ DATABASE_URL: "postgres://x@127.0.0.1/x", NATS_URL: "nats://127.0.0.1:4222", NOTIFIER_ENV: "development", NOTIFIER_CONSUME: "false" })
        .NOTIFIER_CONSUME,
    ).toBe(false);
  });

  it("twenty pushes hanging on a tarpit stall no one else's email, push, match or scheduled job", async () => {
    // Twenty people whose phones' push service is a tarpit: each delivery holds its slot.
    const stuck = Array.from({ length: 20 }, () => freshActor("tarpit"));
    for (const actor of stuck) await subscribe(actor, `${tarpitOrigin}/push/${randomUUID()}`);
    for (const actor of stuck) await notify(actor, "push");
    await eventually(async () => (tarpitRequests() >= 20 ? true : undefined), 30_000);

    // Meanwhile another person's email and push on a healthy endpoint arrive within 5 s.
    const other = freshActor("other");
    await subscribe(other);
    const pushed = await notify(other, "push");
    const emailed = await withTransaction(h.api.pool, async (client) => {
      await client.query(`insert into notification_preference (actor_id, email) values ($1, $2)`, [other, "other@example.org"]);
      return "ok";
    }).then(() => notify(other, "email"));
    await eventually(async () => (smtp.received.some((m) => m.to.includes("other@example.org")) ? true : undefined), 5_000);
    await eventually(async () => (push.requests.length > 0 ? true : undefined), 5_000);
    const statuses = await h.db.pool.query<{ id: string; status: string }>(`select id, status from notification where id = any($1::uuid[])`, [[pushed, emailed]]);
    await eventually(async () => {
      const { rows } = await h.db.pool.query<{ status: string }>(`select status from notification where id = any($1::uuid[])`, [[pushed, emailed]]);
      return rows.every((r) => r.status === "sent") ? true : undefined;
    }, 5_000);
    expect(statuses.rows).toHaveLength(2);

    // A match is suggested within 5 s.
    const at = { lat: 47.37, lon: 8.54 };
    const lostId = await createLostReport(h.api, freshActor("owner"), { lastSeenAt: "2026-08-01T08:00:00Z", location: at });
    const foundId = await createFoundReport(h.api, freshActor("finder"), {
      animal: { species: "dog", colors: ["brown"] },
      foundAt: "2026-08-01T18:00:00Z",
      location: { lat: at.lat + 0.005, lon: at.lon },
    });
    await enqueue(h.db.pool, MATCH_SUBJECT_TASK, { kind: "found", id: foundId });
    await eventually(async () => {
      const { rows } = await h.db.pool.query(`select 1 from safety_match where lost_report_id = $1 and kind = 'found_report' and target_id = $2`, [lostId, foundId]);
      return rows.length > 0 ? true : undefined;
    }, 5_000);

    // The stall sweep runs.
    const { rows: swept } = await h.db.pool.query<{ id: string }>(`select (graphile_worker.add_job($1)).id::text as id`, [ALERTS_SWEEP_TASK]);
    await eventually(async () => {
      const { rows } = await h.db.pool.query(`select 1 from graphile_worker.jobs where id = $1::bigint`, [swept[0]!.id]);
      return rows.length === 0 ? true : undefined;
    }, 5_000);

    // The twenty are still hanging: nothing above waited for them.
    expect(tarpitRequests()).toBeGreaterThanOrEqual(20);
  });
});
