import type { FastifyRequest } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAuthenticator, rolesClaim } from "../../api/plugins/auth.js";
import { loadApiConfig } from "../../lib/config.js";
import { as, buildTestApi, devEnv, type TestApi } from "../helpers/app.js";
import type { TestDatabase } from "../helpers/db.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { bearer, secureEnv, TestIdentityProvider } from "../helpers/jwks.js";
import { freePort, type TestBus } from "../helpers/nats.js";

let h: Harness;
let db: TestDatabase;
let bus: TestBus;
let idp: TestIdentityProvider;
let api: TestApi;

const ADMIN_ROUTE = "/v1/admin/audit-events";

beforeAll(async () => {
  idp = await TestIdentityProvider.start();
  h = await startHarness(secureEnv(idp));
  ({ db, bus, api } = h);
});

afterAll(async () => {
  await h?.close();
  await idp?.stop();
});

async function auditRows(actorId: string) {
  const { rows } = await db.pool.query(`select action, object_id from audit_event where actor_id = $1`, [actorId]);
  return rows;
}

describe("a valid bearer token authenticates: the actor is sub, the roles come from the roles claim", () => {
  it("lets a token with platform_admin in its roles claim into an admin route", async () => {
    const res = await api.app.inject({ url: ADMIN_ROUTE, headers: bearer(await idp.sign({ roles: ["platform_admin"] })) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ items: expect.any(Array), nextCursor: null });
  });

  it("records the token's sub as the acting admin", async () => {
    const token = await idp.sign({ sub: "jwt-admin-7", roles: ["platform_admin"] });
    const res = await api.app.inject({
      method: "POST",
      url: "/v1/admin/accounts/jwt-target-1/suspend",
      headers: bearer(token),
      payload: { reasonCode: "spam", reasonDetail: "posted 40 fake reports" },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ userId: "jwt-target-1", status: "suspended", suspendedBy: "jwt-admin-7" });
    expect(await auditRows("jwt-admin-7")).toEqual([{ action: "admin.account_suspended", object_id: "jwt-target-1" }]);
  });

  it("refuses an authenticated actor without platform_admin with 403 forbidden", async () => {
    const res = await api.app.inject({ url: ADMIN_ROUTE, headers: bearer(await idp.sign({ roles: ["volunteer"] })) });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/forbidden$/), status: 403 });
  });

  it("reads roles from the claim AUTH_ROLES_CLAIM names, including a namespaced one", async () => {
    const claim = "https://animal-safety.example/roles";
    const custom = await buildTestApi(devEnv(db.url, bus.url, { ...secureEnv(idp), AUTH_ROLES_CLAIM: claim }));
    try {
      const namespaced = await idp.sign({ claims: { [claim]: ["platform_admin"] } });
      expect((await custom.app.inject({ url: ADMIN_ROUTE, headers: bearer(namespaced) })).statusCode).toBe(200);
      const plainRolesOnly = await idp.sign({ roles: ["platform_admin"] });
      expect((await custom.app.inject({ url: ADMIN_ROUTE, headers: bearer(plainRolesOnly) })).statusCode).toBe(403);
    } finally {
      await custom.close();
    }
  });

  it("accepts the roles claim as an array, a space- or comma-separated string, or a nested path", () => {
    expect(rolesClaim({ roles: ["platform_admin", 3] }, "roles")).toEqual(["platform_admin"]);
    expect(rolesClaim({ roles: "a b,platform_admin" }, "roles")).toEqual(["a", "b", "platform_admin"]);
    expect(rolesClaim({ realm_access: { roles: ["platform_admin"] } }, "realm_access.roles")).toEqual(["platform_admin"]);
    expect(rolesClaim({ "a.b": ["x"], a: { b: ["y"] } }, "a.b")).toEqual(["x"]);
    expect(rolesClaim({}, "roles")).toEqual([]);
  });
});

