import type { AddressInfo } from "node:net";
import type { InjectOptions } from "fastify";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMetricsRegistry } from "../../lib/metrics.js";
import { SMS_REPLIES } from "../../lib/sms/keywords.js";
import { as, buildTestApi, devEnv, type TestApi } from "../helpers/app.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestBus, type TestBus } from "../helpers/nats.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import type { TestSmsProvider } from "../helpers/sms-provider.js";
import { eventually } from "../helpers/stream.js";
import { createLostReport, freshIp } from "../safety/helpers.js";
import { SMS, SMS_API_ENV, smsDeliverers, startSmsProvider, textTo, verifyPhone } from "./support.js";

/**
 * The masked conversation (contract part 4, "SMS", masked relay), end to end
 * on the real path: the finder's contact message through the API, the outbox,
 * the relay, JetStream and the notifier's consumer to an sms notification,
 * delivered through the provider to the owner's phone; the owner's reply and
 * the finder's answer come back as signed inbound webhooks and go out through
 * delivery jobs. The owner's number is in no API response, notification,
 * event, job or log line.
 */

let db: TestDatabase;
let bus: TestBus;
let api: TestApi;
let provider: TestSmsProvider;
let pipeline: Pipeline;
const logLines: string[] = [];

const OWNER = "relay-owner";
const OWNER_PHONE = "+4917612300001";
const FINDER_PHONE = "+4917612300002";
/** The owner's number as people write it: none of these may appear anywhere but the owner's own phone and the provider. */
const OWNER_FORMS = [OWNER_PHONE, "17612300001", "0176 1230 0001", "12300001"];

beforeAll(async () => {
  db = await createTestDatabase();
  bus = await startTestBus();
  const logger = pino({ level: "trace" }, new Writable({ write: (chunk, _enc, done) => (logLines.push(String(chunk)), done()) }));
  api = await buildTestApi(devEnv(db.url, bus.url, { ...SMS_API_ENV, LOG_LEVEL: "trace" }), { logger });
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  const port = (api.app.server.address() as AddressInfo).port;
  provider = await startSmsProvider(() => `http://127.0.0.1:${port}`);
  pipeline = await startPipeline(api.pool, api.nc, { deliverers: smsDeliverers(api.pool, provider, createMetricsRegistry("notifier")) });
});

afterAll(async () => {
  await pipeline?.stop();
  await provider?.close();
  await api?.close();
  await bus?.dispose();
  await db?.drop();
});

/** Every response the test sees, to look for the owner's number in. */
const responses: string[] = [];
async function inject(options: InjectOptions) {
  const res = await api.app.inject(options);
  responses.push(res.body);
  return res;
}

