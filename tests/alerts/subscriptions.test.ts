import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUnsubscribeToken } from "../../lib/alert-unsubscribe.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, expectProblem, freshActor } from "../safety/helpers.js";

/** POST/GET/DELETE /v1/me/alert-subscriptions and the one-click unsubscribe (contract part 2, "Alert subscriptions"). */
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const HOME = { lat: 48.853412, lon: 2.348761 };

const create = (actor: string, payload: Record<string, unknown> = { location: HOME, radiusKm: 2 }) =>
  call(h.api, { method: "POST", url: "/v1/me/alert-subscriptions", headers: as(actor), payload });
const list = (actor: string) => call(h.api, { url: "/v1/me/alert-subscriptions", headers: as(actor) });
const remove = (actor: string, id: string) => call(h.api, { method: "DELETE", url: `/v1/me/alert-subscriptions/${id}`, headers: as(actor) });
const unsubscribe = (token: string, payload?: string) =>
  call(h.api, {
    method: "POST",
    url: `/v1/alert-subscriptions/unsubscribe?token=${encodeURIComponent(token)}`,
    ...(payload === undefined ? {} : { payload, headers: { "content-type": "application/x-www-form-urlencoded" } }),
  });
const token = (ids: string[]) => signUnsubscribeToken(h.api.config.ALERT_UNSUBSCRIBE_SECRET, ids);

describe("an actor subscribes to an area, lists and deletes", () => {
  it("creates (201 with a Location), lists its own with the precise point, deletes (204)", async () => {
    const me = freshActor("sub");
    const res = await create(me, { location: HOME, radiusKm: 2.5, species: ["dog", "cat"] });
    expect(res.statusCode, res.body).toBe(201);
    const { id } = res.json();
    expect(res.headers.location).toBe(`/v1/me/alert-subscriptions/${id}`);

    const listed = await list(me);
    expect(listed.statusCode).toBe(200);
    expect(listed.json()).toEqual({
      items: [{ id, location: HOME, radiusKm: 2.5, species: ["dog", "cat"], createdAt: expect.any(String) }],
      nextCursor: null,
    });

    expect((await remove(me, id)).statusCode).toBe(204);
    expect((await list(me)).json().items).toEqual([]);
    expectProblem(await remove(me, id), 404, "not-found");
  });

  it("leaves species out as null: every species", async () => {
    const me = freshActor("sub");
    expect((await create(me)).statusCode).toBe(201);
    expect((await list(me)).json().items[0].species).toBeNull();
  });

  it("pages the listing newest first", async () => {
    const me = freshActor("sub");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await create(me, { location: HOME, radiusKm: 1 + i })).json().id);
    const first = await call(h.api, { url: "/v1/me/alert-subscriptions?limit=2", headers: as(me) });
    expect(first.json().items.map((s: { id: string }) => s.id)).toEqual([ids[2], ids[1]]);
    const next = await call(h.api, { url: `/v1/me/alert-subscriptions?limit=2&cursor=${first.json().nextCursor}`, headers: as(me) });
    expect(next.json()).toEqual({ items: [expect.objectContaining({ id: ids[0] })], nextCursor: null });
  });
});

describe("a subscription's location is private", () => {
  it("appears in no one else's listing, and another actor cannot delete it (404)", async () => {
    const owner = freshActor("owner");
    const other = freshActor("other");
    const { id } = (await create(owner)).json();
    const theirs = await list(other);
    expect(theirs.json().items).toEqual([]);
    expect(theirs.body).not.toContain(String(HOME.lat));
    expectProblem(await remove(other, id), 404, "not-found");
    expect((await list(owner)).json().items).toHaveLength(1);
  });

  it("needs a credential to list or create", async () => {
    expectProblem(await call(h.api, { url: "/v1/me/alert-subscriptions" }), 401, "unauthenticated");
    expectProblem(await call(h.api, { method: "POST", url: "/v1/me/alert-subscriptions", payload: { location: HOME, radiusKm: 1 } }), 401, "unauthenticated");
  });
});

