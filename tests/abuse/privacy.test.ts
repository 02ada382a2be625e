import Fastify from "fastify";
import { beforeAll, describe, expect, it } from "vitest";
import { createAuthenticator, PLATFORM_ADMIN, registerAuth } from "../../api/plugins/auth.js";
import { getExpectedTwilioSignature } from "twilio/lib/webhooks/webhooks.js";
import { signUnsubscribeToken } from "../../lib/alert-unsubscribe.js";
import { hashToken, newToken } from "../../lib/secret-token.js";
import { DEVELOPMENT_UNSUBSCRIBE_SECRET, loadApiConfig } from "../../lib/config.js";
import { coarsen, COARSE_PRECISION_METERS } from "../../lib/geo.js";
import { as, devEnv } from "../helpers/app.js";
import { checkPublicResponses, PrivacyRules, privacyStats, takePrivacyViolations } from "../helpers/privacy.js";
import { CONTACT, MICROCHIPS, OTHER, OWNER, PRECISE, seedWorld, useAbuseHarness, VERIFICATION_DETAIL, type World } from "./harness.js";

/** The SMS provider's webhooks answer only requests signed with this token (tests/sms/webhooks.test.ts tests the signatures). */
const SMS_TOKEN = "privacy-sms-auth-token";
const h = useAbuseHarness({ extra: { SMS_AUTH_TOKEN: SMS_TOKEN } });
let world: World;

beforeAll(async () => {
  world = await seedWorld(h);
});

const viewers: [string, Record<string, string>][] = [
  ["anonymous", {}],
  ["another actor", as(OTHER)],
  ["the reporter", as(OWNER)],
  ["an admin", as("privacy-admin", [PLATFORM_ADMIN])],
];

/** Rules seeded the way the harness seeds them, independent of this file's traffic. */
function seededRules(): PrivacyRules {
  const rules = new PrivacyRules().point(PRECISE).actor(OWNER).actor(OTHER);
  for (const secret of [VERIFICATION_DETAIL, CONTACT, ...MICROCHIPS]) rules.text(secret);
  return rules;
}

const coarseView = (point: { lat: number; lon: number }) => ({ ...coarsen(point), precisionMeters: COARSE_PRECISION_METERS });
const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

