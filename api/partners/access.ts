import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { clientAddressKey } from "../../lib/client-address.js";
import type { Pool } from "../../lib/db.js";
import { problems } from "../../lib/problems.js";
import { hashToken } from "../../lib/secret-token.js";
import { TokenBuckets } from "../plugins/ip-limiter.js";
import { partnerOfToken, type TokenPartner } from "./store.js";

/**
 * Who may call the partner API, checked in this order on every /partners
 * call, before its body is parsed:
 *  1. an integration key from PARTNER_API_KEYS in `x-api-key` (401);
 *  2. except on auth/login, a live bearer token from auth/login (401);
 *  3. a partner that is not suspended (403 account-suspended);
 *  4. at most 600 calls a minute per partner (429 with Retry-After).
 * The global authentication hook leaves these routes alone (auth "partner").
 */

declare module "fastify" {
  interface FastifyRequest {
    partner: TokenPartner | null;
  }
}

export const PARTNER_LOGIN_URL = "/partners/v2/auth/login";
export const TOKEN_TTL_SECONDS = 3600;
/** 600 calls a minute: a bucket of 600 that refills 10 a second. */
export const PARTNER_CALLS_PER_MINUTE = 600;
/** 10 login tries a minute per client address. */
export const LOGIN_TRIES_PER_MINUTE = 10;

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();

/** Compares digests in constant time, so the answer time tells nothing about how much of a key was right. */
export function keyChecker(keys: readonly string[]): (presented: unknown) => boolean {
  const digests = keys.map(digest);
  return (presented) => {
    if (typeof presented !== "string" || presented.length === 0 || presented.length > 500) return false;
    const candidate = digest(presented);
    let found = false;
    for (const known of digests) found = timingSafeEqual(known, candidate) || found;
    return found;
  };
}

const BEARER = /^Bearer ([A-Za-z0-9_-]{43})$/i;

export interface PartnerLimits {
  calls: TokenBuckets;
  logins: TokenBuckets;
}

export function createPartnerLimits(): PartnerLimits {
  return {
    calls: new TokenBuckets({ ratePerSecond: PARTNER_CALLS_PER_MINUTE / 60, burst: PARTNER_CALLS_PER_MINUTE }),
    logins: new TokenBuckets({ ratePerSecond: LOGIN_TRIES_PER_MINUTE / 60, burst: LOGIN_TRIES_PER_MINUTE }),
  };
}

/** A login try from this client: 429 past 10 a minute. */
export function takeLoginTry(limits: PartnerLimits, request: FastifyRequest): void {
  const wait = limits.logins.take(clientAddressKey(request.ip));
  if (wait > 0) throw problems.rateLimited(wait, "too many login tries from this address; wait a minute");
}

/** Registers the checks on the partner API's scope (its routes only). */
export function registerPartnerAccess(app: FastifyInstance, pool: Pool, keys: readonly string[], limits: PartnerLimits): void {
  const validKey = keyChecker(keys);
  app.decorateRequest("partner", null);
  app.addHook("onRoute", (route) => {
    route.config = { ...(route.config ?? {}), auth: "partner" };
  });
  const sweeper = setInterval(() => {
    limits.calls.sweep();
    limits.logins.sweep();
  }, 60_000);
  sweeper.unref();
  app.addHook("onClose", async () => clearInterval(sweeper));
  app.addHook("onRequest", async (request) => {
    if (!validKey(request.headers["x-api-key"])) throw problems.unauthenticated("a valid integration key is required in x-api-key");
    if (request.routeOptions.url === PARTNER_LOGIN_URL) return;
    const match = BEARER.exec(request.headers.authorization?.trim() ?? "");
    const partner = match ? await partnerOfToken(pool, hashToken(match[1]!)) : null;
    if (!partner) throw problems.unauthenticated("a bearer token from /partners/v2/auth/login is required; it lives one hour");
    if (partner.suspended) throw problems.accountSuspended();
    const wait = limits.calls.take(partner.id);
    if (wait > 0) throw problems.rateLimited(wait, `a partner makes at most ${PARTNER_CALLS_PER_MINUTE} calls a minute`);
    request.partner = partner;
  });
}

/** The partner of an authenticated partner call. */
export function requirePartner(request: FastifyRequest): TokenPartner {
  if (!request.partner) throw problems.unauthenticated();
  return request.partner;
}
