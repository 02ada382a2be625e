import type { InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IP_BURST, IP_RATE_PER_SECOND, TokenBuckets } from "../../api/plugins/ip-limiter.js";
import { as, buildTestApi, devEnv, type TestApi } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { eventually } from "../helpers/stream.js";
import { count, freshIp, lostReportBody } from "../safety/helpers.js";

let h: Harness;
/** An API whose limiter reads `clock.ms`: time only moves when a test moves it. */
let limited: TestApi;
const clock = { ms: 1_000_000 };

beforeAll(async () => {
  h = await startHarness();
  limited = await buildTestApi(devEnv(h.db.url, h.bus.url), { clock: () => clock.ms });
});

afterAll(async () => {
  await limited?.close();
  await h?.close();
});

/** A burst: every request is dispatched at once, so the bucket sees them back to back. */
async function burst(api: TestApi, n: number, options: { ip: string; headers?: (i: number) => Record<string, string> }) {
  const responses = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      api.app.inject({ method: "GET", url: "/healthz", remoteAddress: options.ip, headers: options.headers?.(i) ?? {} }),
    ),
  );
  return { statuses: responses.map((r) => r.statusCode), responses };
}

/** n successes, then only refusals: with time standing still, one bucket served the whole burst. */
function servedThenRefused(ok: number, total: number): number[] {
  return [...Array(ok).fill(200), ...Array(total - ok).fill(429)];
}

/** Empties the IP's bucket and sends `request` in the same burst, right behind it. */
async function afterEmptying(api: TestApi, ip: string, request: Omit<InjectOptions, "remoteAddress">) {
  const [drain, res] = await Promise.all([burst(api, 60, { ip }), api.app.inject({ ...request, remoteAddress: ip })]);
  expect(drain.statuses).toContain(429);
  return res;
}

describe("the per-IP token bucket allows 20 requests per second with a burst of 40", () => {
  it("gives a burst of 100 requests from one IP exactly 40 successes, then 429 problems with Retry-After", async () => {
    const { statuses, responses } = await burst(limited, 100, { ip: freshIp() });
    expect(statuses).toEqual(servedThenRefused(IP_BURST, 100));
    for (const res of responses.slice(IP_BURST)) {
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(res.headers["retry-after"]).toBe("1");
      expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/rate-limited$/), status: 429, title: "Too many requests" });
    }
  });

  it("refills 20 tokens a second, and never holds more than 40", async () => {
    const ip = freshIp();
    expect((await burst(limited, 50, { ip })).statuses).toEqual(servedThenRefused(IP_BURST, 50));
    clock.ms += 1_000;
    expect((await burst(limited, 30, { ip })).statuses).toEqual(servedThenRefused(IP_RATE_PER_SECOND, 30));
    clock.ms += 60_000;
    expect((await burst(limited, 50, { ip })).statuses).toEqual(servedThenRefused(IP_BURST, 50));
  });

  it("keeps each IP's bucket separate", async () => {
    const a = freshIp();
    const [emptied, other] = await Promise.all([burst(limited, 60, { ip: a }), burst(limited, 10, { ip: freshIp() })]);
    expect(emptied.statuses).toEqual(servedThenRefused(IP_BURST, 60));
    expect(other.statuses).toEqual(Array(10).fill(200));
  });

  it("runs on the process's monotonic clock: an emptied bucket serves again as time passes", async () => {
    const ip = freshIp();
    const emptied = await burst(h.api, 100, { ip });
    expect(emptied.statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(IP_BURST);
    expect(emptied.statuses).toContain(429);
    // A refused request takes no token, so asking until one is served only waits for the refill.
    await eventually(async () => ((await burst(h.api, 1, { ip })).statuses[0] === 200 ? true : undefined));
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
    const res = await afterEmptying(limited, freshIp(), {
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
    const res = await afterEmptying(limited, freshIp(), {
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
    const res = await afterEmptying(limited, freshIp(), { method: "GET", url: "/v1/safety/alerts?lat=0&lon=0", headers: as("suspended-limited") });
    expect(res.statusCode).toBe(429);
  });
});

describe("X-Forwarded-For is honoured only from a proxy in API_TRUSTED_PROXY_CIDRS", () => {
  it("without trusted proxies keys on the peer address: every caller behind a proxy shares one bucket", async () => {
    const shared = await burst(limited, 60, { ip: freshIp(), headers: (i) => ({ "x-forwarded-for": `203.0.113.${i}` }) });
    expect(shared.statuses).toEqual(servedThenRefused(IP_BURST, 60));
  });

  it("behind a trusted proxy keys on the forwarded client, and ignores the header from an untrusted peer", async () => {
    const trusted = await buildTestApi(devEnv(h.db.url, h.bus.url, { API_TRUSTED_PROXY_CIDRS: "127.0.0.1/32" }), { clock: () => clock.ms });
    try {
      const viaProxy = (client: string) => ({ ip: "127.0.0.1", headers: () => ({ "x-forwarded-for": client }) });
      const [first, second] = await Promise.all([
        burst(trusted, 60, viaProxy("198.51.100.1")),
        burst(trusted, 10, viaProxy("198.51.100.2")),
      ]);
      expect(first.statuses).toEqual(servedThenRefused(IP_BURST, 60));
      expect(second.statuses).toEqual(Array(10).fill(200));

      // Entries a client prepends to the chain are not its address: the proxy's own (last) entry is.
      const chained = await burst(trusted, 60, { ip: "127.0.0.1", headers: (i) => ({ "x-forwarded-for": `6.6.${i}.6, 198.51.100.3` }) });
      expect(chained.statuses).toEqual(servedThenRefused(IP_BURST, 60));

      const spoofed = await burst(trusted, 60, { ip: freshIp(), headers: (i) => ({ "x-forwarded-for": `192.0.2.${i}` }) });
      expect(spoofed.statuses).toEqual(servedThenRefused(IP_BURST, 60));
    } finally {
      await trusted.close();
    }
  });
});