describe("limits", () => {
  it.each([
    ["a radius of 0", { location: HOME, radiusKm: 0 }],
    ["a radius under 0.5 km", { location: HOME, radiusKm: 0.49 }],
    ["a radius of 10,000 km", { location: HOME, radiusKm: 10_000 }],
    ["a point at lat 91", { location: { lat: 91, lon: -30 }, radiusKm: 5 }],
    ["a point at lon 181", { location: { lat: 10, lon: 181 }, radiusKm: 5 }],
    ["a species twice", { location: HOME, radiusKm: 5, species: ["dog", "dog"] }],
    ["an empty species list", { location: HOME, radiusKm: 5, species: [] }],
    ["an unknown species", { location: HOME, radiusKm: 5, species: ["dragon"] }],
    ["no radius", { location: HOME }],
  ])("refuses %s with 400 validation-failed and writes nothing", async (_name, payload) => {
    const me = freshActor("bad");
    expectProblem(await create(me, payload), 400, "validation-failed");
    expect(await count(h.db, `select 1 from alert_subscription where actor_id = $1`, [me])).toBe(0);
  });

  it("accepts the bounds themselves: 0.5 and 50 km, the poles and the antimeridian", async () => {
    const me = freshActor("edge");
    expect((await create(me, { location: { lat: 90, lon: 180 }, radiusKm: 0.5 })).statusCode).toBe(201);
    expect((await create(me, { location: { lat: -90, lon: -180 }, radiusKm: 50 })).statusCode).toBe(201);
  });

  it("allows 5 subscriptions at once; a 6th is 409 conflict and costs no creation token", async () => {
    const me = freshActor("many");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await create(me, { location: HOME, radiusKm: 1 + i });
      expect(res.statusCode, res.body).toBe(201);
      ids.push(res.json().id);
    }
    for (let i = 0; i < 3; i++) expectProblem(await create(me), 409, "conflict");
    // The refused ones gave their tokens back: 10 per hour, 5 spent.
    const { rows } = await h.db.pool.query(`select tokens from rate_limit_bucket where key = $1`, [`alert-subscription-create:${me}`]);
    expect(rows[0].tokens).toBeGreaterThan(4.9);
    expect(rows[0].tokens).toBeLessThan(5.1);
    expect((await remove(me, ids[0]!)).statusCode).toBe(204);
    expect((await create(me)).statusCode).toBe(201);
  });

  it("holds the 5 under concurrent creates", async () => {
    const me = freshActor("racer");
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => create(me, { location: HOME, radiusKm: 1 + i })));
    expect(results.filter((r) => r.statusCode === 201)).toHaveLength(5);
    expect(results.filter((r) => r.statusCode === 409)).toHaveLength(3);
    expect(await count(h.db, `select 1 from alert_subscription where actor_id = $1`, [me])).toBe(5);
  });

  it("rate-limits creation to 10 an hour per actor (429 with Retry-After), in Postgres", async () => {
    const me = freshActor("churn");
    for (let i = 0; i < 10; i++) {
      const res = await create(me);
      expect(res.statusCode, `create ${i + 1}: ${res.body}`).toBe(201);
      expect((await remove(me, res.json().id)).statusCode).toBe(204);
    }
    const refused = await create(me);
    expectProblem(refused, 429, "rate-limited");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    expect(await count(h.db, `select 1 from alert_subscription where actor_id = $1`, [me])).toBe(0);
    // Another actor is not affected.
    expect((await create(freshActor("calm"))).statusCode).toBe(201);
  });
});

describe("POST /v1/alert-subscriptions/unsubscribe: one click, no login", () => {
  it("deletes the subscription its token names, with the RFC 8058 form body, and answers 200 again once it is gone", async () => {
    const me = freshActor("mail");
    const { id } = (await create(me)).json();
    const { id: kept } = (await create(me, { location: HOME, radiusKm: 7 })).json();
    const first = await unsubscribe(token([id]), "List-Unsubscribe=One-Click");
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toEqual({ unsubscribed: true });
    expect((await list(me)).json().items.map((s: { id: string }) => s.id)).toEqual([kept]);
    const again = await unsubscribe(token([id]), "List-Unsubscribe=One-Click");
    expect(again.statusCode).toBe(200);
    // Without a body too (some clients send none), and as multipart/form-data (RFC 8058 allows either form encoding).
    expect((await unsubscribe(token([id]))).statusCode).toBe(200);
    const multipart = await call(h.api, {
      method: "POST",
      url: `/v1/alert-subscriptions/unsubscribe?token=${token([id])}`,
      headers: { "content-type": "multipart/form-data; boundary=x" },
      payload: '--x\r\ncontent-disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--x--\r\n',
    });
    expect(multipart.statusCode, multipart.body).toBe(200);
    expect((await list(me)).json().items).toHaveLength(1);
  });

  it("deletes every subscription a digest's token names, and nothing else", async () => {
    const me = freshActor("digest");
    const a = (await create(me)).json().id;
    const b = (await create(me, { location: HOME, radiusKm: 3 })).json().id;
    const c = (await create(me, { location: HOME, radiusKm: 4 })).json().id;
    expect((await unsubscribe(token([a, b]))).statusCode).toBe(200);
    expect((await list(me)).json().items.map((s: { id: string }) => s.id)).toEqual([c]);
  });

  it("refuses a token that is forged, tampered with, signed with another secret or malformed: 400, nothing deleted", async () => {
    const me = freshActor("victim");
    const { id } = (await create(me)).json();
    const good = token([id]);
    const bytes = Buffer.from(good, "base64url");
    const flipped = Buffer.from(bytes);
    flipped[5] = flipped[5]! ^ 1; // another subscription id under the same signature
    const forgedMac = Buffer.from(bytes);
    forgedMac[bytes.length - 1] = forgedMac[bytes.length - 1]! ^ 1;
    const bad = [
      flipped.toString("base64url"),
      forgedMac.toString("base64url"),
      signUnsubscribeToken("another-secret-of-at-least-32-characters", [id]),
      good.slice(0, -2),
      `${good}AA`,
      "not a token",
      id,
    ];
    for (const value of bad) {
      const res = await unsubscribe(value, "List-Unsubscribe=One-Click");
      expectProblem(res, 400, "validation-failed");
    }
    expectProblem(await call(h.api, { method: "POST", url: "/v1/alert-subscriptions/unsubscribe" }), 400, "validation-failed");
    expect((await list(me)).json().items).toHaveLength(1);
  });
});
