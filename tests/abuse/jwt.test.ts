import { base64url, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTHeaderParameters } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { bearer, secureEnv, TEST_AUDIENCE, TEST_ISSUER, TestIdentityProvider } from "../helpers/jwks.js";
import { slugOf, useAbuseHarness, WriteLog } from "./harness.js";

/**
 * Attacks tests/auth/authentication.test.ts does not already cover (alg none,
 * HS256 with the public key, expired, nbf, wrong issuer or audience, a foreign
 * key under the provider's kid): a suspended actor's valid token, kid games,
 * crit and embedded-key headers, and a tampered payload.
 */
let idp: TestIdentityProvider;
let writes: WriteLog;
const h = useAbuseHarness({
  extra: async () => {
    idp = await TestIdentityProvider.start();
    return secureEnv(idp);
  },
});

afterAll(async () => {
  await idp?.stop();
});

// TestIdentityProvider keeps its signing key private; these attacks need it to
// sign tokens whose only fault is in the header.
const providerKey = () => Reflect.get(idp, "privateKey") as CryptoKey;

async function signed(header: Partial<JWTHeaderParameters>, claims: Record<string, unknown> = {}, key?: CryptoKey, crit?: Record<string, boolean>) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ roles: ["platform_admin"], ...claims })
    .setProtectedHeader({ alg: "RS256", typ: "JWT", ...header })
    .setSubject("attacker-1")
    .setIssuer(TEST_ISSUER)
    .setAudience(TEST_AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + 300)
    .sign(key ?? providerKey(), crit ? { crit } : undefined);
}

const ADMIN_ROUTE = "/v1/admin/audit-events";

describe("a valid token for a suspended actor is refused with 403 account-suspended on every kind of route", () => {
  it("refuses the suspended actor on a public, an actor and an admin route, and writes nothing", async () => {
    writes = await WriteLog.install(h.pool);
    const adminToken = await idp.sign({ sub: "jwt-admin", roles: ["platform_admin"] });
    const suspend = await h.call({
      method: "POST",
      url: "/v1/admin/accounts/jwt-suspended/suspend",
      headers: bearer(adminToken),
      payload: { reasonCode: "abuse", reasonDetail: "token holder abused the API" },
    });
    expect(suspend.statusCode, suspend.body).toBe(200);
    await writes.takeNew();

    const token = await idp.sign({ sub: "jwt-suspended", roles: ["platform_admin"] });
    const requests = [
      { method: "GET" as const, url: "/v1/safety/alerts?lat=48.85&lon=2.35" },
      {
        method: "POST" as const,
        url: "/v1/safety/lost-reports",
        payload: { animal: { species: "dog" }, lastSeenAt: "2025-11-20T08:00:00Z", location: { lat: 48.85, lon: 2.35 } },
      },
      { method: "GET" as const, url: ADMIN_ROUTE },
      { method: "POST" as const, url: "/v1/admin/accounts/jwt-admin/suspend", payload: { reasonCode: "revenge", reasonDetail: "x" } },
    ];
    for (const request of requests) {
      const res = await h.call({ ...request, headers: bearer(token) });
      expect(res.statusCode, `${request.method} ${request.url}`).toBe(403);
      expect(slugOf(res)).toBe("account-suspended");
    }
    expect(await writes.takeNew()).toEqual([]);
    // The same actor without a credential is just anonymous: the public route still answers.
    expect((await h.call({ url: "/v1/safety/alerts?lat=48.85&lon=2.35" })).statusCode).toBe(200);
  });
});

