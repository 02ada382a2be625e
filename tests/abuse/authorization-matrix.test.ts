import { existsSync } from "node:fs";
import { join } from "node:path";
import type { InjectOptions } from "fastify";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleBundleDir } from "../../api/console/routes.js";
import { appBundleDir } from "../../api/people-app/routes.js";
import { PLATFORM_ADMIN, type RouteAuth } from "../../api/plugins/auth.js";
import { as } from "../helpers/app.js";
import { fillPath, OTHER, OWNER, photoUpload, seedWorld, slugOf, useAbuseHarness, type RegisteredRoute, type World } from "./harness.js";
import { exampleFor, operationsOf, type Operation } from "./openapi.js";

const h = useAbuseHarness();
let world: World;
let operations: Operation[];
let upload: Awaited<ReturnType<typeof photoUpload>>;

const SUSPENDED_ADMIN = "suspended-admin-1";

beforeAll(async () => {
  world = await seedWorld(h);
  operations = operationsOf((await h.call({ url: "/openapi.json" })).json());
  upload = await photoUpload();
  const suspend = await h.call({
    method: "POST",
    url: `/v1/admin/accounts/${SUSPENDED_ADMIN}/suspend`,
    headers: as("matrix-admin", [PLATFORM_ADMIN]),
    payload: { reasonCode: "compromised", reasonDetail: "credentials leaked" },
  });
  expect(suspend.statusCode).toBe(200);
});

type Caller = "anonymous" | "actor" | "other actor" | "admin" | "suspended admin";

const callers: [Caller, Record<string, string>][] = [
  ["anonymous", {}],
  // "actor" owns every seeded row; "other actor" owns none.
  ["actor", as(OWNER)],
  ["other actor", as(OTHER)],
  ["admin", as("matrix-admin", [PLATFORM_ADMIN])],
  ["suspended admin", as(SUSPENDED_ADMIN, [PLATFORM_ADMIN])],
];

/** What a caller gets: let through ("ok": 2xx, or the docs' 3xx redirect), or refused with this status and problem slug. */
type Expected = "ok" | { status: number; slug: string };
const unauthenticated = { status: 401, slug: "unauthenticated" };
const forbidden = { status: 403, slug: "forbidden" };
const suspended = { status: 403, slug: "account-suspended" };

/** From the route's gate alone. A route without a declared gate has no expectation, and fails the matrix. */
const byGate: Record<RouteAuth, Record<Caller, Expected>> = {
  public: { anonymous: "ok", actor: "ok", "other actor": "ok", admin: "ok", "suspended admin": suspended },
  actor: { anonymous: unauthenticated, actor: "ok", "other actor": "ok", admin: "ok", "suspended admin": suspended },
  admin: { anonymous: unauthenticated, actor: forbidden, "other actor": forbidden, admin: "ok", "suspended admin": suspended },
  // The partner API (/partners) takes its own integration key and tokens, which no caller here has: 401 before anything else.
  // Its keys, tokens, suspension and ownership are tested in tests/partners/.
  partner: { anonymous: unauthenticated, actor: unauthenticated, "other actor": unauthenticated, admin: unauthenticated, "suspended admin": unauthenticated },
};

