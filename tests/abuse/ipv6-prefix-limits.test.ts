import type { InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IP_BURST } from "../../api/plugins/ip-limiter.js";
import { buildTestApi, devEnv, type TestApi } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { count, createLostReport, expectProblem, freshActor } from "../safety/helpers.js";
import { animalWithTag, postTagForm } from "../tag/helpers.js";

/**
 * Every per-address limit counts an IPv6 client by its /64 (lib/client-address.ts),
 * through the trusted-proxy path: the app trusts X-Forwarded-For from
 * 127.0.0.1 only, and the client address is the entry that proxy appended.
 * Two addresses of one /64 share a limit; two /64s do not; IPv4 stays per
 * address.
 */
let h: Harness;
/** Behind a trusted proxy, with the in-memory limiter on a clock only the test moves. */
let api: TestApi;
const clock = { ms: 5_000_000 };
const PROXY = "127.0.0.1";

beforeAll(async () => {
  h = await startHarness();
  api = await buildTestApi(devEnv(h.db.url, h.bus.url, { API_TRUSTED_PROXY_CIDRS: `${PROXY}/32` }), { clock: () => clock.ms });
});
afterAll(async () => {
  await api?.close();
  await h?.close();
});

/** A request as the proxy forwards it for `client`. */
const via = (client: string, options: InjectOptions) =>
  api.app.inject({ ...options, remoteAddress: PROXY, headers: { ...options.headers, "x-forwarded-for": client } });

const message = { message: "I think I saw your dog", fromContact: "a@example.org" };
const sendMessage = (reportId: string, client: string) =>
  via(client, { method: "POST", url: `/v1/safety/lost-reports/${reportId}/relay-message`, payload: message });

describe("the in-memory per-address limiter", () => {
  it("gives a burst from many addresses of one /64 one bucket of 40, and another /64 its own", async () => {
    const statuses = await Promise.all(
      Array.from({ length: 60 }, (_, i) => via(`2001:db8:100:1:${(i + 1).toString(16)}::1`, { url: "/healthz" }).then((r) => r.statusCode)),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(IP_BURST);
    expect(statuses.filter((s) => s === 429)).toHaveLength(60 - IP_BURST);
    expect((await via("2001:db8:100:1:ffff:ffff:ffff:ffff", { url: "/healthz" })).statusCode).toBe(429);
    expect((await via("2001:db8:100:2::1", { url: "/healthz" })).statusCode).toBe(200);
  });

  it("keeps IPv4 per address, and an IPv4-mapped address is that IPv4 client", async () => {
    const burst = (client: string) => Promise.all(Array.from({ length: IP_BURST }, () => via(client, { url: "/healthz" }).then((r) => r.statusCode)));
    expect(await burst("192.0.2.10")).toEqual(Array(IP_BURST).fill(200));
    expect((await via("::ffff:192.0.2.10", { url: "/healthz" })).statusCode).toBe(429);
    expect((await via("192.0.2.11", { url: "/healthz" })).statusCode).toBe(200);
  });
});

describe("the Postgres buckets", () => {
  it("contact messages: five from five addresses of one /64 use its hour; a sixth address there is 429, another /64 is not", async () => {
    const id = await createLostReport(h.api, freshActor("owner"));
    for (let i = 1; i <= 5; i++) expect((await sendMessage(id, `2001:db8:200:1::${i}`)).statusCode).toBe(202);
    expectProblem(await sendMessage(id, "2001:db8:200:1:abcd::6"), 429, "rate-limited");
    expect((await sendMessage(id, "2001:db8:200:2::1")).statusCode).toBe(202);
    expect(await count(h.db, `select 1 from rate_limit_bucket where key like 'relay-message:2001:db8:200:%'`)).toBe(2);
    expect(await count(h.db, `select 1 from rate_limit_bucket where key = 'relay-message:2001:db8:200:1::/64'`)).toBe(1);
  });

  it("contact messages: two IPv4 neighbours are two senders", async () => {
    const id = await createLostReport(h.api, freshActor("owner"));
    for (let i = 0; i < 5; i++) expect((await sendMessage(id, "203.0.113.70")).statusCode).toBe(202);
    expectProblem(await sendMessage(id, "203.0.113.70"), 429, "rate-limited");
    expect((await sendMessage(id, "203.0.113.71")).statusCode).toBe(202);
  });

  it("tag page views: 30 from addresses of one /64, then that /64 is refused and another is not", async () => {
    const { token } = await animalWithTag(h.api, freshActor("owner"));
    const view = (client: string) => via(client, { url: `/t/${token}`, headers: { accept: "text/html" } });
    for (let i = 1; i <= 30; i++) expect((await view(`2001:db8:300:1::${i.toString(16)}`)).statusCode).toBe(200);
    clock.ms += 60_000; // the in-memory limiter is not what refuses here
    expect((await view("2001:db8:300:1:9::9")).statusCode).toBe(429);
    expect((await view("2001:db8:300:2::1")).statusCode).toBe(200);
    expect(await count(h.db, `select 1 from rate_limit_bucket where key = 'tag-scan:2001:db8:300:1::/64'`)).toBe(1);
  });

  it("the tag page's form shares the /64's contact-message hour with the API route", async () => {
    const id = await createLostReport(h.api, freshActor("owner"));
    const { token } = await animalWithTag(h.api, freshActor("owner"));
    for (let i = 1; i <= 5; i++) expect((await sendMessage(id, `2001:db8:400:1::${i}`)).statusCode).toBe(202);
    const form = (client: string) =>
      postTagForm(api, token, { message: "hello", fromContact: "x" }, { remoteAddress: PROXY, headers: { "x-forwarded-for": client } });
    expect((await form("2001:db8:400:1::77")).statusCode).toBe(429);
    expect((await form("2001:db8:400:2::77")).statusCode).toBe(200);
  });
});
