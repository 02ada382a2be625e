import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { as, buildTestApi, devEnv, TEST_STREAM, type TestApi } from "../helpers/app.js";
import { freePort } from "../helpers/nats.js";
import { ServiceProcess } from "../helpers/processes.js";
import { eventually, readStream } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, createFoundReport, createLostReport, expectProblem, freshActor, freshIp, moderate } from "./helpers.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

const body = { message: "I think I saw your dog near the park", fromContact: "jane@example.com" };

const send = (api: TestApi, id: string, options: { ip?: string; headers?: Record<string, string>; payload?: object } = {}) =>
  api.app.inject({
    method: "POST",
    url: `/v1/safety/lost-reports/${id}/relay-message`,
    remoteAddress: options.ip ?? freshIp(),
    headers: options.headers ?? {},
    payload: options.payload ?? body,
  });

const messages = (id: string) => count(h.db, `select 1 from safety_relay_message where lost_report_id = $1`, [id]);

describe("POST relay-message takes no auth, stores the message and emits the event for the report owner", () => {
  it("returns 202 {id}, stores safety_relay_message and writes the outbox event with the owner as recipient", async () => {
    const owner = freshActor("owner");
    const id = await createLostReport(h.api, owner);
    const res = await send(h.api, id);
    expect(res.statusCode).toBe(202);
    const { id: messageId } = res.json();
    expect(Object.keys(res.json())).toEqual(["id"]);
    expect(res.body).not.toContain(owner);
    const stored = await h.db.pool.query(`select lost_report_id, message, from_contact from safety_relay_message where id = $1`, [messageId]);
    expect(stored.rows).toEqual([{ lost_report_id: id, message: body.message, from_contact: body.fromContact }]);
    const outbox = await h.db.pool.query(`select type, payload from outbox_event where payload->>'relayMessageId' = $1`, [messageId]);
    expect(outbox.rows).toEqual([
      {
        type: EventType.ContactMessageReceived,
        payload: { recipientActorId: owner, lostReportId: id, relayMessageId: messageId, ...body },
      },
    ]);
  });

  it("reaches the bus as events.safety.relay_message_received.v1 through the relay", async () => {
    const id = await createLostReport(h.api, freshActor("owner"));
    const res = await send(h.api, id);
    const relayProcess = ServiceProcess.start(
      "relay",
      devEnv(h.db.url, h.bus.url, { RELAY_HEALTH_ADDR: `127.0.0.1:${await freePort()}`, LOG_LEVEL: "info" }),
    );
    try {
      // The relay's start is part of the wait: a deadline for a loaded machine.
      const message = await eventually(
        async () => (await readStream(h.api.nc, TEST_STREAM)).find((m) => m.body.data.relayMessageId === res.json().id),
        30_000,
      );
      expect(message.subject).toBe(EventType.ContactMessageReceived);
      expect(message.body.data).toMatchObject({ lostReportId: id, message: body.message, fromContact: body.fromContact });
    } finally {
      await relayProcess.stop();
    }
  });

  it.each([
    ["an empty message", { message: "", fromContact: "a@b.c" }],
    ["a message over 2000 characters", { message: "x".repeat(2001), fromContact: "a@b.c" }],
    ["a missing fromContact", { message: "hello" }],
    ["a fromContact over 200 characters", { message: "hello", fromContact: "x".repeat(201) }],
  ])("refuses %s with 400 validation-failed and writes nothing", async (_name, payload) => {
    const id = await createLostReport(h.api, freshActor());
    expectProblem(await send(h.api, id, { payload }), 400, "validation-failed");
    expect(await messages(id)).toBe(0);
    expect(await count(h.db, `select 1 from outbox_event where payload->>'lostReportId' = $1`, [id])).toBe(0);
  });

  it("answers 404 for an unknown or moderated report and 409 for a resolved one", async () => {
    expectProblem(await send(h.api, crypto.randomUUID()), 404, "not-found");
    const hidden = await createLostReport(h.api, freshActor());
    await moderate(h.db, "lost_report", hidden);
    expectProblem(await send(h.api, hidden), 404, "not-found");
    const owner = freshActor();
    const resolved = await createLostReport(h.api, owner);
    await call(h.api, { method: "POST", url: `/v1/safety/lost-reports/${resolved}/resolve`, headers: as(owner), payload: { outcome: "reunited" } });
    expectProblem(await send(h.api, resolved), 409, "conflict");
    expect(await messages(hidden)).toBe(0);
    expect(await messages(resolved)).toBe(0);
  });

  it("refuses a suspended actor who presents a credential (403), even on this public route", async () => {
    const id = await createLostReport(h.api, freshActor());
    await h.db.pool.query(`insert into account (user_id, suspended_at, suspended_by) values ('banned', now(), 'admin-1')`);
    expectProblem(await send(h.api, id, { headers: as("banned") }), 403, "account-suspended");
    expect(await messages(id)).toBe(0);
  });
});

