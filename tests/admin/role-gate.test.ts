import type { FastifyInstance, HTTPMethods } from "fastify";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../api/app.js";
import { busClient, connectBus, ensureStream, relayWaker, type NatsConnection } from "../../lib/bus.js";
import { loadApiConfig } from "../../lib/config.js";
import { createPool, type Pool } from "../../lib/db.js";
import { admin, as, devEnv } from "../helpers/app.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestBus, type TestBus } from "../helpers/nats.js";

let db: TestDatabase;
let bus: TestBus;
let nc: NatsConnection;
let pool: Pool;
let app: FastifyInstance;
// Every route Fastify registers, as it registers it: routes other modules add later are walked too.
const registered: { method: HTTPMethods; url: string }[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  bus = await startTestBus();
  const config = loadApiConfig(devEnv(db.url, bus.url));
  const logger = pino({ level: config.LOG_LEVEL });
  nc = await connectBus(config.NATS_URL, "role-gate-test", logger);
  await ensureStream(nc, config.NATS_STREAM);
  pool = createPool({ connectionString: config.DATABASE_URL, applicationName: "role-gate-test", logger });
  app = await buildApp({
    config,
    pool,
    js: busClient(nc),
    wakeRelay: relayWaker(nc),
    logger,
    onRoute: (route) => {
      for (const method of [route.method].flat()) registered.push({ method, url: route.url });
    },
  });
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  await nc?.close();
  await pool?.end();
  await bus?.dispose();
  await db?.drop();
});

// Each request comes from its own address, so the per-IP limiter (burst 40) never answers in the gate's place.
let requests = 0;
const nextAddress = () => {
  requests++;
  return `10.77.${requests >> 8}.${requests & 255}`;
};

/** A concrete URL for a route pattern: every path parameter gets a UUID, which every id parameter accepts. */
const concrete = (url: string) => url.replace(/:[A-Za-z0-9_]+/g, () => crypto.randomUUID());

describe("platform_admin gates every /v1/admin route", () => {
  it("answers 401 without a credential, 403 for a non-admin and 403 account-suspended for a suspended admin, on every registered admin route", async () => {
    const adminRoutes = registered.filter((r) => r.url.startsWith("/v1/admin"));
    // Guards against an empty walk: the routes this module owns must be among those found.
    expect(adminRoutes).toEqual(
      expect.arrayContaining([
        { method: "GET", url: "/v1/admin/outbox/stuck" },
        { method: "POST", url: "/v1/admin/outbox/:id/requeue" },
        { method: "POST", url: "/v1/admin/accounts/:userId/suspend" },
        { method: "POST", url: "/v1/admin/accounts/:userId/restore" },
        { method: "POST", url: "/v1/admin/animals/:animalId/emergency-profile/revoke" },
        { method: "GET", url: "/v1/admin/audit-events" },
        { method: "GET", url: "/v1/admin/moderation/queue" },
        { method: "POST", url: "/v1/admin/moderation/:id/claim" },
        { method: "POST", url: "/v1/admin/moderation/:id/action" },
      ]),
    );

    const suspend = await app.inject({
      method: "POST",
      url: "/v1/admin/accounts/admin-suspended/suspend",
      headers: admin(),
      payload: { reasonCode: "compromised", reasonDetail: "credentials leaked" },
    });
    expect(suspend.statusCode).toBe(200);

    const callers = [
      { caller: "no credential", headers: {}, status: 401, slug: "unauthenticated" },
      { caller: "non-admin", headers: as("user-plain", ["volunteer"]), status: 403, slug: "forbidden" },
      { caller: "suspended admin", headers: admin("admin-suspended"), status: 403, slug: "account-suspended" },
    ];
    const failures: string[] = [];
    for (const route of adminRoutes) {
      for (const { caller, headers, status, slug } of callers) {
        const res = await app.inject({ method: route.method, url: concrete(route.url), headers, remoteAddress: nextAddress() });
        const bodySlug = route.method === "HEAD" ? slug : String(res.json().type).split("/").pop();
        if (res.statusCode !== status || bodySlug !== slug) {
          failures.push(`${route.method} ${route.url} as ${caller}: ${res.statusCode} ${bodySlug}`);
        }
      }
      const asAdmin = await app.inject({
        method: route.method,
        url: concrete(route.url),
        headers: admin(),
        remoteAddress: nextAddress(),
      });
      if (asAdmin.statusCode === 401 || asAdmin.statusCode === 403) {
        failures.push(`${route.method} ${route.url} as platform_admin: ${asAdmin.statusCode}`);
      }
    }
    expect(failures).toEqual([]);
  });
});