describe("a relay message reaches an owner who opted in by SMS, and the two talk by text through the service's number", () => {
  let reportId: string;
  let shortLink: string;

  it("texts the finder's message to the owner's verified phone, without the finder's number, saying a reply goes through the service", async () => {
    await verifyPhone({ h: { api }, provider }, OWNER, OWNER_PHONE);
    reportId = await createLostReport(api, OWNER);
    const sent = await inject({
      method: "POST",
      url: `/v1/safety/lost-reports/${reportId}/relay-message`,
      remoteAddress: freshIp(),
      payload: { message: "I think I saw your beagle near the bakery on Main Street.", fromContact: "Anna, 0176 1230 0002" },
    });
    expect(sent.statusCode, sent.body).toBe(202);

    const text = await textTo(provider, OWNER_PHONE, /beagle/);
    await eventually(async () => (await db.pool.query(`select 1 from sms_conversation`)).rows[0]);
    expect(text.from).toBe(SMS.from);
    expect(text.body).toMatch(/^Animal Safety: Someone sent a message about your lost animal\. Reply to this text to answer; your number stays hidden\./);
    expect(text.body).toContain(`"I think I saw your beagle near the bakery on Main Street."`);
    expect(text.body).not.toMatch(/1230 ?0002|12300002/);
    // It ends with the report's short link, which leads to its page.
    const { rows } = await db.pool.query(`select short_code from safety_lost_report where id = $1`, [reportId]);
    shortLink = `${SMS.publicBaseUrl}/s/${rows[0].short_code}`;
    expect(text.body.endsWith(shortLink)).toBe(true);
    const opened = await inject({ method: "GET", url: new URL(shortLink).pathname });
    expect(opened.statusCode).toBe(301);
    expect(opened.headers.location).toBe(`/lost/${reportId}`);
    // The in-app notification stands beside it.
    const mine = await inject({ method: "GET", url: "/v1/me/notifications", headers: as(OWNER) });
    expect(mine.json().items.map((n: { channel: string }) => n.channel).sort()).toEqual(expect.arrayContaining(["in_app", "sms"]));
  });

  it("sends the owner's reply to the finder from the service's number; the first text says how to stop", async () => {
    const inbound = await provider.textFrom(OWNER_PHONE, "Thank you so much! Is he still there?");
    expect(inbound.status).toBe(200);
    const text = await textTo(provider, FINDER_PHONE, /still there/);
    expect(text.from).toBe(SMS.from);
    expect(text.body).toMatch(/^Reply STOP to get no more texts\. Animal Safety: a reply to your message about the lost animal: "Thank you so much! Is he still there\?" Reply to this text to answer\./);
    expect(text.body.endsWith(shortLink)).toBe(true);
    for (const form of OWNER_FORMS) expect(text.body).not.toContain(form);
  });

  it("brings the finder's answer back to the owner, by text and in the app", async () => {
    await provider.textFrom(FINDER_PHONE, "Yes, he is sitting by the bakery door.");
    const text = await textTo(provider, OWNER_PHONE, /bakery door/);
    expect(text.from).toBe(SMS.from);
    expect(text.body).toMatch(/^Animal Safety: a reply about the lost animal: "Yes, he is sitting by the bakery door\." Reply to this text to answer/);
    expect(text.body).not.toContain(FINDER_PHONE);
    const mine = await inject({ method: "GET", url: "/v1/me/notifications", headers: as(OWNER) });
    const inApp = mine.json().items.find((n: { channel: string; body: string }) => n.channel === "in_app" && n.body.includes("bakery door"));
    expect(inApp).toMatchObject({ kind: "relay_message", data: { lostReportId: reportId } });

    // A second round: the finder has written back, so no more how-to-stop line.
    await provider.textFrom(OWNER_PHONE, "On my way!");
    const again = await textTo(provider, FINDER_PHONE, /On my way/);
    expect(again.body).toMatch(/^Animal Safety: a reply/);
  });

  it("gives a reply with no conversation within 7 days the HELP text", async () => {
    await db.pool.query(`update sms_conversation set last_at = now() - interval '8 days'`);
    await provider.textFrom(FINDER_PHONE, "Hello? Are you coming?");
    const help = await textTo(provider, FINDER_PHONE, /texts about lost and found animals/);
    expect(help.body.startsWith(SMS_REPLIES.help)).toBe(true);
    expect(provider.textsTo(OWNER_PHONE).some((t) => /Are you coming/.test(t.body))).toBe(false);
  });

  it("tells the owner when the finder left no phone number, instead of passing the reply on", async () => {
    const sent = await inject({
      method: "POST",
      url: `/v1/safety/lost-reports/${reportId}/relay-message`,
      remoteAddress: freshIp(),
      payload: { message: "Saw a beagle at the station.", fromContact: "anna@example.org" },
    });
    expect(sent.statusCode).toBe(202);
    await textTo(provider, OWNER_PHONE, /station/);
    // The conversation starts once the delivery recorded the provider's answer, a moment after the provider took the text.
    await eventually(async () => (await db.pool.query(`select 1 from sms_conversation where finder_number_id is null`)).rows[0]);
    await provider.textFrom(OWNER_PHONE, "Which station?");
    const told = await textTo(provider, OWNER_PHONE, /could not be passed on/);
    expect(told.body.startsWith(SMS_REPLIES.noFinderPhone)).toBe(true);
  });

  it("never shows the owner's number: in no response, notification, event, job or log line", async () => {
    // The share page and the public report view, as a finder sees them.
    await inject({ method: "GET", url: `/lost/${reportId}` });
    await inject({ method: "GET", url: `/v1/safety/lost-reports/${reportId}` });
    await inject({ method: "GET", url: "/v1/me/notification-preferences", headers: as(OWNER) });
    await eventually(async () => ((await db.pool.query(`select count(*)::int as n from notification where status = 'pending'`)).rows[0].n === 0 ? true : undefined));
    const stored = await db.pool.query<{ t: string }>(
      `select subject || ' ' || body || ' ' || data::text || ' ' || recipient_actor_id || ' ' || coalesce(last_error, '') as t from notification
       union all select payload::text from outbox_event
       union all select payload::text from graphile_worker._private_jobs`,
    );
    const places = { responses, stored: stored.rows.map((r) => r.t), logs: logLines };
    expect(stored.rows.length).toBeGreaterThan(5);
    expect(logLines.length).toBeGreaterThan(10);
    for (const [where, texts] of Object.entries(places)) {
      for (const form of OWNER_FORMS) expect(texts.filter((t) => t.includes(form)), `${where}: ${form}`).toEqual([]);
    }
  });
});