describe("the privacy checker catches what a public response must not carry", () => {
  const leaks: [string, unknown, string][] = [
    ["a precise {lat, lon}", { location: PRECISE }, "precise point"],
    ["latitude/longitude keys", { where: { latitude: PRECISE.lat, longitude: PRECISE.lon } }, "precise point"],
    ["coordinates as strings", { location: { lat: String(PRECISE.lat), lng: String(PRECISE.lon) } }, "precise point"],
    ["a lone latitude", { latitude: PRECISE.lat }, "lone coordinate"],
    ["a GeoJSON [lon, lat] position", { geometry: { type: "Point", coordinates: [PRECISE.lon, PRECISE.lat] } }, "GeoJSON position"],
    ["a seeded coordinate as a bare number", { distanceKm: 0.4, y: PRECISE.lat }, `seeded coordinate ${PRECISE.lat}`],
    ["a seeded coordinate rounded to 4 decimals", { x: 2.3522 }, `seeded coordinate ${PRECISE.lon}`],
    ["a seeded coordinate in text", { note: `found at ${PRECISE.lat}, ${PRECISE.lon}` }, `seeded coordinate ${PRECISE.lat} in text`],
    ["a seeded coordinate truncated in text", { note: "near 48.8566 N" }, `seeded coordinate ${PRECISE.lat} in text`],
    ["a WKT point", { where: `POINT(${PRECISE.lon} ${PRECISE.lat})` }, "WKT point"],
    ["an EWKT point, even rounded", { where: "SRID=4326;POINT(2.35 48.86)" }, "WKT point"],
    ["a reporterId field", { reporterId: "someone" }, "reporterId: private field"],
    ["the reporter's id under an innocent key", { by: OWNER }, `actor id "${OWNER}"`],
    ["the reporter's id inside text", { note: `reported by ${OWNER} yesterday` }, `actor id "${OWNER}"`],
    ["a fromContact field", { fromContact: "x" }, "fromContact: private field"],
    ["seeded contact data inside text", { note: `contact: ${CONTACT}` }, "private value"],
    ["an email address", { note: "mail a@b.example" }, "an email address"],
    ["a phone number", { note: "ring +33 6 12 34 56 78" }, "a phone number"],
    ["an email field, even empty", { email: null }, "email: private field"],
    ["a phone field", { owner: { phone: "n/a" } }, "phone: private field"],
    ["a verificationDetail field", { verificationDetail: "x" }, "verificationDetail: private field"],
    ["the verification detail inside text", { description: `Known: ${VERIFICATION_DETAIL}` }, "private value"],
    ["a microchipId field", { animal: { microchipId: "x" } }, "microchipId: private field"],
    ["a seeded microchip id inside text", { description: `chip ${MICROCHIPS[0]}` }, "private value"],
    ["a precise point inside an opaque cursor", { items: [], nextCursor: cursorOf({ lat: PRECISE.lat, lon: PRECISE.lon }) }, "nextCursor(decoded): precise point"],
    ["a reporter id inside an opaque cursor", { items: [], nextCursor: cursorOf({ r: OWNER }) }, `actor id "${OWNER}"`],
  ];

  it.each(leaks)("flags %s", (_name, body, expected) => {
    expect(seededRules().violations(body).join("\n")).toContain(expected);
  });

  it("passes coarse views: cell centres as pairs, strings or GeoJSON, distances, ids, timestamps", () => {
    const coarse = coarseView(PRECISE);
    const views = [
      { id: world.lostReportId, location: coarse, createdAt: "2025-11-20T08:00:00.000Z", animal: { name: "Rex", colors: ["brown"] } },
      { items: [{ id: world.foundReportId, kind: "lost", location: coarse, distanceKm: 0.4 }], nextCursor: cursorOf({ d: 412.5, id: world.lostReportId }) },
      { location: { lat: coarse.lat.toFixed(6), lon: String(coarse.lon) } },
      { geometry: { type: "Point", coordinates: [coarse.lon, coarse.lat] } },
      { name: "Rex", species: "dog", medicalNotes: "diabetic", instructions: "call the vet" },
    ];
    for (const view of views) expect(seededRules().violations(view), JSON.stringify(view)).toEqual([]);
  });

  it("never flags the coarse cell centre of a seeded precise point, however close the point is to it (5,000 random points)", () => {
    let seed = 42;
    const random = () => (seed = (seed * 16_807) % 2_147_483_647) / 2_147_483_647;
    let flaggedPrecise = 0;
    for (let i = 0; i < 5_000; i++) {
      const precise = { lat: Number((random() * 170 - 85).toFixed(6)), lon: Number((random() * 360 - 180).toFixed(6)) };
      // Every 10th point sits within a metre of its cell centre.
      const point = i % 10 === 0 ? { lat: coarsen(precise).lat + 0.000004, lon: coarsen(precise).lon - 0.000003 } : precise;
      const rules = new PrivacyRules().point(point);
      const coarse = coarseView(point);
      const views = [{ location: coarse }, { coordinates: [coarse.lon, coarse.lat] }, { location: { lat: String(coarse.lat), lon: String(coarse.lon) } }];
      for (const view of views) expect(rules.violations(view), `${JSON.stringify(point)} → ${JSON.stringify(view)}`).toEqual([]);
      if (rules.violations({ location: point }).length > 0) flaggedPrecise++;
    }
    // The same rules do see each precise point (a point exactly on its cell centre would be public by design).
    console.log(`privacy self-test: 5000 coarse views passed; ${flaggedPrecise} of 5000 precise points flagged`);
    expect(flaggedPrecise).toBe(5_000);
  });

  it("learns from a successful write what its public responses must not repeat, but not what the writer published", () => {
    const rules = new PrivacyRules();
    rules.learn({ location: { lat: 45.123456, lon: 5.654321 }, fromContact: "jane@example.org", microchipId: "CHIP-77777", description: "CHIP-55555" }, "writer-77");
    rules.learn({ animal: { name: "sam@home", microchipId: "sam@home" } }, null);
    expect(rules.violations({ a: 45.123456, b: "near 5.6543", c: "writer-77", d: "by writer-77.", e: "CHIP-77777" })).toHaveLength(5);
    // Sent in a public field too (description, name): the writer published it, so it is no secret.
    expect(rules.violations({ description: "CHIP-55555", name: "sam@home" })).toEqual([]);
  });
});

