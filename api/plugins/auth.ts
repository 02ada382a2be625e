import type { FastifyInstance, FastifyRequest } from "fastify";
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from "jose";
import type { ApiConfig } from "../../lib/config.js";
import type { Pool } from "../../lib/db.js";
import { isPartnerUrl } from "../../lib/partners.js";
import { ProblemError, ProblemSlug, problems } from "../../lib/problems.js";
import { isSuspended } from "../accounts/store.js";

export const PLATFORM_ADMIN = "platform_admin";

/**
 * Who a route lets in: anyone, any authenticated actor, or platform_admin;
 * `partner`: the partner API (/partners), whose integration key and bearer
 * tokens are its own (api/partners/access.ts), so this hook leaves it alone.
 */
export type RouteAuth = "public" | "actor" | "admin" | "partner";

export interface Actor {
  id: string;
  roles: readonly string[];
}

/** Whether the actor holds platform_admin: the admin routes' gate, and what lets an admin see and act on others' content. */
export const isAdmin = (actor: Actor) => actor.roles.includes(PLATFORM_ADMIN);

declare module "fastify" {
  interface FastifyRequest {
    actor: Actor | null;
  }
  interface FastifyContextConfig {
    auth?: RouteAuth;
    /**
     * "in-statement": the route's one write statement refuses a suspended
     * actor itself (the report creates), so onRequest skips its lookup and
     * any refusal the route gives looks it up first (suspensionBeforeRefusal).
     */
    suspension?: "in-statement";
  }
}

// Asymmetric algorithms only: `none` and HS* (a public key used as an HMAC secret) are refused.
const ALLOWED_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
/** What an actor id (a JWT `sub`, X-Debug-Actor, an admin route's userId) may look like. */
export const ACTOR_ID = /^[A-Za-z0-9_.:@|-]{1,200}$/;

export interface Authenticator {
  authenticate(request: FastifyRequest): Promise<Actor | null>;
}

function rolesFrom(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((r): r is string => typeof r === "string");
  if (typeof value === "string") return value.split(/[\s,]+/).filter(Boolean);
  return [];
}

/**
 * The roles claim is looked up by its exact name first, so namespaced claims
 * such as `https://example.com/roles` work; a dotted path such as
 * `realm_access.roles` is walked only when no claim has that exact name.
 */
export function rolesClaim(payload: JWTPayload, claim: string): string[] {
  if (claim in payload) return rolesFrom(payload[claim]);
  let value: unknown = payload;
  for (const part of claim.split(".")) {
    if (typeof value !== "object" || value === null) return [];
    value = (value as Record<string, unknown>)[part];
  }
  return rolesFrom(value);
}

// The identity provider's key set could not be fetched: the token may well be
// valid, so the caller is told to retry (503) rather than to log in again (401).
const jwksUnavailableCodes = new Set(["ERR_JWKS_TIMEOUT", "ERR_JWKS_INVALID", "ERR_JOSE_GENERIC"]);
function isJwksUnavailable(err: unknown): boolean {
  return !(err instanceof joseErrors.JOSEError) || jwksUnavailableCodes.has(err.code);
}

/**
 * Bearer JWTs are verified against the identity provider's JWKS, issuer and
 * audience. The development bypass (X-Debug-Actor / X-Debug-Roles) exists
 * only when config allowed it, which it does only in development.
 */
