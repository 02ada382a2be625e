import { randomUUID } from "node:crypto";
import webpush from "web-push";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { DELIVERY_TASKS } from "../../jobs/delivery/task.js";
import { deliveryLockKey, NO_PUSH_SUBSCRIPTION, reasonCategory, type NotificationKind } from "../../lib/notifications.js";
import { enqueue, enqueueDeliveryBatches } from "../../jobs/queue.js";
import type { SupervisedWorker } from "../../lib/worker.js";
import { buildDeliverers } from "../../jobs/delivery/deliverers/index.js";
import { MAX_PUSH_PAYLOAD_BYTES, PUSH_TTL_SECONDS } from "../../jobs/delivery/deliverers/push.js";
import { channelsFor, emailPreferences, insertNotification } from "../../lib/notification-rows.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { TestPushService, type TestSubscription } from "../helpers/push-service.js";
import { eventually } from "../helpers/stream.js";
import { startDeliveryWorker } from "../notifier/support.js";
import { notifyByPush, pushRow, settledPush } from "./support.js";

/**
 * The push channel against a real push service (tests/helpers/push-service.ts):
 * subscriptions made through the API, notifications delivered by the
 * notifier's delivery job with the deliverers it builds, each request's VAPID
 * signature checked and its payload decrypted by the service.
 */

const vapid = webpush.generateVAPIDKeys();
const PUBLIC_BASE = "https://pets.test.example";
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ VAPID_PUBLIC_KEY: vapid.publicKey, PUSH_ENDPOINT_ALLOW: "127.0.0.1" });
});
afterAll(async () => {
  await h?.close();
});

let push: TestPushService;
let runner: SupervisedWorker | null = null;

beforeAll(async () => {
  push = await TestPushService.start();
  const served = await h.api.app.inject({ method: "GET", url: "/v1/push/public-key" });
  push.expectVapidKey(served.json().publicKey);
  runner = await startDeliveryWorker(
    h.api.pool,
    buildDeliverers(
      {
        SMTP_URL: undefined,
        SMTP_FROM: "no-reply@example.org",
        API_PUBLIC_BASE_URL: PUBLIC_BASE,
        VAPID_PUBLIC_KEY: vapid.publicKey,
        VAPID_PRIVATE_KEY: vapid.privateKey,
        VAPID_SUBJECT: "mailto:ops@animal-safety.example",
        PUSH_ENDPOINT_ALLOW: ["127.0.0.1"],
      },
      h.api.pool,
    ),
  );
});

afterAll(async () => {
  await runner?.stop();
  await push?.close();
});

/** A phone subscribing through the API, as the pages' script does. */
async function subscribe(actor: string): Promise<TestSubscription & { id: string }> {
  const sub = push.subscribe();
  const res = await h.api.app.inject({ method: "POST", url: "/v1/me/push-subscriptions", headers: as(actor), payload: sub });
  expect(res.statusCode).toBe(201);
  return { ...sub, id: res.json().id };
}

const notify = (recipient: string, kind?: NotificationKind, body?: string, data?: Record<string, string>) =>
  notifyByPush(h.api.pool, recipient, kind, body, data);
const row = (id: string) => pushRow(h.api.pool, id);
const settled = (id: string, timeoutMs?: number) => settledPush(h.api.pool, id, timeoutMs);

const subscriptionIds = async (actor: string) =>
  (await h.api.pool.query(`select id from push_subscription where actor_id = $1 order by created_at`, [actor])).rows.map((r) => r.id as string);

