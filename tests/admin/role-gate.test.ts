import type { FastifyInstance, HTTPMethods } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";

let h: Harness;
let app: FastifyInstance;
// Every route Fastify registers, as it registers it: routes other modules add later are walked too.
const registered: { method: HTTPMethods; url: string }[] = [];

beforeAll(async () => {
  h = await startHarness(
    {},
    {
      onRoute: (route) => {
        for (const method of [route.method].flat()) registered.push({ method, url: route.url });
      },
    },
  );
  app = h.api.app;
});

afterAll(async () => {
  await h?.close();
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