export function createAuthenticator(config: ApiConfig): Authenticator {
  const jwks: JWTVerifyGetKey | null = config.AUTH_JWKS_URL
    ? createRemoteJWKSet(new URL(config.AUTH_JWKS_URL), { cooldownDuration: 30_000, cacheMaxAge: 10 * 60_000 })
    : null;
  const devBypass = config.API_DEV_AUTH_BYPASS && config.API_ENV === "development";

  return {
    async authenticate(request) {
      const header = request.headers.authorization;
      if (header !== undefined) {
        const match = /^Bearer ([A-Za-z0-9_\-.]+)$/i.exec(header.trim());
        if (!match || !jwks) throw problems.unauthenticated("the bearer token is missing or malformed");
        let payload: JWTPayload;
        try {
          ({ payload } = await jwtVerify(match[1]!, jwks, {
            issuer: config.AUTH_ISSUER,
            audience: config.AUTH_AUDIENCE,
            algorithms: ALLOWED_ALGORITHMS,
            clockTolerance: 5,
            requiredClaims: ["sub", "exp"],
          }));
        } catch (err) {
          if (isJwksUnavailable(err)) {
            request.log.warn({ err: { message: (err as Error).message } }, "auth: identity provider key set unavailable");
            throw problems.unavailable("the identity provider's keys could not be fetched; retry shortly");
          }
          request.log.info({ reason: (err as Error).message }, "auth: token rejected");
          throw problems.unauthenticated("the bearer token is not valid");
        }
        if (typeof payload.sub !== "string" || !ACTOR_ID.test(payload.sub)) {
          throw problems.unauthenticated("the bearer token's subject is not a valid actor id");
        }
        return { id: payload.sub, roles: rolesClaim(payload, config.AUTH_ROLES_CLAIM) };
      }
      if (devBypass) {
        const debugActor = request.headers["x-debug-actor"];
        if (typeof debugActor === "string" && debugActor.length > 0) {
          if (!ACTOR_ID.test(debugActor)) throw problems.unauthenticated("X-Debug-Actor is not a valid actor id");
          const roles = request.headers["x-debug-roles"];
          return { id: debugActor, roles: rolesFrom(typeof roles === "string" ? roles : "") };
        }
      }
      return null;
    },
  };
}

/**
 * Authentication, then RequireNotSuspended, then the route's own gate, all in
 * onRequest: nothing is parsed for a caller who will be refused. The
 * suspension lookup is a primary-key read on every authenticated request,
 * with no cache, so a suspension applies from the very next request. A route
 * with `suspension: "in-statement"` makes that read part of its write (one
 * round trip instead of two on the hottest path, the report creates: about
 * one statement a create, measured with `npm run bench:statements`);
 * suspensionBeforeRefusal keeps the order the caller sees.
 */
export function registerAuth(app: FastifyInstance, authenticator: Authenticator, pool: Pool): void {
  app.decorateRequest("actor", null);
  app.addHook("onRoute", (route) => {
    if (route.url.startsWith("/v1/admin")) {
      route.config = { ...(route.config ?? {}), auth: "admin" };
    }
  });
  app.addHook("onRequest", async (request) => {
    // The partner API checks its own credentials; an unknown path under it is a plain 404, whatever its token.
    if (request.routeOptions.config.auth === "partner" || (request.is404 && isPartnerUrl(request.url))) return;
    const actor = await authenticator.authenticate(request);
    request.actor = actor;
    const suspensionInStatement = request.routeOptions.config.suspension === "in-statement";
    if (actor && !suspensionInStatement && (await isSuspended(pool, actor.id))) throw problems.accountSuspended();
    const required: RouteAuth = request.routeOptions.config.auth ?? "actor";
    if (required === "public" || request.is404) return;
    if (!actor) throw problems.unauthenticated();
    if (required === "admin" && !isAdmin(actor)) {
      throw problems.forbidden("the platform_admin role is required");
    }
  });
}

/**
 * For the error handler: on a route that checks suspension in its statement,
 * a refusal (a bad body, a throttle, or the statement's own refusal of a
 * suspended actor) is answered 403 account-suspended when the actor is
 * suspended, as if the check had run first. Costs a lookup on refusals only.
 */
export function suspensionBeforeRefusal(pool: Pool) {
  return async (request: FastifyRequest, refusal: ProblemError): Promise<ProblemError> => {
    const { actor } = request;
    if (!actor || request.routeOptions.config.suspension !== "in-statement") return refusal;
    if (refusal.status >= 500 || refusal.slug === ProblemSlug.AccountSuspended) return refusal;
    return (await isSuspended(pool, actor.id)) ? problems.accountSuspended() : refusal;
  };
}

/** The authenticated actor of a route whose gate already required one. */
export function requireActor(request: FastifyRequest): Actor {
  if (!request.actor) throw problems.unauthenticated();
  return request.actor;
}
