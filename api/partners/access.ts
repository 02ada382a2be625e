import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { clientAddressKey } from "../../lib/client-address.js";
import type { Pool } from "../../lib/db.js";
import { problems } from "../../lib/problems.js";
import { hashToken } from "../../lib/secret-token.js";
import { IP_BURST, IP_RATE_PER_SECOND, TokenBuckets } from "../plugins/ip-limiter.js";
import { partnerOfToken, type TokenPartner } from "./store.js";

/**
 * Who may call the partner API, checked in this order on every /partners
 * call, before its body is parsed:
 *  1. an integration key from PARTNER_API_KEYS in `x-api-key` (401);
 *  2. except on auth/login, a live bearer token from auth/login (401);
 *  3. a partner that is not suspended (403 account-suspended);
 *  4. at most 600 calls a minute per partner: a call past the bucket waits
 *     for its token, up to 10 s, and only a call that would wait longer is
 *     429 with Retry-After (docs/decisions/0093-*).
 * A call that is not authenticated (no or a wrong key or token, a
 * suspended partner's, and every login) counts against its client address
 * instead, at the per-address limiter's rate: the global limiter and
 * authentication hooks leave these routes alone (auth "partner"), so a
 * shelter publishing from one address meets its partner's limit only.
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
/**
 * How long a call past its partner's bucket is held for its token before it
 * runs. ASM3's publisher sends one call at a time and never retries a 429
 * (an animal it cannot create is lost for that run), so it is paced, not
 * refused: it goes on at 10 calls a second. 100 calls of one partner can
 * wait at once; the next is 429.
 */
export const PARTNER_CALL_MAX_WAIT_SECONDS = 10;
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
  /** Calls not (yet) authenticated, per client address: the per-address limiter's figures. */
  addresses: TokenBuckets;
  /** Wakes the calls waiting for their token (a shutdown finishes them at once rather than after the wait). */
  waiting: Set<() => void>;
}

export function createPartnerLimits(): PartnerLimits {
  const callRate = PARTNER_CALLS_PER_MINUTE / 60;
  return {
    // Forgotten only once refilled from the deepest booking: (600 + 100) / 10 s, and a second.
    calls: new TokenBuckets({
      ratePerSecond: callRate,
      burst: PARTNER_CALLS_PER_MINUTE,
      idleMs: ((PARTNER_CALLS_PER_MINUTE + PARTNER_CALL_MAX_WAIT_SECONDS * callRate) / callRate) * 1000 + 1000,
    }),
    logins: new TokenBuckets({ ratePerSecond: LOGIN_TRIES_PER_MINUTE / 60, burst: LOGIN_TRIES_PER_MINUTE }),
    addresses: new TokenBuckets({ ratePerSecond: IP_RATE_PER_SECOND, burst: IP_BURST }),
    waiting: new Set(),
  };
}

/** A call from this client address that is not authenticated: 429 past the per-address limiter's rate. */
function takeAddressCall(limits: PartnerLimits, request: FastifyRequest): void {
  const wait = limits.addresses.take(clientAddressKey(request.ip));
  if (wait > 0) throw problems.rateLimited(wait, "too many requests from this address; slow down");
}

/** A login try from this client: 429 past 10 a minute. */
export function takeLoginTry(limits: PartnerLimits, request: FastifyRequest): void {
  const wait = limits.logins.take(clientAddressKey(request.ip));
  if (wait > 0) throw problems.rateLimited(wait, "too many login tries from this address; wait a minute");
}

/** One of the partner's calls: at once, or after waiting for its token; 429 when it would wait too long. */
async function takePartnerCall(limits: PartnerLimits, partnerId: string): Promise<void> {
  const booked = limits.calls.reserve(partnerId, PARTNER_CALL_MAX_WAIT_SECONDS);
  if ("refused" in booked) {
    throw problems.rateLimited(booked.refused, `a partner makes at most ${PARTNER_CALLS_PER_MINUTE} calls a minute`);
  }
  if (booked.wait <= 0) return;
  await new Promise<void>((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      limits.waiting.delete(wake);
      resolve();
    };
    const timer = setTimeout(wake, Math.ceil(booked.wait * 1000));
    limits.waiting.add(wake);
  });
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
    limits.addresses.sweep();
  }, 60_000);
  sweeper.unref();
  app.addHook("onClose", async () => clearInterval(sweeper));
  // A shutdown has 10 s in all (decision 49): the calls waiting for a token go on at once.
  app.addHook("preClose", async () => {
    for (const wake of [...limits.waiting]) wake();
  });
  app.addHook("onRequest", async (request) => {
    if (!validKey(request.headers["x-api-key"])) {
      takeAddressCall(limits, request);
      throw problems.unauthenticated("a valid integration key is required in x-api-key");
    }
    if (request.routeOptions.url === PARTNER_LOGIN_URL) return takeAddressCall(limits, request);
    const match = BEARER.exec(request.headers.authorization?.trim() ?? "");
    const partner = match ? await partnerOfToken(pool, hashToken(match[1]!)) : null;
    if (!partner) {
      takeAddressCall(limits, request);
      throw problems.unauthenticated("a bearer token from /partners/v2/auth/login is required; it lives one hour");
    }
    if (partner.suspended) {
      takeAddressCall(limits, request);
      throw problems.accountSuspended();
    }
    await takePartnerCall(limits, partner.id);
    request.partner = partner;
  });
}

/** The partner of an authenticated partner call. */
export function requirePartner(request: FastifyRequest): TokenPartner {
  if (!request.partner) throw problems.unauthenticated();
  return request.partner;
}
