import { createECDH, randomBytes } from "node:crypto";
import webpush from "web-push";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointProblem, MAX_PUSH_SUBSCRIPTIONS_PER_ACTOR } from "../../lib/push.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { expectProblem, freshIp } from "../safety/helpers.js";

const vapid = webpush.generateVAPIDKeys();
// Each request comes from an address of its own: on a fast machine the file's requests together
// would spend one address's per-IP bucket (20/s, burst 40) and meet 429.
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ VAPID_PUBLIC_KEY: vapid.publicKey, PUSH_ENDPOINT_ALLOW: "push.test" });
});
afterAll(async () => {
  await h?.close();
});

/** What a browser's PushSubscription.toJSON() gives, on an https push service. */
function browserSubscription(endpoint = `https://push.example.com/send/${randomBytes(8).toString("hex")}`) {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  return { endpoint, keys: { p256dh: ecdh.getPublicKey().toString("base64url"), auth: randomBytes(16).toString("base64url") } };
}

const post = (actor: string, payload: unknown) =>
  h.api.app.inject({ remoteAddress: freshIp(), method: "POST", url: "/v1/me/push-subscriptions", headers: as(actor), payload: payload as object });

async function rowsOf(actor: string) {
  return (await h.api.pool.query(`select id, endpoint, p256dh, auth from push_subscription where actor_id = $1 order by created_at`, [actor])).rows;
}

describe("GET /v1/push/public-key", () => {
  it("gives the VAPID public key, without login", async () => {
    const res = await h.api.app.inject({ remoteAddress: freshIp(), method: "GET", url: "/v1/push/public-key" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ publicKey: vapid.publicKey });
  });
});

