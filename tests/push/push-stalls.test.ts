import webpush from "web-push";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DELIVERY_TASKS } from "../../jobs/delivery/task.js";
import { Registry } from "../../lib/metrics.js";
import { reasonCategory } from "../../lib/notifications.js";
import type { SupervisedWorker } from "../../lib/worker.js";
import { inAppDeliverer } from "../../jobs/delivery/deliverers/in-app.js";
import { registerOriginPauseMetrics } from "../../jobs/delivery/deliverers/origin-pause.js";
import { createPushDeliverer } from "../../jobs/delivery/deliverers/push.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { freePort } from "../helpers/nats.js";
import { TestPushService, type TestSubscription } from "../helpers/push-service.js";
import { eventually } from "../helpers/stream.js";
import { TRICKLE_EVERY_MS } from "../helpers/trickle.js";
import { startDeliveryWorker } from "../notifier/support.js";
import { mappedResolver } from "../partners/servers.js";
import { notifyByPush, pushRow, settledPush } from "./support.js";

/**
 * Nothing a push service does stalls the notifier (contract part 4): each
 * push has a total deadline; an origin that keeps timing out is paused and
 * its deliveries wait without a slot; and a connection goes only to an
 * address its own lookup checked, whose refusal names no address. Against
 * real push services (tests/helpers/push-service.ts), one of which answers
 * one byte every 3 s.
 */

const vapid = webpush.generateVAPIDKeys();
/** Allow-listed (PUSH_ENDPOINT_ALLOW), mapped by this file's resolver to loopback. */
const NAMED_HOST = "push.named.test";
/** Not allow-listed: checked when subscribed, and now resolving to loopback (DNS rebinding). */
const REBOUND_HOST = "push.rebound.example";
/** Past the second byte of a 3 s trickle: an idle timer this long would never fire. */
const DEADLINE_MS = 4_000;
const PAUSE_MS = 6_000;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ VAPID_PUBLIC_KEY: vapid.publicKey, PUSH_ENDPOINT_ALLOW: "127.0.0.1" });
});
afterAll(async () => {
  await h?.close();
});
const resolver = mappedResolver({ [NAMED_HOST]: "127.0.0.1", [REBOUND_HOST]: "127.0.0.1" });
let stalling: TestPushService;
let slow: TestPushService;
let healthy: TestPushService;
let named: TestPushService;
let runner: SupervisedWorker | null = null;

beforeAll(async () => {
  [stalling, slow, healthy, named] = await Promise.all([
    TestPushService.start(),
    TestPushService.start(),
    TestPushService.start(),
    TestPushService.start(NAMED_HOST),
  ]);
  for (const service of [stalling, slow, healthy, named]) service.expectVapidKey(vapid.publicKey);
  const push = createPushDeliverer({
    pool: h.api.pool,
    vapid,
    subject: "mailto:ops@animal-safety.example",
    publicBaseUrl: "https://pets.test.example",
    allowHosts: ["127.0.0.1", NAMED_HOST],
    deadlineMs: DEADLINE_MS,
    originPauseMs: PAUSE_MS,
    resolve: resolver,
  });
  runner = await startDeliveryWorker(h.api.pool, { in_app: inAppDeliverer, push });
});

afterAll(async () => {
  await runner?.stop();
  await Promise.all([stalling, slow, healthy, named].map((s) => s?.close()));
});

/** A phone subscribing through the API. */
async function subscribe(service: TestPushService, actor: string): Promise<TestSubscription> {
  const sub = service.subscribe();
  const res = await h.api.app.inject({ method: "POST", url: "/v1/me/push-subscriptions", headers: as(actor), payload: sub });
  expect(res.statusCode, res.body).toBe(201);
  return sub;
}