describe("forged or malformed tokens get 401 unauthenticated", () => {
  const attacks: [string, () => Promise<string>][] = [
    ["unknown kid, signed with the provider's key", () => signed({ kid: "no-such-key" })],
    ["kid with path traversal", () => signed({ kid: "../../../../dev/null" })],
    ["kid with SQL", () => signed({ kid: "' union select 'secret' --" })],
    ["kid of 10 kB", () => signed({ kid: "k".repeat(10_240) })],
    ["crit header naming an extension the server does not know", () => signed({ kid: "test-key-1", crit: ["x-must-understand"], "x-must-understand": true } as Partial<JWTHeaderParameters>, {}, undefined, { "x-must-understand": true })],
    ["crit header with b64=false (unencoded payload)", async () => {
      // jose refuses to sign this for a JWT; it is assembled by hand from a valid token's signature input.
      const valid = await signed({ kid: "test-key-1" });
      const [, payload, signature] = valid.split(".");
      const header = base64url.encode(JSON.stringify({ alg: "RS256", kid: "test-key-1", b64: false, crit: ["b64"] }));
      return `${header}.${payload}.${signature}`;
    }],
    ["alg 'None' in mixed case", async () => {
      const now = Math.floor(Date.now() / 1000);
      const part = (v: object) => base64url.encode(JSON.stringify(v));
      return `${part({ alg: "None", typ: "JWT" })}.${part({ sub: "attacker-1", roles: ["platform_admin"], iss: TEST_ISSUER, aud: TEST_AUDIENCE, iat: now, exp: now + 300 })}.`;
    }],
    ["an attacker's key embedded in the jwk header", async () => {
      const attacker = await generateKeyPair("RS256", { extractable: true });
      return signed({ kid: "test-key-1", jwk: await exportJWK(attacker.publicKey) }, {}, attacker.privateKey);
    }],
    ["a jku header pointing at the attacker's key set", async () => {
      const attacker = await generateKeyPair("RS256");
      return signed({ kid: "test-key-1", jku: "https://evil.example/jwks.json" } as Partial<JWTHeaderParameters>, {}, attacker.privateKey);
    }],
    ["payload tampered to add platform_admin, signature kept", async () => {
      const token = await idp.sign({ sub: "plain-user", roles: ["volunteer"] });
      const [header, payload, signature] = token.split(".");
      const claims = JSON.parse(new TextDecoder().decode(base64url.decode(payload!)));
      const forged = base64url.encode(JSON.stringify({ ...claims, roles: ["platform_admin"] }));
      return `${header}.${forged}.${signature}`;
    }],
    ["payload tampered to another sub, signature kept", async () => {
      const token = await idp.sign({ sub: "plain-user", roles: ["platform_admin"] });
      const [header, payload, signature] = token.split(".");
      const claims = JSON.parse(new TextDecoder().decode(base64url.decode(payload!)));
      return `${header}.${base64url.encode(JSON.stringify({ ...claims, sub: "jwt-admin" }))}.${signature}`;
    }],
    ["signature stripped", async () => `${(await idp.sign({ roles: ["platform_admin"] })).split(".").slice(0, 2).join(".")}.`],
    ["no exp claim", async () => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ roles: ["platform_admin"] })
        .setProtectedHeader({ alg: "RS256", kid: "test-key-1" })
        .setSubject("attacker-1")
        .setIssuer(TEST_ISSUER)
        .setAudience(TEST_AUDIENCE)
        .setIssuedAt(now)
        .sign(providerKey());
    }],
  ];

  it.each(attacks)("%s", async (_name, make) => {
    const res = await h.call({ url: ADMIN_ROUTE, headers: bearer(await make()) });
    expect(res.statusCode, res.body).toBe(401);
    expect(slugOf(res)).toBe("unauthenticated");
    expect(res.headers["www-authenticate"]).toBe("Bearer");
  });

  it("reads roles from the signed payload only: a roles entry in the header grants nothing (403)", async () => {
    const token = await signed({ kid: "test-key-1", roles: ["platform_admin"] } as Partial<JWTHeaderParameters>, { roles: [] });
    const res = await h.call({ url: ADMIN_ROUTE, headers: bearer(token) });
    expect(res.statusCode).toBe(403);
    expect(slugOf(res)).toBe("forbidden");
  });

  it("still accepts the provider's own well-formed token, so the refusals above are about the attack", async () => {
    const res = await h.call({ url: ADMIN_ROUTE, headers: bearer(await signed({ kid: "test-key-1" })) });
    expect(res.statusCode, res.body).toBe(200);
  });
});