describe("contact messages are limited to 5 per hour per client IP", () => {
  it("gives the 6th message from one IP 429 with Retry-After, while another IP still gets through", async () => {
    const ip = freshIp();
    const reports = await Promise.all(Array.from({ length: 6 }, () => createLostReport(h.api, freshActor())));
    for (const id of reports.slice(0, 5)) expect((await send(h.api, id, { ip })).statusCode).toBe(202);
    const sixth = await send(h.api, reports[5]!, { ip });
    expectProblem(sixth, 429, "rate-limited");
    expect(Number(sixth.headers["retry-after"])).toBeGreaterThan(0);
    expect(await messages(reports[5]!)).toBe(0);
    expect((await send(h.api, reports[5]!)).statusCode).toBe(202);
  });

  it("lets exactly 5 of 10 concurrent messages from one IP through", async () => {
    const ip = freshIp();
    const id = await createLostReport(h.api, freshActor());
    const results = await Promise.all(Array.from({ length: 10 }, () => send(h.api, id, { ip })));
    expect(results.filter((r) => r.statusCode === 202)).toHaveLength(5);
    expect(results.filter((r) => r.statusCode === 429)).toHaveLength(5);
    expect(await messages(id)).toBe(5);
  });

  it("without trusted proxies ignores X-Forwarded-For: callers behind one proxy share its bucket", async () => {
    const proxy = freshIp();
    const id = await createLostReport(h.api, freshActor());
    for (let i = 0; i < 5; i++) {
      const res = await send(h.api, id, { ip: proxy, headers: { "x-forwarded-for": `203.0.113.${i + 1}` } });
      expect(res.statusCode).toBe(202);
    }
    const res = await send(h.api, id, { ip: proxy, headers: { "x-forwarded-for": "203.0.113.99" } });
    expectProblem(res, 429, "rate-limited");
    expect(await count(h.db, `select 1 from rate_limit_bucket where key like 'relay-message:203.0.113.%'`)).toBe(0);
  });

  it("behind a trusted proxy keys on the X-Forwarded-For client, and ignores it from an untrusted peer", async () => {
    const trusted = await buildTestApi(devEnv(h.db.url, h.bus.url, { API_TRUSTED_PROXY_CIDRS: "127.0.0.1/32" }));
    try {
      const id = await createLostReport(h.api, freshActor());
      for (let i = 0; i < 5; i++) {
        expect((await send(trusted, id, { ip: "127.0.0.1", headers: { "x-forwarded-for": "198.51.100.17" } })).statusCode).toBe(202);
      }
      expectProblem(await send(trusted, id, { ip: "127.0.0.1", headers: { "x-forwarded-for": "198.51.100.17" } }), 429, "rate-limited");
      expect((await send(trusted, id, { ip: "127.0.0.1", headers: { "x-forwarded-for": "198.51.100.18" } })).statusCode).toBe(202);

      const untrustedPeer = freshIp();
      for (let i = 0; i < 5; i++) {
        const res = await send(trusted, id, { ip: untrustedPeer, headers: { "x-forwarded-for": `192.0.2.${i + 1}` } });
        expect(res.statusCode).toBe(202);
      }
      expectProblem(await send(trusted, id, { ip: untrustedPeer, headers: { "x-forwarded-for": "192.0.2.77" } }), 429, "rate-limited");
      expect(await count(h.db, `select 1 from rate_limit_bucket where key = $1`, [`relay-message:${untrustedPeer}`])).toBe(1);
    } finally {
      await trusted.close();
    }
  });

  it("behind a trusted proxy keys on the entry the proxy appended, so prepending fake entries buys no fresh bucket", async () => {
    const trusted = await buildTestApi(devEnv(h.db.url, h.bus.url, { API_TRUSTED_PROXY_CIDRS: "127.0.0.1/32" }));
    try {
      const id = await createLostReport(h.api, freshActor());
      const viaProxy = (chain: string) => send(trusted, id, { ip: "127.0.0.1", headers: { "x-forwarded-for": chain } });
      const bucket = (ip: string) => count(h.db, `select 1 from rate_limit_bucket where key = $1`, [`relay-message:${ip}`]);
      expect((await viaProxy("6.6.6.6, 198.51.100.7")).statusCode).toBe(202);
      expect(await bucket("198.51.100.7")).toBe(1);
      expect(await bucket("6.6.6.6")).toBe(0);
      for (let i = 1; i < 5; i++) expect((await viaProxy(`6.6.6.${i}, 198.51.100.7`)).statusCode).toBe(202);
      expectProblem(await viaProxy("7.7.7.7, 6.6.6.6, 198.51.100.7"), 429, "rate-limited");
      expect(await count(h.db, `select 1 from rate_limit_bucket where key like 'relay-message:6.6.6.%' or key like 'relay-message:7.%'`)).toBe(0);
      expect(await messages(id)).toBe(5);
    } finally {
      await trusted.close();
    }
  });
});

