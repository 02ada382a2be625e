import type { InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IP_BURST, IP_RATE_PER_SECOND, TokenBuckets } from "../../api/plugins/ipLimiter.js";
import { as, buildTestApi, devEnv, type TestApi } from "../helpers/app.js";
import { count, freshIp, lostReportBody, startHarness, type Harness } from "../safety/helpers.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

/**
 * An unpaced burst: every request is dispatched at once, so the bucket sees
 * them back to back. `refillAllowance` is how many tokens the bucket may
 * honestly have refilled while the burst ran (20/s), so a busy machine that
 * stretches the burst cannot make a correct limiter look wrong.
 */
async function burst(api: TestApi, n: number, options: { ip: string; headers?: (i: number) => Record<string, string> }) {
  const started = performance.now();
  const responses = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      api.app.inject({ method: "GET", url: "/healthz", remoteAddress: options.ip, headers: options.headers?.(i) ?? {} }),
    ),
  );
  const refillAllowance = Math.ceil(((performance.now() - started) / 1000) * IP_RATE_PER_SECOND);
  return { statuses: responses.map((r) => r.statusCode), responses, refillAllowance };
}

/** The most successes a burst may see: 40-42 when idle, plus what refilled while it ran. */
function maxSuccesses(b: { refillAllowance: number }): number {
  return Math.max(42, IP_BURST + b.refillAllowance);
}

/** One bucket served the whole burst: it ran dry and refused the rest. */
function expectOneBucket(b: { statuses: number[]; refillAllowance: number }) {
  expect(b.statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(maxSuccesses(b));
  expect(b.statuses.at(-1)).toBe(429);
}

/** Empties the IP's bucket and sends `request` in the same burst, right behind it. */
async function afterEmptying(api: TestApi, ip: string, request: Omit<InjectOptions, "remoteAddress">) {
  const [drain, res] = await Promise.all([burst(api, 60, { ip }), api.app.inject({ ...request, remoteAddress: ip })]);
  expect(drain.statuses).toContain(429);
  return res;
}

describe("the per-IP token bucket allows 20 requests per second with a burst of 40", () => {
  it("gives an unpaced burst of 100 requests from one IP 40-42 successes, then only 429s", async () => {
    const b = await burst(h.api, 100, { ip: freshIp() });
    const { statuses, responses, refillAllowance } = b;
    const ok = statuses.filter((s) => s === 200).length;
    expect(ok).toBeGreaterThanOrEqual(40);
    expect(ok).toBeLessThanOrEqual(maxSuccesses(b));
    const firstRefusal = statuses.indexOf(429);
    expect(firstRefusal).toBeGreaterThanOrEqual(40);
    // after the first refusal, a success can only be a refilled token
    expect(statuses.slice(firstRefusal).filter((s) => s === 200).length).toBeLessThanOrEqual(Math.max(2, refillAllowance));
    const refused = responses.filter((r) => r.statusCode === 429);
    expect(refused.length).toBe(100 - ok);
    for (const res of refused) {
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
      expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/rate-limited$/), status: 429, title: "Too many requests" });
    }
  });

  it("keeps each IP's bucket separate", async () => {
    const a = freshIp();
    const [emptied, other] = await Promise.all([burst(h.api, 60, { ip: a }), burst(h.api, 10, { ip: freshIp() })]);
    expect(emptied.statuses.at(-1)).toBe(429);
    expect(other.statuses).toEqual(Array(10).fill(200));
  });

  it("refills at 20 tokens per second up to 40 (bucket arithmetic on an injected clock)", () => {
    const buckets = new TokenBuckets({ ratePerSecond: IP_RATE_PER_SECOND, burst: IP_BURST });
    let allowed = 0;
    for (let i = 0; i < 100; i++) if (buckets.take("ip", 0) === 0) allowed++;
    expect(allowed).toBe(40);
    expect(buckets.take("ip", 0)).toBeCloseTo(1 / 20);
    let refilled = 0;
    for (let i = 0; i < 100; i++) if (buckets.take("ip", 1000) === 0) refilled++;
    expect(refilled).toBe(20);
    let full = 0;
    for (let i = 0; i < 100; i++) if (buckets.take("ip", 60_000) === 0) full++;
    expect(full).toBe(40);
  });
});