/** A subscription row as one checked when subscribed, on an endpoint the API would not take from this test (a name). */
async function storedSubscription(service: TestPushService, actor: string, endpoint?: (sub: TestSubscription) => string): Promise<TestSubscription> {
  const sub = service.subscribe();
  const stored = { ...sub, endpoint: endpoint ? endpoint(sub) : sub.endpoint };
  await h.api.pool.query(`insert into push_subscription (actor_id, endpoint, p256dh, auth) values ($1, $2, $3, $4)`, [
    actor,
    stored.endpoint,
    sub.keys.p256dh,
    sub.keys.auth,
  ]);
  return stored;
}

const notify = (recipient: string) => notifyByPush(h.api.pool, recipient);
const row = (id: string) => pushRow(h.api.pool, id);
const settled = (id: string) => settledPush(h.api.pool, id, 30_000);

async function originHealth(origin: string) {
  const { rows } = await h.api.pool.query(
    `select consecutive_timeouts, paused_until, paused_until > now() as paused from push_origin_health where origin = $1`,
    [origin],
  );
  return rows[0] as { consecutive_timeouts: number; paused_until: Date | null; paused: boolean | null } | undefined;
}

/** The notification's delivery job that waits (not locked), and whether it is due later. */
async function waitingJob(id: string) {
  const { rows } = await h.api.pool.query(
    `select j.run_at as "runAt", j.run_at > now() as later
     from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
     where t.identifier = $1 and j.payload->>'notificationId' = $2 and j.locked_at is null`,
    [DELIVERY_TASKS.push.one, id],
  );
  return rows[0] as { runAt: Date; later: boolean } | undefined;
}

describe("a push's total deadline", () => {
  it("a push service that answers 201 and then one byte of body every 3 s is cut at the deadline, as a timeout, and retried", async () => {
    const sub = await subscribe(stalling, "stall-body");
    stalling.answer(sub.endpoint, { status: 201, trickleEveryMs: TRICKLE_EVERY_MS });
    const id = await notify("stall-body");

    // The first attempt timed out (its error stays on the row), the second went out.
    const done = await settled(id);
    expect(done).toMatchObject({ status: "sent", attempts: 2, last_error: "push service timed out: the push did not complete within 4 s" });
    expect(reasonCategory(done.last_error)).toBe("transient");
    // The first answer's head (201) had arrived: only its body was missing, and the deadline covers the body.
    expect(stalling.requestsTo(sub.endpoint).map((r) => r.status)).toEqual([201, 201]);
    // The answer in time ended the origin's streak: no row is left for it.
    expect(await originHealth(stalling.origin)).toBeUndefined();
  });
});

describe("a push origin that times out 3 times in a row", () => {
  it("is paused: its next delivery is put back with no attempt and no request, and goes out when the pause ends; another origin is unaffected", async () => {
    const timingOut = ["pause-a", "pause-b", "pause-c"];
    for (const actor of timingOut) await subscribe(slow, actor);
    const waiting = await subscribe(slow, "pause-d");
    await subscribe(healthy, "pause-elsewhere");
    slow.stall(TRICKLE_EVERY_MS);

    const first = await Promise.all(timingOut.map((actor) => notify(actor)));
    const pause = await eventually(async () => {
      const health = await originHealth(slow.origin);
      return health?.paused ? health : undefined;
    }, 30_000);
    expect(pause.consecutive_timeouts).toBeGreaterThanOrEqual(3);
    const registry = new Registry();
    registerOriginPauseMetrics(registry, h.api.pool);
    expect(await registry.metrics()).toMatch(/^push_origin_paused 1$/m);

    // The fourth delivery meanwhile: put back until the pause ends, the row untouched, nothing sent to the origin.
    const pausedUntil = (await originHealth(slow.origin))!.paused_until!;
    const fourth = await notify("pause-d");
    const job = await eventually(async () => {
      const waitingFor = await waitingJob(fourth);
      return waitingFor?.later ? waitingFor : undefined;
    });
    expect(job.runAt.getTime()).toBeGreaterThanOrEqual(pausedUntil.getTime());
    expect(await row(fourth)).toMatchObject({ status: "pending", attempts: 0, last_error: null });
    expect(slow.requestsTo(waiting.endpoint)).toEqual([]);

    // Another origin's push goes out at once, while this one is still paused.
    const elsewhere = await notify("pause-elsewhere");
    expect(await settled(elsewhere)).toMatchObject({ status: "sent", attempts: 1 });
    expect((await originHealth(slow.origin))?.paused).toBe(true);
    expect(slow.requestsTo(waiting.endpoint)).toEqual([]);
    expect(await row(fourth)).toMatchObject({ status: "pending", attempts: 0 });

    // The origin answers again; when the pause ends the fourth goes out, on its first attempt.
    slow.stall(null);
    expect(await settled(fourth)).toMatchObject({ status: "sent", attempts: 1, last_error: null });
    const [request] = slow.requestsTo(waiting.endpoint);
    expect(request!.at).toBeGreaterThanOrEqual(pausedUntil.getTime());
    for (const id of first) expect(await settled(id)).toMatchObject({ status: "sent" });
    // A success ends the streak and the pause.
    expect(await originHealth(slow.origin)).toBeUndefined();
    expect(await registry.metrics()).toMatch(/^push_origin_paused 0$/m);
  });
});

