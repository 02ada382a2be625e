import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { clientAddressKey } from "../../lib/client-address.js";
import { isPartnerUrl } from "../../lib/partners.js";

export interface TokenBucketOptions {
  ratePerSecond: number;
  burst: number;
  /** Buckets idle this long are full again and can be forgotten. */
  idleMs?: number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * In-memory token buckets keyed by client address (clientAddressKey: an
 * IPv6 client by its /64), a single-instance limiter as the spec says.
 * take() does no I/O and allocates only for a new key.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private readonly idleMs: number;

  constructor(private readonly options: TokenBucketOptions) {
    this.idleMs = options.idleMs ?? Math.ceil((options.burst / options.ratePerSecond) * 1000) + 1000;
  }

  private refilled(key: string, now: number): Bucket {
    const { ratePerSecond, burst } = this.options;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { tokens: burst, updatedAt: now };
      this.buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * ratePerSecond);
      bucket.updatedAt = now;
    }
    return bucket;
  }

  /** Takes one token; returns 0 when allowed, else the seconds until one is available. */
  take(key: string, now = performance.now()): number {
    const bucket = this.refilled(key, now);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return (1 - bucket.tokens) / this.options.ratePerSecond;
  }

  /**
   * Takes one token, or books the next one to come when it is at most
   * `maxWaitSeconds` away (the bucket then owes it: its tokens go below
   * zero, and the following callers queue behind). `wait` is how long the
   * caller must hold before it goes on (0: at once); `refused` is how long
   * until a booking would fit, when none was made. With `idleMs` at least
   * (burst + maxWaitSeconds × rate) / rate, a swept bucket owed nothing.
   */
  reserve(key: string, maxWaitSeconds: number, now = performance.now()): { wait: number } | { refused: number } {
    const bucket = this.refilled(key, now);
    const wait = bucket.tokens >= 1 ? 0 : (1 - bucket.tokens) / this.options.ratePerSecond;
    if (wait > maxWaitSeconds) return { refused: wait - maxWaitSeconds };
    bucket.tokens -= 1;
    return { wait };
  }

  /** Drops buckets that have refilled completely; they carry no state. */
  sweep(now = performance.now()): void {
    for (const [key, bucket] of this.buckets) {
      if (now - bucket.updatedAt > this.idleMs) this.buckets.delete(key);
    }
  }

  get size(): number {
    return this.buckets.size;
  }
}

export const IP_RATE_PER_SECOND = 20;
export const IP_BURST = 40;

/**
 * The first onRequest hook: rejects with 429 before authentication, body
 * parsing or any I/O. The body is serialised once, up front.
 */
export interface IpLimiter {
  buckets: TokenBuckets;
  /** Sends the 429 and returns true when the caller's bucket is empty. */
  refuse(request: FastifyRequest, reply: FastifyReply): boolean;
}

/**
 * The first onRequest hook: rejects with 429 before authentication, body
 * parsing or any I/O. The body is serialised once, up front.
 */
export function registerIpLimiter(app: FastifyInstance, problemBaseUrl: string, now: () => number = () => performance.now()): IpLimiter {
  const buckets = new TokenBuckets({ ratePerSecond: IP_RATE_PER_SECOND, burst: IP_BURST });
  const problem = {
    type: `${problemBaseUrl.replace(/\/$/, "")}/rate-limited`,
    title: "Too many requests",
    status: 429,
    detail: "too many requests from this address; slow down",
  };
  const body = JSON.stringify(problem);
  // Under /partners every problem also carries `message`, which ASM3's publisher reads (api/plugins/errors.ts).
  const partnerBody = JSON.stringify({ ...problem, message: problem.detail });
  const sweeper = setInterval(() => buckets.sweep(now()), 10_000);
  sweeper.unref();
  app.addHook("onClose", async () => clearInterval(sweeper));
  const refuse = (request: FastifyRequest, reply: FastifyReply): boolean => {
    const wait = buckets.take(clientAddressKey(request.ip), now());
    if (wait === 0) return false;
    reply
      .code(429)
      .header("retry-after", String(Math.max(1, Math.ceil(wait))))
      .type("application/problem+json")
      .send(isPartnerUrl(request.url) ? partnerBody : body);
    return true;
  };
  app.addHook("onRequest", (request, reply, done) => {
    // The partner API's routes limit their calls themselves: by client address until a call is
    // authenticated, then by partner (api/partners/access.ts), so a shelter publishing from one
    // address is not held to one visitor's rate.
    if (request.routeOptions.config.auth === "partner" || !refuse(request, reply)) done();
  });
  return { buckets, refuse };
}