describe("a report is told of 20 contact messages a day one by one; past that they are held, never refused", () => {
  const heldFlags = async (id: string) =>
    (await h.db.pool.query(`select held from safety_relay_message where lost_report_id = $1 order by created_at, id`, [id])).rows.map((r) => r.held);
  const heldEvents = (id: string) =>
    count(h.db, `select 1 from outbox_event where type = $1 and payload->>'lostReportId' = $2 and payload->>'held' = 'true'`, [
      EventType.ContactMessageReceived,
      id,
    ]);

  it("accepts the 21st message from a 21st address with 202, stored held with a held event; other reports are unaffected", async () => {
    const id = await createLostReport(h.api, freshActor());
    for (let i = 0; i < 20; i++) expect((await send(h.api, id)).statusCode).toBe(202);
    const past = await send(h.api, id);
    expect(past.statusCode, past.body).toBe(202);
    expect(await heldFlags(id)).toEqual([...Array(20).fill(false), true]);
    const { rows } = await h.db.pool.query(`select payload from outbox_event where payload->>'relayMessageId' = $1`, [past.json().id]);
    expect(rows).toEqual([{ payload: expect.objectContaining({ lostReportId: id, held: true, message: body.message }) }]);
    expect(await heldEvents(id)).toBe(1);
    const other = await createLostReport(h.api, freshActor());
    expect((await send(h.api, other)).statusCode).toBe(202);
    expect(await heldFlags(other)).toEqual([false]);
  });

  it("holds under concurrency: 30 simultaneous messages from 30 addresses are all taken, 20 told and 10 held", async () => {
    const id = await createLostReport(h.api, freshActor());
    const results = await Promise.all(Array.from({ length: 30 }, () => send(h.api, id)));
    expect(results.map((r) => r.statusCode)).toEqual(Array(30).fill(202));
    const flags = await heldFlags(id);
    expect(flags.filter((held) => !held)).toHaveLength(20);
    expect(flags.filter((held) => held)).toHaveLength(10);
    expect(await heldEvents(id)).toBe(10);
  });

  it("tells the owner again once the oldest message is more than a day old", async () => {
    const id = await createLostReport(h.api, freshActor());
    for (let i = 0; i < 20; i++) expect((await send(h.api, id)).statusCode).toBe(202);
    await h.db.pool.query(
      `update safety_relay_message set created_at = now() - interval '25 hours'
       where id = (select id from safety_relay_message where lost_report_id = $1 order by created_at limit 1)`,
      [id],
    );
    expect((await send(h.api, id)).statusCode).toBe(202);
    expect((await send(h.api, id)).statusCode).toBe(202);
    expect((await heldFlags(id)).slice(-2)).toEqual([false, true]);
  });
});

describe("POST /v1/safety/found-reports/{id}/relay-message reaches the finder the same way", () => {
  const toFinder = (id: string, ip = freshIp()) =>
    h.api.app.inject({ method: "POST", url: `/v1/safety/found-reports/${id}/relay-message`, remoteAddress: ip, payload: body });

  it("stores the message on the found report and emits the event with the finder as recipient, exposing no one", async () => {
    const finder = freshActor("finder");
    const id = await createFoundReport(h.api, finder);
    const res = await toFinder(id);
    expect(res.statusCode, res.body).toBe(202);
    expect(res.body).not.toContain(finder);
    expect(await count(h.db, `select 1 from safety_relay_message where found_report_id = $1 and lost_report_id is null`, [id])).toBe(1);
    const { rows } = await h.db.pool.query(`select payload from outbox_event where type = $1 and payload->>'relayMessageId' = $2`, [
      EventType.ContactMessageReceived,
      res.json().id,
    ]);
    expect(rows[0].payload).toMatchObject({ recipientActorId: finder, foundReportId: id });
    expect(rows[0].payload.lostReportId).toBeUndefined();
  });

  it("shares the per-IP limit with the lost-report door: the sixth message in an hour from one address is 429", async () => {
    const ip = freshIp();
    const lost = await createLostReport(h.api, freshActor("owner"));
    const found = await createFoundReport(h.api, freshActor("finder"));
    for (let i = 0; i < 3; i++) expect((await send(h.api, lost, { ip })).statusCode).toBe(202);
    for (let i = 0; i < 2; i++) expect((await toFinder(found, ip)).statusCode).toBe(202);
    expectProblem(await toFinder(found, ip), 429, "rate-limited");
  });

  it("refuses a closed found report with 409 and an unknown one with 404, writing nothing", async () => {
    const finder = freshActor("finder");
    const id = await createFoundReport(h.api, finder);
    const resolved = await call(h.api, {
      method: "POST",
      url: `/v1/safety/found-reports/${id}/resolve`,
      headers: as(finder),
      payload: { outcome: "reunited" },
    });
    expect(resolved.statusCode).toBe(200);
    expectProblem(await toFinder(id), 409, "conflict");
    expectProblem(await toFinder(crypto.randomUUID()), 404, "not-found");
    expect(await count(h.db, `select 1 from safety_relay_message where found_report_id = $1`, [id])).toBe(0);
  });
});