describe("a push service that takes the message (201)", () => {
  it("gets it on every subscription, signed with the served key, encrypted, with TTL one day and Urgency high for a contact message", async () => {
    const phone = await subscribe("push-201");
    const laptop = await subscribe("push-201");
    const lostReportId = randomUUID();
    const id = await notify("push-201", "relay_message", "I think I saw your dog near the park", { lostReportId });

    expect(await settled(id)).toMatchObject({ status: "sent", attempts: 1, last_error: null });
    for (const sub of [phone, laptop]) {
      const [request] = push.requestsTo(sub.endpoint);
      expect(request?.error).toBeUndefined();
      expect(request?.status).toBe(201);
      expect(request?.claims).toMatchObject({ aud: push.origin, sub: "mailto:ops@animal-safety.example" });
      expect(request?.headers.ttl).toBe(String(PUSH_TTL_SECONDS));
      expect(request?.headers.urgency).toBe("high");
      expect(request?.payload).toEqual({
        kind: "relay_message",
        subject: "Someone sent a message about your lost animal",
        body: "I think I saw your dog near the park",
        url: `${PUBLIC_BASE}/lost/${lostReportId}`,
        data: { lostReportId, notificationId: id },
      });
    }
  });

  it("sends Urgency high for match, sighting and tag_scanned, and normal for the other kinds", async () => {
    const sub = await subscribe("push-urgency");
    const kinds: NotificationKind[] = ["match", "sighting", "tag_scanned", "nearby_lost", "report_expiring"];
    for (const kind of kinds) await settled(await notify("push-urgency", kind));
    const urgencies = push.requestsTo(sub.endpoint).map((r) => [(r.payload as { kind: string }).kind, r.headers.urgency]);
    expect(Object.fromEntries(urgencies)).toEqual({
      match: "high",
      sighting: "high",
      tag_scanned: "high",
      nearby_lost: "normal",
      report_expiring: "normal",
    });
  });

  it("cuts a long body so the payload stays within 3 KB", async () => {
    const sub = await subscribe("push-long");
    const id = await notify("push-long", "relay_message", "é".repeat(5_000));
    expect(await settled(id)).toMatchObject({ status: "sent" });
    const [request] = push.requestsTo(sub.endpoint);
    expect(Buffer.byteLength(request!.text!)).toBeLessThanOrEqual(MAX_PUSH_PAYLOAD_BYTES);
    const body = (request!.payload as { body: string }).body;
    expect(body.endsWith("…")).toBe(true);
    expect(body.length).toBeGreaterThan(1_000);
  });
});

describe("a subscription the push service says is gone (404, 410)", () => {
  it.each([404, 410])("%i deletes that subscription; the notification is sent when another took it", async (status) => {
    const actor = `push-gone-${status}`;
    const gone = await subscribe(actor);
    const kept = await subscribe(actor);
    push.answer(gone.endpoint, { status });
    const id = await notify(actor);
    expect(await settled(id)).toMatchObject({ status: "sent" });
    expect(await subscriptionIds(actor)).toEqual([kept.id]);
  });

  it("dead-letters the notification with \"no push subscription\" when none is left", async () => {
    const only = await subscribe("push-none-left");
    push.answer(only.endpoint, { status: 410 });
    const id = await notify("push-none-left");
    const settledRow = await settled(id);
    expect(settledRow).toMatchObject({ status: "dead_letter", attempts: 1, last_error: NO_PUSH_SUBSCRIPTION });
    expect(reasonCategory(settledRow.last_error)).toBe("permanent");
    expect(await subscriptionIds("push-none-left")).toEqual([]);
  });

  it("dead-letters at once a push notification whose recipient has no subscription", async () => {
    const id = await notify("push-never-subscribed");
    expect(await settled(id)).toMatchObject({ status: "dead_letter", attempts: 1, last_error: NO_PUSH_SUBSCRIPTION });
  });
});

