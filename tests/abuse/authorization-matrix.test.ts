import { existsSync } from "node:fs";
import { join } from "node:path";
import type { InjectOptions } from "fastify";
import { beforeAll, describe, expect, it } from "vitest";
import { consoleBundleDir } from "../../api/console/routes.js";
import { PLATFORM_ADMIN, type RouteAuth } from "../../api/plugins/auth.js";
import { as } from "../helpers/app.js";
import { fillPath, OTHER, OWNER, seedWorld, slugOf, useAbuseHarness, type RegisteredRoute, type World } from "./harness.js";
import { exampleFor, operationsOf, type Operation } from "./openapi.js";

const h = useAbuseHarness();
let world: World;
let operations: Operation[];

const SUSPENDED_ADMIN = "suspended-admin-1";

beforeAll(async () => {
  world = await seedWorld(h);
  operations = operationsOf((await h.call({ url: "/openapi.json" })).json());
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
};

/** Routes only a row's owner may use (the gate lets any actor in; the handler checks ownership). */
const ownerOnly: Record<string, Partial<Record<Caller, Expected>>> = {
  "GET /v1/safety/lost-reports/:id/private": { "other actor": forbidden },
  "POST /v1/safety/lost-reports/:id/resolve": { "other actor": forbidden, admin: forbidden },
  "POST /v1/safety/found-reports/:id/resolve": { "other actor": forbidden, admin: forbidden },
  "GET /v1/animals/:id": { "other actor": forbidden, admin: forbidden },
  "PUT /v1/animals/:id/emergency-profile": { "other actor": forbidden, admin: forbidden },
};

// The console's page is served only once it is built (npm run build:console); otherwise the route answers 404.
const consoleBuilt = existsSync(join(consoleBundleDir(), "index.html"));
const notFound = { status: 404, slug: "not-found" };
const consoleExpectation = consoleBuilt ? {} : { anonymous: notFound, actor: notFound, "other actor": notFound, admin: notFound };
const unbuilt: Record<string, Partial<Record<Caller, Expected>>> = { "GET /admin": consoleExpectation, "GET /admin/*": consoleExpectation };

const keyOf = (route: RegisteredRoute) => `${route.method === "HEAD" ? "GET" : route.method} ${route.url}`;

function expectationsFor(route: RegisteredRoute): Record<Caller, Expected> | null {
  if (!route.auth) return null;
  return { ...byGate[route.auth], ...ownerOnly[keyOf(route)], ...unbuilt[keyOf(route)] };
}

/** A valid request for the route: seeded ids in the path, the documented example body and required query. */
function requestFor(route: RegisteredRoute): InjectOptions {
  const method = route.method === "HEAD" ? "GET" : route.method;
  const op = operations.find((o) => o.method === method && o.path === route.url.replace(/:([A-Za-z0-9_]+)/g, "{$1}"));
  const query = (op?.parameters ?? [])
    .filter((p) => p.in === "query" && p.required)
    .map((p) => `${p.name}=${encodeURIComponent(String(exampleFor(p.schema, p.name)))}`);
  const url = fillPath(world, route.url) + (query.length > 0 ? `?${query.join("&")}` : "");
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
        const res = await h.call({ ...request, headers });
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