describe("a limited request is refused before authentication and body parsing, and nothing is written", () => {
  it("answers 429 (not 401 or 400) to an invalid bearer token with a malformed body once the bucket is empty", async () => {
    const before = await count(h.db, `select 1 from safety_lost_report`);
    const res = await afterEmptying(h.api, freshIp(), {
      method: "POST",
      url: "/v1/safety/lost-reports",
      headers: { authorization: "Bearer not.a.jwt", "content-type": "application/json" },
      payload: "{ this is not json",
    });
    expect(res.statusCode).toBe(429);
    expect(res.json().type).toMatch(/\/rate-limited$/);
    expect(await count(h.db, `select 1 from safety_lost_report`)).toBe(before);
  });

  it("refuses a valid, well-formed create with 429 and writes no report, outbox row or throttle token", async () => {
    const res = await afterEmptying(h.api, freshIp(), {
      method: "POST",
      url: "/v1/safety/lost-reports",
      headers: as("limited-actor"),
      payload: lostReportBody(),
    });
    expect(res.statusCode).toBe(429);
    expect(await count(h.db, `select 1 from safety_lost_report where reporter_id = 'limited-actor'`)).toBe(0);
    expect(await count(h.db, `select 1 from rate_limit_bucket where key = 'report-create:limited-actor'`)).toBe(0);
  });

  it("answers 429, not 403 account-suspended, to a suspended actor once the bucket is empty", async () => {
    await h.db.pool.query(`insert into account (user_id, suspended_at, suspended_by) values ('suspended-limited', now(), 'admin-1')`);
    const res = await afterEmptying(h.api, freshIp(), { method: "GET", url: "/v1/safety/alerts?lat=0&lon=0", headers: as("suspended-limited") });
    expect(res.statusCode).toBe(429);
  });
});

describe("X-Forwarded-For is honoured only from a proxy in API_TRUSTED_PROXY_CIDRS", () => {
  it("without trusted proxies keys on the peer address: every caller behind a proxy shares one bucket", async () => {
    const shared = await burst(h.api, 60, { ip: freshIp(), headers: (i) => ({ "x-forwarded-for": `203.0.113.${i}` }) });
    expectOneBucket(shared);
  });

  it("behind a trusted proxy keys on the forwarded client, and ignores the header from an untrusted peer", async () => {
    const trusted = await buildTestApi(devEnv(h.db.url, h.bus.url, { API_TRUSTED_PROXY_CIDRS: "127.0.0.1/32" }));
    try {
      const viaProxy = (client: string) => ({ ip: "127.0.0.1", headers: () => ({ "x-forwarded-for": client }) });
      const [first, second] = await Promise.all([
        burst(trusted, 60, viaProxy("198.51.100.1")),
        burst(trusted, 10, viaProxy("198.51.100.2")),
      ]);
      expect(first.statuses.at(-1)).toBe(429);
      expect(second.statuses).toEqual(Array(10).fill(200));

      // Entries a client prepends to the chain are not its address: the proxy's own (last) entry is.
      const chained = await burst(trusted, 60, { ip: "127.0.0.1", headers: (i) => ({ "x-forwarded-for": `6.6.${i}.6, 198.51.100.3` }) });
      expectOneBucket(chained);

      const spoofed = await burst(trusted, 60, { ip: freshIp(), headers: (i) => ({ "x-forwarded-for": `192.0.2.${i}` }) });
      expectOneBucket(spoofed);
    } finally {
      await trusted.close();
    }
  });
});