describe("the privacy hook on a real Fastify app with the real auth gate", () => {
  it("records a leak on a public route and on an anonymous response, not on an actor's private view", async () => {
    expect(privacyStats.setupInstalled, "tests/setup/each-file.ts is a setup file of this config").toBe(true);
    const app = Fastify();
    app.addHook("onRoute", checkPublicResponses);
    registerAuth(app, createAuthenticator(loadApiConfig(devEnv(h.db.url, h.bus.url))), h.pool);
    app.get("/leaky", { config: { auth: "public" } }, async () => ({ location: PRECISE, reporterId: OWNER }));
    app.get("/mine", { config: { auth: "actor" } }, async () => ({ location: PRECISE, reporterId: OWNER }));
    app.post("/write", { config: { auth: "actor" } }, async (_request, reply) => reply.code(201).send({ ok: true }));
    app.get("/echo", { config: { auth: "public" } }, async () => ({ note: "seen at 12.345678, 6.543219" }));
    await app.ready();
    try {
      takePrivacyViolations();
      expect((await app.inject({ url: "/leaky" })).statusCode).toBe(200);
      expect((await app.inject({ url: "/leaky", headers: as(OTHER) })).statusCode).toBe(200);
      const onPublic = takePrivacyViolations();
      expect(onPublic.filter((v) => v.includes("precise point"))).toHaveLength(2);
      expect(onPublic.filter((v) => v.includes("reporterId: private field"))).toHaveLength(2);

      expect((await app.inject({ url: "/mine", headers: as(OWNER) })).statusCode).toBe(200);
      expect((await app.inject({ url: "/mine" })).statusCode).toBe(401);
      expect(takePrivacyViolations()).toEqual([]);

      const write = await app.inject({ method: "POST", url: "/write", headers: as("hook-writer"), payload: { location: { lat: 12.345678, lon: 6.543219 } } });
      expect(write.statusCode).toBe(201);
      expect((await app.inject({ url: "/echo" })).statusCode).toBe(200);
      expect(takePrivacyViolations().join("\n")).toContain("seeded coordinate 12.345678 in text");
    } finally {
      await app.close();
    }
  });
});