describe("a push connects only to the address its own lookup checked", () => {
  it("a name that now resolves to a loopback address is refused at connect time: no connection, dead-lettered, and no address named", async () => {
    const port = Number(new URL(healthy.origin).port);
    const sub = await storedSubscription(healthy, "rebound", (s) => `https://${REBOUND_HOST}:${port}${new URL(s.endpoint).pathname}`);
    const connectionsBefore = healthy.connections;
    const id = await notify("rebound");

    const done = await settled(id);
    expect(done).toMatchObject({
      status: "dead_letter",
      attempts: 1,
      last_error: `push endpoint refused: refused address of ${REBOUND_HOST}: it resolves to a private, loopback, link-local or reserved address`,
    });
    expect(done.last_error).not.toMatch(/127\.0\.0\.1/);
    expect(reasonCategory(done.last_error)).toBe("permanent");
    // The name was resolved when connecting, and nothing reached the address it gave.
    expect(resolver.lookups).toContain(REBOUND_HOST);
    expect(healthy.connections).toBe(connectionsBefore);
    expect(healthy.requestsTo(sub.endpoint)).toEqual([]);
  });

  it("an IP literal on a private address, in a row written another way, is refused without connecting", async () => {
    await storedSubscription(healthy, "private-literal", (s) => `https://10.20.30.40${new URL(s.endpoint).pathname}`);
    const done = await settled(await notify("private-literal"));
    expect(done).toMatchObject({ status: "dead_letter", attempts: 1 });
    expect(done.last_error).toMatch(/^push endpoint refused: refused address: 10\.20\.30\.40 is in a private/);
  });

  it("an allow-listed name (a test's loopback peer) is resolved once per connection and its pushes go out", async () => {
    const sub = await storedSubscription(named, "named-host");
    expect(new URL(sub.endpoint).hostname).toBe(NAMED_HOST);
    const lookupsBefore = resolver.lookups.filter((name) => name === NAMED_HOST).length;
    for (let i = 0; i < 2; i++) expect(await settled(await notify("named-host"))).toMatchObject({ status: "sent", attempts: 1 });
    const requests = named.requestsTo(sub.endpoint);
    expect(requests.map((r) => [r.status, r.error])).toEqual([
      [201, undefined],
      [201, undefined],
    ]);
    expect(resolver.lookups.filter((name) => name === NAMED_HOST).length - lookupsBefore).toBe(named.connections);
  });

  it("a connection refused names the error's code, not the address the name resolved to", async () => {
    const closed = await freePort();
    await storedSubscription(named, "named-closed", (s) => `http://${NAMED_HOST}:${closed}${new URL(s.endpoint).pathname}`);
    const done = await settled(await notify("named-closed"));
    expect(done).toMatchObject({ status: "dead_letter", attempts: 3, last_error: "push service unreachable (ECONNREFUSED)" });
  });
});