describe("a missing or invalid credential gets 401 unauthenticated", () => {
  const cases: [string, () => Promise<Record<string, string>>][] = [
    ["missing token", async () => ({})],
    ["expired token", async () => bearer(await idp.sign({ roles: ["platform_admin"], expiresIn: -60 }))],
    ["token not yet valid (nbf in the future)", async () => bearer(await idp.sign({ roles: ["platform_admin"], notBeforeIn: 600 }))],
    ["wrong issuer", async () => bearer(await idp.sign({ roles: ["platform_admin"], issuer: "https://evil.example/" }))],
    ["wrong audience", async () => bearer(await idp.sign({ roles: ["platform_admin"], audience: "another-api" }))],
    ["bad signature (a key the JWKS does not hold)", async () => bearer(await idp.sign({ roles: ["platform_admin"], foreignKey: true }))],
    ["alg none", async () => bearer(idp.unsigned("user-1", ["platform_admin"]))],
    ["HS256 signed with the public key", async () => bearer(await idp.hs256WithPublicKey("user-1", ["platform_admin"]))],
    ["no sub claim", async () => bearer(await idp.sign({ roles: ["platform_admin"], sub: null }))],
    ["sub that is not an actor id", async () => bearer(await idp.sign({ roles: ["platform_admin"], sub: "a b/c" }))],
    ["not a Bearer credential", async () => ({ authorization: "Basic dXNlcjpwYXNz" })],
    ["garbage token", async () => bearer("not.a.jwt")],
  ];

  it.each(cases)("%s", async (_name, headers) => {
    const res = await api.app.inject({ url: ADMIN_ROUTE, headers: await headers() });
    expect(res.statusCode).toBe(401);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(res.headers["www-authenticate"]).toBe("Bearer");
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/unauthenticated$/), status: 401 });
  });

  it("writes nothing when an admin mutation is refused for an invalid token", async () => {
    const res = await api.app.inject({
      method: "POST",
      url: "/v1/admin/accounts/never-suspended/suspend",
      headers: bearer(await idp.sign({ sub: "expired-admin", roles: ["platform_admin"], expiresIn: -60 })),
      payload: { reasonCode: "spam", reasonDetail: "x" },
    });
    expect(res.statusCode).toBe(401);
    const { rows } = await db.pool.query(`select 1 from account where user_id = 'never-suspended'`);
    expect(rows).toHaveLength(0);
    expect(await auditRows("expired-admin")).toEqual([]);
  });
});

describe("the development bypass exists only in development", () => {
  it("ignores X-Debug-Actor and X-Debug-Roles outside development", async () => {
    const res = await api.app.inject({ url: ADMIN_ROUTE, headers: as("debug-admin", ["platform_admin"]) });
    expect(res.statusCode).toBe(401);
  });

  it("refuses API_DEV_AUTH_BYPASS=true in the test and production environments", () => {
    for (const env of ["test", "production"]) {
      expect(() =>
        loadApiConfig({ ...devEnv(db.url, bus.url, secureEnv(idp)), API_ENV: env, API_DEV_AUTH_BYPASS: "true" }),
      ).toThrow(/API_DEV_AUTH_BYPASS/);
    }
  });

  it("ignores the debug headers in the authenticator itself when a config outside development has the bypass on", async () => {
    // loadApiConfig refuses this combination; the authenticator must not rely on that alone.
    const request = { headers: as("debug-admin", ["platform_admin"]), log: api.app.log } as unknown as FastifyRequest;
    for (const API_ENV of ["production", "test"] as const) {
      const authenticator = createAuthenticator({ ...api.config, API_ENV, API_DEV_AUTH_BYPASS: true });
      expect(await authenticator.authenticate(request)).toBeNull();
    }
    // The same request in development with the bypass: the check above is what keeps the headers out.
    const dev = createAuthenticator({ ...api.config, API_ENV: "development", API_DEV_AUTH_BYPASS: true });
    expect(await dev.authenticate(request)).toEqual({ id: "debug-admin", roles: ["platform_admin"] });
  });

  it("in development takes the actor from X-Debug-Actor and the roles from X-Debug-Roles", async () => {
    const dev = await buildTestApi(devEnv(db.url, bus.url));
    try {
      expect((await dev.app.inject({ url: ADMIN_ROUTE, headers: as("dev-admin", ["platform_admin"]) })).statusCode).toBe(200);
      expect((await dev.app.inject({ url: ADMIN_ROUTE, headers: as("dev-user") })).statusCode).toBe(403);
      expect((await dev.app.inject({ url: ADMIN_ROUTE, headers: as("bad actor id!") })).statusCode).toBe(401);
      expect((await dev.app.inject({ url: ADMIN_ROUTE })).statusCode).toBe(401);
    } finally {
      await dev.close();
    }
  });

  it("in development with the bypass off, ignores X-Debug-Actor", async () => {
    const dev = await buildTestApi(devEnv(db.url, bus.url, { API_DEV_AUTH_BYPASS: "false" }));
    try {
      expect((await dev.app.inject({ url: ADMIN_ROUTE, headers: as("dev-admin", ["platform_admin"]) })).statusCode).toBe(401);
    } finally {
      await dev.close();
    }
  });
});

describe("an unreachable identity provider gives 503, not 401, so clients retry instead of logging in again", () => {
  it("answers 503 service-unavailable when the JWKS cannot be fetched", async () => {
    const deadJwks = `http://127.0.0.1:${await freePort()}/jwks.json`;
    const down = await buildTestApi(devEnv(db.url, bus.url, { ...secureEnv(idp), AUTH_JWKS_URL: deadJwks }));
    try {
      const res = await down.app.inject({ url: ADMIN_ROUTE, headers: bearer(await idp.sign({ roles: ["platform_admin"] })) });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/service-unavailable$/) });
    } finally {
      await down.close();
    }
  });
});