describe("no public response carries a precise location, a reporter id, contact data or owner-only details", () => {
  it("walks a realistic scenario through every public route, as every kind of viewer", async () => {
    // A second sighting, so the listing pages and hands out a cursor.
    const second = await h.call({
      method: "POST",
      url: "/v1/safety/sightings",
      headers: as("spotter-2"),
      payload: { lostReportId: world.lostReportId, location: { lat: 48.858011, lon: 2.351234 }, seenAt: "2025-11-20T11:00:00Z", note: "by the river" },
    });
    expect(second.statusCode).toBe(201);

    // A shelter nearby, whose public contact GET /v1/safety/shelters lists (public by design).
    const shelter = await h.call({
      method: "POST",
      url: "/v1/admin/partners",
      headers: as("privacy-admin", [PLATFORM_ADMIN]),
      payload: {
        name: "Refuge Privacy",
        kind: "shelter",
        location: { lat: 48.861234, lon: 2.349876 },
        publicContact: { phone: "+33 1 40 00 00 00", email: "accueil@refuge.example" },
        loginEmail: "privacy-shelter@refuge.example",
      },
    });
    expect(shelter.statusCode, shelter.body).toBe(201);

    const near = `lat=${PRECISE.lat}&lon=${PRECISE.lon}`;
    for (const [viewer, headers] of viewers) {
      const reads = [
        `/v1/safety/lost-reports/${world.lostReportId}`,
        `/v1/safety/found-reports/${world.foundReportId}`,
        `/v1/safety/alerts?${near}`,
        `/v1/safety/alerts?${near}&kind=lost&radiusKm=1`,
        `/v1/safety/alerts?${near}&kind=found&species=cat`,
        `/v1/safety/alerts?${near}&limit=1`,
        `/v1/safety/shelters?${near}`,
        `/v1/safety/shelters?${near}&radiusKm=100&limit=1`,
        `/v1/safety/lost-reports/${world.lostReportId}/sightings`,
        `/v1/safety/lost-reports/${world.lostReportId}/sightings?limit=1`,
        `/emergency/${world.token}`,
        `/v1/photos/${world.photoId}/thumb`,
        `/v1/photos/${world.photoId}/display`,
      ];
      for (const url of reads) {
        const res = await h.call({ url, headers });
        expect(res.statusCode, `${viewer} ${url}`).toBe(200);
      }
      const relay = await h.call({
        method: "POST",
        url: `/v1/safety/lost-reports/${world.lostReportId}/relay-message`,
        headers,
        payload: { message: "Is this your dog?", fromContact: CONTACT },
      });
      expect(relay.statusCode, viewer).toBe(202);
      const toFinder = await h.call({
        method: "POST",
        url: `/v1/safety/found-reports/${world.foundReportId}/relay-message`,
        headers,
        payload: { message: "Is this my cat?", fromContact: CONTACT },
      });
      expect(toFinder.statusCode, viewer).toBe(202);
    }

    // The alerts pages really did go on, so the cursors were checked too.
    const paged = await h.call({ url: `/v1/safety/alerts?${near}&limit=1` });
    expect(paged.json().nextCursor).toEqual(expect.any(String));
    const next = await h.call({ url: `/v1/safety/alerts?${near}&limit=1&cursor=${paged.json().nextCursor}` });
    expect(next.statusCode).toBe(200);
  });

  it("answers the one-click unsubscribe of an alert email with nothing about the subscription, as every kind of viewer", async () => {
    const subscriber = "alert-subscriber-7";
    const created = await h.call({
      method: "POST",
      url: "/v1/me/alert-subscriptions",
      headers: as(subscriber),
      payload: { location: { lat: 48.857891, lon: 2.351987 }, radiusKm: 4 },
    });
    expect(created.statusCode).toBe(201);
    // The abuse harness runs development settings: the development secret signs.
    const token = signUnsubscribeToken(DEVELOPMENT_UNSUBSCRIBE_SECRET, [created.json().id]);
    for (const [viewer, headers] of viewers) {
      const res = await h.call({
        method: "POST",
        url: `/v1/alert-subscriptions/unsubscribe?token=${token}`,
        headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
        payload: "List-Unsubscribe=One-Click",
      });
      expect(res.statusCode, `${viewer} ${res.body}`).toBe(200);
      expect(res.json()).toEqual({ unsubscribed: true });
    }
  });

  it("answers a followed email confirmation link with nothing about the address or the actor, as every kind of viewer", async () => {
    for (const [viewer, headers] of viewers) {
      // The link a delivery would have emailed: only the token's hash is stored, as the notifier stores it.
      const token = newToken();
      const owner = `confirming-${viewer}`;
      await h.pool.query(
        `insert into email_confirmation (actor_id, email, token_hash, expires_at) values ($1, $2, $3, now() + interval '1 day')`,
        [owner, `${owner}@example.org`, hashToken(token)],
      );
      const res = await h.call({ url: `/v1/me/email/confirm?token=${token}`, headers });
      expect(res.statusCode, `${viewer} ${res.body}`).toBe(200);
      expect(res.body).not.toContain(owner);
    }
  });

  it("keeps the tag page, a page rather than API (hidden from the document), as clean as the API's public reads", async () => {
    for (const [viewer, headers] of viewers) {
      const page = await h.call({ url: `/t/${world.token}`, headers: { ...headers, accept: "text/html" } });
      expect(page.statusCode, viewer).toBe(200);
      expect(seededRules().violations(page.body), viewer).toEqual([]);
      const thanks = await h.call({
        method: "POST",
        url: `/t/${world.token}/message`,
        headers: { ...headers, accept: "text/html", "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ message: "Is this your dog?", fromContact: CONTACT, lat: String(PRECISE.lat), lon: String(PRECISE.lon) }).toString(),
      });
      expect(thanks.statusCode, viewer).toBe(200);
      expect(seededRules().violations(thanks.body), viewer).toEqual([]);
    }
  });

  it("keeps the share pages, their forms' answers and the short link as clean as the API's public reads", async () => {
    for (const [viewer, headers] of viewers) {
      for (const url of [`/lost/${world.lostReportId}`, `/found/${world.foundReportId}`, `/s/${world.lostShortCode}`]) {
        const page = await h.call({ url, headers: { ...headers, accept: "text/html" } });
        expect(page.statusCode, `${viewer} ${url}`).toBeLessThan(400);
        expect(seededRules().violations(page.body), `${viewer} ${url}`).toEqual([]);
        expect(seededRules().violations(String(page.headers.location ?? "")), viewer).toEqual([]);
      }
      const posts: [string, Record<string, string>][] = [
        [`/lost/${world.lostReportId}/sighting`, { note: "Running north", lat: String(PRECISE.lat), lon: String(PRECISE.lon) }],
        [`/lost/${world.lostReportId}/message`, { message: "Is this your dog?", fromContact: CONTACT, lat: String(PRECISE.lat), lon: String(PRECISE.lon) }],
        [`/found/${world.foundReportId}/message`, { message: "Is this my cat?", fromContact: CONTACT }],
      ];
      for (const [url, fields] of posts) {
        const res = await h.call({
          method: "POST",
          url,
          headers: { ...headers, accept: "text/html", "content-type": "application/x-www-form-urlencoded" },
          payload: new URLSearchParams(fields).toString(),
        });
        expect(res.statusCode, `${viewer} ${url} ${res.body.slice(0, 200)}`).toBe(200);
        expect(seededRules().violations(res.body), `${viewer} ${url}`).toEqual([]);
      }
    }
  });

  it("answers the SMS provider's signed webhooks with nothing about the number or the actor, as every kind of viewer", async () => {
    // A verified owner's number: the answer to its texts must not carry it, nor the owner's id.
    const phone = "+4917612399001";
    await h.pool.query(`insert into notification_preference (actor_id, phone) values ($1, $2) on conflict (actor_id) do update set phone = $2`, [OWNER, phone]);
    const rules = seededRules().text(phone).text("17612399001");
    let n = 0;
    for (const [viewer, headers] of viewers) {
      const sid = `SMprivacy${++n}`;
      const posts: [string, Record<string, string>][] = [
        ["/v1/sms/inbound", { MessageSid: sid, From: phone, To: "+4915112340000", Body: "HELP" }],
        ["/v1/sms/status", { MessageSid: sid, MessageStatus: "delivered", To: phone }],
      ];
      for (const [url, params] of posts) {
        // The harness runs development settings: PUBLIC_BASE_URL is API_PUBLIC_BASE_URL's default.
        const signature = getExpectedTwilioSignature(SMS_TOKEN, `http://localhost:8080${url}`, params);
        const res = await h.call({
          method: "POST",
          url,
          headers: { ...headers, "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature },
          payload: new URLSearchParams(params).toString(),
        });
        expect(res.statusCode, `${viewer} ${url} ${res.body}`).toBeLessThan(300);
        expect(rules.violations(res.body), `${viewer} ${url}`).toEqual([]);
      }
    }
  });

  it("serves the push public key and the service worker with nothing about anyone, as every kind of viewer", async () => {
    for (const [viewer, headers] of viewers) {
      const key = await h.call({ url: "/v1/push/public-key", headers });
      expect(key.statusCode, viewer).toBe(200);
      expect(Object.keys(key.json()), viewer).toEqual(["publicKey"]);
      const worker = await h.call({ url: "/sw.js", headers });
      expect(worker.statusCode, viewer).toBe(200);
      expect(seededRules().violations(worker.body), viewer).toEqual([]);
    }
  });

  it("covered every public API route with a successful response", () => {
    const publicRoutes = h.routes
      .filter((r) => r.auth === "public" && !r.hidden && r.method !== "HEAD")
      .map((r) => `${r.method} ${r.url}`);
    expect(publicRoutes.length).toBeGreaterThanOrEqual(6);
    const unexercised = publicRoutes.filter((key) => !(h.publicResponses.get(key) ?? []).some((status) => status < 300));
    console.log(
      `privacy: ${[...h.publicResponses.values()].reduce((n, s) => n + s.length, 0)} responses over ${publicRoutes.length} public routes; ` +
        `${privacyStats.checked} public or anonymous responses checked in this file`,
    );
    expect(unexercised).toEqual([]);
  });
});