describe("POST /v1/me/push-subscriptions", () => {
  it("stores a browser's subscription: 201 with its id, and the same endpoint again is 200 with the same id and the new keys", async () => {
    const sub = browserSubscription();
    const first = await post("push-owner-1", sub);
    expect(first.statusCode).toBe(201);
    const { id } = first.json();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    const renewed = { ...browserSubscription(sub.endpoint) };
    const again = await post("push-owner-1", renewed);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ id });
    expect(await rowsOf("push-owner-1")).toEqual([{ id, endpoint: sub.endpoint, p256dh: renewed.keys.p256dh, auth: renewed.keys.auth }]);
  });

  it("needs a signed-in actor", async () => {
    const res = await h.api.app.inject({ remoteAddress: freshIp(), method: "POST", url: "/v1/me/push-subscriptions", payload: browserSubscription() });
    expect(res.statusCode).toBe(401);
  });

  const p256dh = browserSubscription().keys.p256dh;
  const auth = randomBytes(16).toString("base64url");
  it.each([
    ["an http endpoint", { endpoint: "http://push.example.com/send/1", keys: { p256dh, auth } }],
    ["an endpoint on a loopback address", { endpoint: "https://127.0.0.1/send/1", keys: { p256dh, auth } }],
    ["an endpoint on a private address", { endpoint: "https://10.1.2.3/send/1", keys: { p256dh, auth } }],
    ["an endpoint on an IPv6 loopback", { endpoint: "https://[::1]/send/1", keys: { p256dh, auth } }],
    ["an endpoint on localhost", { endpoint: "https://localhost/send/1", keys: { p256dh, auth } }],
    ["an endpoint on the metadata address", { endpoint: "https://169.254.169.254/latest", keys: { p256dh, auth } }],
    ["an endpoint that is no URL", { endpoint: "push me", keys: { p256dh, auth } }],
    ["a p256dh of the wrong length", { endpoint: "https://push.example.com/s/2", keys: { p256dh: p256dh.slice(0, 40), auth } }],
    ["a compressed p256dh", { endpoint: "https://push.example.com/s/3", keys: { p256dh: Buffer.alloc(33, 2).toString("base64url"), auth } }],
    ["a p256dh that is not base64url", { endpoint: "https://push.example.com/s/4", keys: { p256dh: `${p256dh.slice(0, 80)}+/+/+/+`, auth } }],
    ["an auth of the wrong length", { endpoint: "https://push.example.com/s/5", keys: { p256dh, auth: randomBytes(15).toString("base64url") } }],
    ["an auth that is not base64url", { endpoint: "https://push.example.com/s/6", keys: { p256dh, auth: "!!!!!!!!!!!!!!!!!!!!!!" } }],
    ["no keys", { endpoint: "https://push.example.com/s/7" }],
  ])("refuses %s with 400 and stores nothing", async (_name, payload) => {
    const res = await post("push-bad-input", payload);
    expect(res.statusCode).toBe(400);
    expect(res.headers["content-type"]).toMatch(/application\/problem\+json/);
    expect(await rowsOf("push-bad-input")).toEqual([]);
  });

  it("an endpoint another actor holds is 409 (conflict) and stays theirs; after its owner deletes it, it may be posted", async () => {
    const sub = browserSubscription();
    const owned = await post("push-holder", sub);
    expect(owned.statusCode).toBe(201);
    const { id } = owned.json();

    const taken = await post("push-taker", browserSubscription(sub.endpoint));
    expectProblem(taken, 409, "conflict");
    expect(taken.json().detail).toMatch(/another account/);
    expect(await rowsOf("push-taker")).toEqual([]);
    expect(await rowsOf("push-holder")).toEqual([{ id, endpoint: sub.endpoint, p256dh: sub.keys.p256dh, auth: sub.keys.auth }]);
    // The owner re-posting it stays idempotent.
    expect((await post("push-holder", sub)).json()).toEqual({ id });

    const deleted = await h.api.app.inject({ remoteAddress: freshIp(), method: "DELETE", url: `/v1/me/push-subscriptions/${id}`, headers: as("push-holder") });
    expect(deleted.statusCode).toBe(204);
    expect((await post("push-taker", sub)).statusCode).toBe(201);
    expect((await rowsOf("push-taker")).map((r) => r.endpoint)).toEqual([sub.endpoint]);
  });

  it("two actors posting one endpoint at once: one owns it, the other is 409", async () => {
    const sub = browserSubscription();
    const answers = await Promise.all(["push-race-1", "push-race-2"].map((actor) => post(actor, sub)));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 409]);
    const { rows } = await h.api.pool.query(`select actor_id from push_subscription where endpoint = $1`, [sub.endpoint]);
    expect(rows).toHaveLength(1);
  });

  it("takes an http endpoint on a host of PUSH_ENDPOINT_ALLOW (tests' local push service)", async () => {
    const res = await post("push-allowed", browserSubscription("http://push.test:8099/send/1"));
    expect(res.statusCode).toBe(201);
  });

  it(`allows ${MAX_PUSH_SUBSCRIPTIONS_PER_ACTOR} per actor: the eleventh is 409, and an existing endpoint is still 200`, async () => {
    const subs = Array.from({ length: MAX_PUSH_SUBSCRIPTIONS_PER_ACTOR }, () => browserSubscription());
    for (const sub of subs) expect((await post("push-many", sub)).statusCode).toBe(201);
    const eleventh = await post("push-many", browserSubscription());
    expect(eleventh.statusCode).toBe(409);
    expect(await rowsOf("push-many")).toHaveLength(MAX_PUSH_SUBSCRIPTIONS_PER_ACTOR);
    expect((await post("push-many", subs[3]!)).statusCode).toBe(200);
  });
});