describe("a push service that is busy (429, 5xx)", () => {
  it("429 with Retry-After: the next attempt waits as long, and then it is sent", async () => {
    const sub = await subscribe("push-429");
    push.answer(sub.endpoint, { status: 429, retryAfter: "1" });
    const id = await notify("push-429");
    expect(await settled(id)).toMatchObject({ status: "sent", attempts: 2 });
    const [first, second] = push.requestsTo(sub.endpoint);
    expect([first?.status, second?.status]).toEqual([429, 201]);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
  });

  it("a Retry-After past the backoff's cap makes the next attempt a job of its own at that time", async () => {
    const sub = await subscribe("push-429-long");
    push.answer(sub.endpoint, { status: 429, retryAfter: "3" });
    const id = await notify("push-429-long");
    const waiting = await eventually(async () => {
      const r = await row(id);
      return r.status === "failed" ? r : undefined;
    });
    expect(waiting).toMatchObject({ attempts: 1, last_error: "push service 429" });
    // The round's next attempt: a delivery job due about 3 s after the 429.
    const later = await eventually(async () => {
      const { rows } = await h.api.pool.query(
        `select j.run_at > now() + interval '1 second' as later
         from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
         where t.identifier = $1 and j.payload->>'notificationId' = $2 and j.locked_at is null`,
        [DELIVERY_TASKS.push.one, id],
      );
      return rows.length > 0 ? rows : undefined;
    });
    expect(later).toEqual([{ later: true }]);
    expect(await settled(id)).toMatchObject({ status: "sent", attempts: 2 });
    const [first, second] = push.requestsTo(sub.endpoint);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(2_900);
  });

  it("503 on every attempt: retried with the backoff, then dead-lettered as transient (an operator may replay it)", async () => {
    const sub = await subscribe("push-503");
    push.answer(sub.endpoint, { status: 503 }, { status: 503 }, { status: 503 });
    const id = await notify("push-503");
    const settledRow = await settled(id);
    expect(settledRow).toMatchObject({ status: "dead_letter", attempts: 3, last_error: "push service 503" });
    expect(reasonCategory(settledRow.last_error)).toBe("transient");
    expect(push.requestsTo(sub.endpoint).map((r) => r.status)).toEqual([503, 503, 503]);
    expect(await subscriptionIds("push-503")).toEqual([sub.id]);
  });
});

describe("a push service that refuses the message (413)", () => {
  it("dead-letters that notification as permanent, keeps the subscription, and the next notification is tried again", async () => {
    const sub = await subscribe("push-413");
    push.answer(sub.endpoint, { status: 413 });
    const refused = await notify("push-413");
    const refusedRow = await settled(refused);
    expect(refusedRow).toMatchObject({ status: "dead_letter", attempts: 1 });
    expect(refusedRow.last_error).toMatch(/provider rejected the push: 413/);
    expect(reasonCategory(refusedRow.last_error)).toBe("permanent");
    expect(await subscriptionIds("push-413")).toEqual([sub.id]);

    const next = await notify("push-413");
    expect(await settled(next)).toMatchObject({ status: "sent" });
    expect(push.requestsTo(sub.endpoint).map((r) => r.status)).toEqual([413, 201]);
  });
});

/** An alert's push rows as the fan-out writes them; queued (enqueueDeliveryBatches) as batch jobs of `size` when given. */
async function alertPushes(recipients: string[], size?: number): Promise<string[]> {
  return withTransaction(h.api.pool, async (client) => {
    const ids: string[] = [];
    const sourceEventId = randomUUID();
    for (const recipient of recipients) {
      const id = await insertNotification(client, {
        recipientActorId: recipient,
        sourceKey: `nearby_lost:${sourceEventId}`,
        subject: "A dog was reported lost near you",
        body: "Brown and white, answers to Rex",
        sourceEventId,
        sourceOccurredAt: new Date(),
        eventType: EventType.AnimalLostReported,
        kind: "nearby_lost",
        data: { lostReportId: randomUUID() },
        channel: "push",
      });
      ids.push(id!);
    }
    if (size) await enqueueDeliveryBatches(client, ids.map((id) => ({ id, channel: "push" as const })), { size });
    return ids;
  });
}