/** Routes only a row's owner may use (the gate lets any actor in; the handler checks ownership). */
const ownerOnly: Record<string, Partial<Record<Caller, Expected>>> = {
  "GET /v1/safety/lost-reports/:id/private": { "other actor": forbidden },
  "POST /v1/safety/lost-reports/:id/resolve": { "other actor": forbidden, admin: forbidden },
  "POST /v1/safety/found-reports/:id/resolve": { "other actor": forbidden, admin: forbidden },
  "GET /v1/animals/:id": { "other actor": forbidden, admin: forbidden },
  "PUT /v1/animals/:id/emergency-profile": { "other actor": forbidden, admin: forbidden },
  "GET /v1/safety/lost-reports/:id/matches": { "other actor": forbidden },
  "GET /v1/safety/found-reports/:id/matches": { "other actor": forbidden },
  "POST /v1/safety/matches/:id/confirm": { "other actor": forbidden, admin: forbidden },
  "POST /v1/safety/matches/:id/dismiss": { "other actor": forbidden, admin: forbidden },
  "PATCH /v1/safety/lost-reports/:id": { "other actor": forbidden, admin: forbidden },
  "PATCH /v1/safety/found-reports/:id": { "other actor": forbidden, admin: forbidden },
  "POST /v1/safety/lost-reports/:id/renew": { "other actor": forbidden, admin: forbidden },
  "POST /v1/safety/found-reports/:id/renew": { "other actor": forbidden, admin: forbidden },
  "POST /v1/animals/:id/lost": { "other actor": forbidden, admin: forbidden },
  "GET /v1/animals/:id/scans": { "other actor": forbidden, admin: forbidden },
  // Photos: the reporter or owner uploads (admins too are refused); the uploader or an admin sees the status and deletes.
  "POST /v1/safety/lost-reports/:id/photos": { "other actor": forbidden, admin: forbidden },
  "POST /v1/safety/found-reports/:id/photos": { "other actor": forbidden, admin: forbidden },
  "POST /v1/animals/:id/photos": { "other actor": forbidden, admin: forbidden },
  "GET /v1/photos/:photoId": { "other actor": forbidden },
  "DELETE /v1/photos/:photoId": { "other actor": forbidden },
  // Another actor's notification is 404 (contract): its existence is not revealed.
  "POST /v1/me/notifications/:id/read": { "other actor": { status: 404, slug: "not-found" }, admin: { status: 404, slug: "not-found" } },
  // The same for an alert subscription; the owner's DELETE comes first in each walk, so the others would get 404 either way.
  "DELETE /v1/me/alert-subscriptions/:id": { "other actor": { status: 404, slug: "not-found" }, admin: { status: 404, slug: "not-found" } },
  // Public (no login), but the documented example token is not one the service signed: refused by the handler, not the gate.
  // A signed token's 200 is tested in tests/alerts and in privacy.test.ts.
  // Public (the emailed link), but the documented example token was never issued: the same 404 as any unknown token.
  // A real link's 200 is tested in tests/notifications/email-confirmation.test.ts and in privacy.test.ts.
  "GET /v1/me/email/confirm": {
    anonymous: { status: 404, slug: "not-found" },
    actor: { status: 404, slug: "not-found" },
    "other actor": { status: 404, slug: "not-found" },
    admin: { status: 404, slug: "not-found" },
  },
  // The same for a push subscription.
  "DELETE /v1/me/push-subscriptions/:id": { "other actor": { status: 404, slug: "not-found" }, admin: { status: 404, slug: "not-found" } },
  // A push endpoint belongs to one actor: the walk posts one endpoint, the owner first, so the others get 409.
  "POST /v1/me/push-subscriptions": { "other actor": { status: 409, slug: "conflict" }, admin: { status: 409, slug: "conflict" } },
  // Public (the SMS provider's webhooks), but the matrix's request carries no X-Twilio-Signature: refused by the route's check.
  // A signed request's answer is tested in tests/sms/webhooks.test.ts and in privacy.test.ts.
  "POST /v1/sms/status": { anonymous: forbidden, actor: forbidden, "other actor": forbidden, admin: forbidden },
  "POST /v1/sms/inbound": { anonymous: forbidden, actor: forbidden, "other actor": forbidden, admin: forbidden },
  // Any actor may, but the matrix's API sends no texts (no SMS settings) and so has no code waiting: tests/sms/phone.test.ts.
  "PUT /v1/me/phone": { actor: { status: 409, slug: "conflict" }, "other actor": { status: 409, slug: "conflict" }, admin: { status: 409, slug: "conflict" } },
  "POST /v1/me/phone/verify": {
    actor: { status: 409, slug: "conflict" },
    "other actor": { status: 409, slug: "conflict" },
    admin: { status: 409, slug: "conflict" },
  },
  "POST /v1/alert-subscriptions/unsubscribe": {
    anonymous: { status: 400, slug: "validation-failed" },
    actor: { status: 400, slug: "validation-failed" },
    "other actor": { status: 400, slug: "validation-failed" },
    admin: { status: 400, slug: "validation-failed" },
  },
};

// The console's and the app's pages are served only once built (npm run build:console, build:app); otherwise the route answers 404.
const notFound = { status: 404, slug: "not-found" };
const pageExpectation = (dir: string) => (existsSync(join(dir, "index.html")) ? {} : { anonymous: notFound, actor: notFound, "other actor": notFound, admin: notFound });
const consoleExpectation = pageExpectation(consoleBundleDir());
const appExpectation = pageExpectation(appBundleDir());
const unbuilt: Record<string, Partial<Record<Caller, Expected>>> = {
  "GET /admin": consoleExpectation,
  "GET /admin/*": consoleExpectation,
  "GET /app": appExpectation,
  "GET /app/*": appExpectation,
};

const keyOf = (route: RegisteredRoute) => `${route.method === "HEAD" ? "GET" : route.method} ${route.url}`;

function expectationsFor(route: RegisteredRoute): Record<Caller, Expected> | null {
  if (!route.auth) return null;
  return { ...byGate[route.auth], ...ownerOnly[keyOf(route)], ...unbuilt[keyOf(route)] };
}