describe("GET and DELETE /v1/me/push-subscriptions", () => {
  it("lists only the actor's own, and deletes only the actor's own (another's is 404)", async () => {
    const mine = (await post("push-lister", browserSubscription())).json().id as string;
    const theirs = (await post("push-other", browserSubscription())).json().id as string;

    const list = await h.api.app.inject({ remoteAddress: freshIp(), method: "GET", url: "/v1/me/push-subscriptions", headers: as("push-lister") });
    expect(list.statusCode).toBe(200);
    expect(list.json().items.map((i: { id: string }) => i.id)).toEqual([mine]);
    expect(Object.keys(list.json().items[0]).sort()).toEqual(["createdAt", "endpoint", "id"]);

    const refused = await h.api.app.inject({ remoteAddress: freshIp(), method: "DELETE", url: `/v1/me/push-subscriptions/${theirs}`, headers: as("push-lister") });
    expect(refused.statusCode).toBe(404);
    expect(await rowsOf("push-other")).toHaveLength(1);

    const deleted = await h.api.app.inject({ remoteAddress: freshIp(), method: "DELETE", url: `/v1/me/push-subscriptions/${mine}`, headers: as("push-lister") });
    expect(deleted.statusCode).toBe(204);
    expect(await rowsOf("push-lister")).toEqual([]);
  });
});

describe("pushKinds in the notification preferences", () => {
  it("is null (every kind) until chosen, and a PUT of pushKinds alone keeps emailKinds", async () => {
    const url = "/v1/me/notification-preferences";
    const before = await h.api.app.inject({ remoteAddress: freshIp(), method: "GET", url, headers: as("push-prefs") });
    expect(before.json()).toMatchObject({ pushKinds: null });

    await h.api.app.inject({ remoteAddress: freshIp(), method: "PUT", url, headers: as("push-prefs"), payload: { emailKinds: ["match"] } });
    const put = await h.api.app.inject({ remoteAddress: freshIp(), method: "PUT", url, headers: as("push-prefs"), payload: { pushKinds: ["match", "sighting"] } });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toMatchObject({ emailKinds: ["match"], pushKinds: ["match", "sighting"] });

    const back = await h.api.app.inject({ remoteAddress: freshIp(), method: "PUT", url, headers: as("push-prefs"), payload: { pushKinds: null } });
    expect(back.json()).toMatchObject({ emailKinds: ["match"], pushKinds: null });

    const bad = await h.api.app.inject({ remoteAddress: freshIp(), method: "PUT", url, headers: as("push-prefs"), payload: { pushKinds: ["carrier_pigeon"] } });
    expect(bad.statusCode).toBe(400);
  });
});

describe("GET /sw.js", () => {
  it("is a service worker for scope / that shows a push and opens its url on click", async () => {
    const res = await h.api.app.inject({ remoteAddress: freshIp(), method: "GET", url: "/sw.js" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/javascript/);
    expect(res.headers["service-worker-allowed"]).toBe("/");
    expect(res.body).toContain('addEventListener("push"');
    expect(res.body).toContain("showNotification");
    expect(res.body).toContain("openWindow");
  });
});

describe("an endpoint's host name outside development (lib/push.ts endpointProblem)", () => {
  const resolvingTo = (address: string) => async () => [{ address, family: (address.includes(":") ? 6 : 4) as 4 | 6 }];
  const check = (address: string) => ({ allowHosts: [], resolveNames: true, resolve: resolvingTo(address) });

  it.each(["127.0.0.1", "10.0.0.7", "192.168.1.20", "169.254.169.254", "::1", "fd00:ec2::254", "::ffff:127.0.0.1"])(
    "is refused when the name resolves to %s, as a partner photo URL is",
    async (address) => {
      const problem = await endpointProblem("https://push.example.net/send/1", check(address));
      // What the 400 says: that it is refused, never which address the name resolved to.
      expect(problem).toBe("refused address: its host resolves to a private, loopback, link-local or reserved address");
      expect(problem).not.toContain(address);
    },
  );

  it("is taken when it resolves to a public address, and refused when it does not resolve", async () => {
    expect(await endpointProblem("https://push.example.net/send/1", check("142.250.74.9"))).toBeNull();
    const failing = { allowHosts: [], resolveNames: true, resolve: async () => Promise.reject(new Error("ENOTFOUND")) };
    expect(await endpointProblem("https://nowhere.invalid/send/1", failing)).toBe("its host does not resolve");
  });
});