describe("an alert's pushes, a batch of notifications per delivery job", () => {
  it("sends each once and records each outcome; one the push service may take later is retried by a job of its own", async () => {
    const [took, gone, refused, busy] = ["took", "gone", "refused", "busy"].map((k) => `push-batch-${k}-${randomUUID().slice(0, 8)}`);
    const subs = new Map<string, TestSubscription & { id: string }>();
    for (const actor of [took!, gone!, refused!, busy!]) subs.set(actor, await subscribe(actor));
    push.answer(subs.get(gone!)!.endpoint, { status: 410 });
    push.answer(subs.get(refused!)!.endpoint, { status: 413 });
    push.answer(subs.get(busy!)!.endpoint, { status: 503 });

    // Two jobs: three notifications, then one.
    const ids = await alertPushes([took!, gone!, refused!, busy!], 3);
    const [tookId, goneId, refusedId, busyId] = ids;
    expect(await settled(tookId!)).toMatchObject({ status: "sent", attempts: 1, last_error: null });
    expect(await settled(goneId!)).toMatchObject({ status: "dead_letter", attempts: 1, last_error: NO_PUSH_SUBSCRIPTION });
    const refusedRow = await settled(refusedId!);
    expect(refusedRow).toMatchObject({ status: "dead_letter", attempts: 1 });
    expect(refusedRow.last_error).toMatch(/provider rejected the push: 413/);
    // The 503 left the row failed, and its round's second attempt came from a notification__deliver job after the backoff.
    expect(await settled(busyId!)).toMatchObject({ status: "sent", attempts: 2 });
    const [first, second] = push.requestsTo(subs.get(busy!)!.endpoint);
    expect([first?.status, second?.status]).toEqual([503, 201]);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(240);

    const took1 = push.requestsTo(subs.get(took!)!.endpoint);
    expect(took1.map((r) => r.status)).toEqual([201]);
    expect(took1[0]!.error).toBeUndefined();
    expect(took1[0]!.payload).toMatchObject({ kind: "nearby_lost", body: "Brown and white, answers to Rex", data: { notificationId: tookId } });
    expect(push.requestsTo(subs.get(refused!)!.endpoint).map((r) => r.status)).toEqual([413]);
    expect(await subscriptionIds(gone!)).toEqual([]);
    expect(await subscriptionIds(refused!)).toEqual([subs.get(refused!)!.id]);
  });

  it("leaves alone a notification another delivery holds, and never sends one already sent again", async () => {
    const [held, done, fresh] = ["held", "done", "fresh"].map((k) => `push-batch-${k}-${randomUUID().slice(0, 8)}`);
    const subs = new Map<string, TestSubscription & { id: string }>();
    for (const actor of [held!, done!, fresh!]) subs.set(actor, await subscribe(actor));
    const [heldId, doneId, freshId] = await alertPushes([held!, done!, fresh!]);
    await h.api.pool.query(`update notification set status = 'sent', attempts = 1, sent_at = now() where id = $1`, [doneId]);
    const holder = await h.api.pool.connect();
    try {
      await holder.query(`select pg_advisory_lock(hashtextextended($1, 0))`, [deliveryLockKey(heldId!)]);
      await enqueueDeliveryBatches(h.api.pool, [heldId!, doneId!, freshId!].map((id) => ({ id, channel: "push" as const })), { size: 100 });
      expect(await settled(freshId!)).toMatchObject({ status: "sent", attempts: 1 });
      expect(push.requestsTo(subs.get(fresh!)!.endpoint)).toHaveLength(1);
      // The job is done (its key gone) and the other two were not sent by it.
      await eventually(async () => {
        const { rows } = await h.api.pool.query(`select count(*)::int as n from graphile_worker._private_jobs where payload::jsonb->'notificationIds' ? $1`, [freshId]);
        return rows[0].n === 0 ? true : undefined;
      });
      expect(await row(heldId!)).toMatchObject({ status: "pending", attempts: 0 });
      expect(push.requestsTo(subs.get(held!)!.endpoint)).toEqual([]);
      expect(await row(doneId!)).toMatchObject({ status: "sent", attempts: 1 });
      expect(push.requestsTo(subs.get(done!)!.endpoint)).toEqual([]);
    } finally {
      await holder.query(`select pg_advisory_unlock_all()`);
      holder.release();
    }
  });
});

describe("which notifications get a push row", () => {
  it("only recipients with a subscription now, for the kinds in pushKinds (left out: every kind)", async () => {
    await subscribe("push-pref-all");
    await subscribe("push-pref-some");
    await h.api.app.inject({ method: "PUT", url: "/v1/me/notification-preferences", headers: as("push-pref-some"), payload: { pushKinds: ["match"] } });
    const preferences = await emailPreferences(h.api.pool, ["push-pref-all", "push-pref-some", "push-pref-nobody"]);
    expect(channelsFor("sighting", preferences.get("push-pref-all"))).toEqual(["in_app", "push"]);
    expect(channelsFor("match", preferences.get("push-pref-some"))).toEqual(["in_app", "push"]);
    expect(channelsFor("sighting", preferences.get("push-pref-some"))).toEqual(["in_app"]);
    expect(channelsFor("sighting", preferences.get("push-pref-nobody"))).toEqual(["in_app"]);
  });
});