/**
 * Bodies the document's example cannot give: the tag page's form (a page, so
 * not in the document) and corrections that keep the report where it is (the
 * example's point is thousands of km away, which PATCH refuses).
 */
const bodies: Record<string, Pick<InjectOptions, "payload" | "headers">> = {
  "POST /t/:token/message": {
    payload: new URLSearchParams({ message: "Found your dog", fromContact: "the matrix" }).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  },
  // The share pages' forms (pages, so not in the document either).
  "POST /lost/:id/message": {
    payload: new URLSearchParams({ message: "Found your dog", fromContact: "the matrix" }).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  },
  "POST /found/:id/message": {
    payload: new URLSearchParams({ message: "That is my cat", fromContact: "the matrix" }).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  },
  "POST /lost/:id/sighting": {
    payload: new URLSearchParams({ note: "Seen by the matrix" }).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  },
  "PATCH /v1/safety/lost-reports/:id": { payload: { description: "Corrected by the matrix" } },
  "PATCH /v1/safety/found-reports/:id": { payload: { description: "Corrected by the matrix" } },
  // A browser's push subscription: the document's example endpoint and keys are not a real https endpoint and P-256 point.
  "POST /v1/me/push-subscriptions": {
    payload: {
      endpoint: "https://push.example.com/send/matrix",
      keys: { p256dh: "BLZYrF06hG5Jwxg-B9G9ma1qCwVeJtPrAsWUgbeMR4EjCm9jrrAYh7HuE7S37SxWLt8FAux1udaCH-Jfh2b7puE", auth: "YPIh5IXuF6Hm9XSwTiLGyg" },
    },
  },
};

/** A valid request for the route: seeded ids in the path, the documented example body and required query. */
function requestFor(route: RegisteredRoute): InjectOptions {
  const method = route.method === "HEAD" ? "GET" : route.method;
  const fixed = bodies[keyOf(route)];
  if (fixed) return { method: route.method, url: fillPath(world, route.url), ...fixed };
  const op = operations.find((o) => o.method === method && o.path === route.url.replace(/:([A-Za-z0-9_]+)/g, "{$1}"));
  const query = (op?.parameters ?? [])
    .filter((p) => p.in === "query" && p.required)
    .map((p) => `${p.name}=${encodeURIComponent(String(exampleFor(p.schema, p.name)))}`);
  const url = fillPath(world, route.url) + (query.length > 0 ? `?${query.join("&")}` : "");
  // A photo upload is multipart/form-data (documented, not JSON): a real one-photo form.
  if (route.method === "POST" && route.url.endsWith("/photos")) return { method: route.method, url, payload: upload.payload, headers: upload.headers };
  if (!op?.body) return { method: route.method, url };
  // Any id in a body points at the seeded open lost report (a sighting's report, a moderation report's target).
  const body = JSON.parse(JSON.stringify(exampleFor(op.body)), (_key, value: unknown) =>
    typeof value === "string" && /^[0-9a-f]{8}-[0-9a-f]{4}-/i.test(value) ? world.lostReportId : value,
  );
  return { method: route.method, url, payload: body };
}

describe("authorization matrix: every registered route × every kind of caller gets the expected status", () => {
  it("has an expectation for every route Fastify registered", () => {
    expect(h.routes.length).toBeGreaterThan(40);
    expect(h.routes.filter((route) => !expectationsFor(route)).map(keyOf)).toEqual([]);
  });

  it("answers each caller as its gate and the owner table say", async () => {
    const failures: string[] = [];
    const counted = new Map<string, number>();
    for (const route of h.routes) {
      const expected = expectationsFor(route);
      if (!expected) continue;
      const request = requestFor(route);
      for (const [caller, headers] of callers) {
        const res = await h.call({ ...request, headers: { ...request.headers, ...headers } });
        const want = expected[caller];
        const ok =
          want === "ok"
            ? res.statusCode >= 200 && res.statusCode < 400
            : res.statusCode === want.status && (route.method === "HEAD" || slugOf(res) === want.slug);
        const outcome = `${res.statusCode}${res.statusCode >= 400 && route.method !== "HEAD" ? ` ${slugOf(res)}` : ""}`;
        counted.set(outcome, (counted.get(outcome) ?? 0) + 1);
        if (!ok) {
          failures.push(`${route.method} ${route.url} as ${caller}: want ${JSON.stringify(want)}, got ${outcome} ${res.body.slice(0, 160)}`);
        }
      }
    }
    console.log(`authorization matrix: ${h.routes.length} routes × ${callers.length} callers; outcomes ${JSON.stringify(Object.fromEntries(counted))}`);
    expect(failures).toEqual([]);
  });
});
