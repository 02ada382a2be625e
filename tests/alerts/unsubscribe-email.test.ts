import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDigest } from "../../jobs/scheduled/alerts-digest.js";
import { buildDeliverers } from "../../jobs/delivery/deliverers/index.js";
import { as } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { eventually } from "../helpers/stream.js";
import { startSmtpServer, type ReceivedMail, type TestSmtpServer } from "../notifier/smtp.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createLostReport, freshActor } from "../safety/helpers.js";
import { dayAfter, offset } from "./helpers.js";

/**
 * nearby_lost emails carry RFC 8058 one-click unsubscribe headers, sent to a
 * real SMTP server; POSTing the link as a mail provider does deletes the
 * subscription, without a login.
 */
let h: Harness;
let smtp: TestSmtpServer;
let pipeline: Pipeline;
const PUBLIC_BASE = "https://alerts.example.org";

beforeAll(async () => {
  h = await startHarness();
  smtp = await startSmtpServer();
  const deliverers = buildDeliverers({
    SMTP_URL: smtp.url,
    SMTP_FROM: "Animal Safety <no-reply@example.org>",
    API_PUBLIC_BASE_URL: PUBLIC_BASE,
    ALERT_UNSUBSCRIBE_SECRET: h.api.config.ALERT_UNSUBSCRIBE_SECRET,
  });
  pipeline = await startPipeline(h.api.pool, h.api.nc, { deliverers });
});
afterAll(async () => {
  await pipeline?.stop();
  await smtp?.close();
  await h?.close();
});

/** The message's header block, unfolded (RFC 5322 §2.2.3), as name → values. */
function headersOf(mail: ReceivedMail): Map<string, string[]> {
  const block = mail.raw.split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, " ");
  const headers = new Map<string, string[]>();
  for (const line of block.split(/\r?\n/)) {
    const at = line.indexOf(":");
    const name = line.slice(0, at).trim().toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(at + 1).trim()]);
  }
  return headers;
}

const mailTo = (address: string, subject: RegExp) =>
  eventually(async () => smtp.received.find((m) => m.to.includes(address) && subject.test(headersOf(m).get("subject")?.[0] ?? "")), 20_000);

async function subscribeWithEmail(actor: string, email: string, point: { lat: number; lon: number }): Promise<string> {
  const prefs = await call(h.api, { method: "PUT", url: "/v1/me/notification-preferences", headers: as(actor), payload: { email } });
  expect(prefs.statusCode, prefs.body).toBe(200);
  const res = await call(h.api, { method: "POST", url: "/v1/me/alert-subscriptions", headers: as(actor), payload: { location: point, radiusKm: 5 } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

/** POSTs the List-Unsubscribe URL the way RFC 8058 tells a mail provider to. */
function oneClick(url: string) {
  const { pathname, search } = new URL(url);
  return call(h.api, {
    method: "POST",
    url: `${pathname}${search}`,
    headers: { "content-type": "application/x-www-form-urlencoded" },
    payload: "List-Unsubscribe=One-Click",
  });
}

const listUnsubscribe = (mail: ReceivedMail) => {
  const headers = headersOf(mail);
  expect(headers.get("list-unsubscribe-post")).toEqual(["List-Unsubscribe=One-Click"]);
  const values = headers.get("list-unsubscribe") ?? [];
  expect(values).toHaveLength(1);
  const match = /^<([^>]+)>$/.exec(values[0]!);
  expect(match, values[0]).not.toBeNull();
  return match![1]!;
};

const spot = { lat: 43.604652, lon: 1.444209 };

describe("a nearby_lost email", () => {
  it("has List-Unsubscribe (the API's one-click URL) and List-Unsubscribe-Post, and the link deletes the subscription", async () => {
    const actor = freshActor("mailed");
    const subscriptionId = await subscribeWithEmail(actor, "mailed@example.org", offset(spot, 1));
    await createLostReport(h.api, freshActor("reporter"), { location: spot });
    const mail = await mailTo("mailed@example.org", /lost near you/);

    const url = listUnsubscribe(mail);
    expect(url.startsWith(`${PUBLIC_BASE}/v1/alert-subscriptions/unsubscribe?token=`)).toBe(true);
    const first = await oneClick(url);
    expect(first.statusCode, first.body).toBe(200);
    expect((await call(h.api, { url: "/v1/me/alert-subscriptions", headers: as(actor) })).json().items).toEqual([]);
    // Already gone: still 200 (a provider may retry).
    expect((await oneClick(url)).statusCode).toBe(200);
    const { rows } = await h.db.pool.query(`select count(*)::int as n from alert_subscription where id = $1`, [subscriptionId]);
    expect(rows[0].n).toBe(0);
  });

  it("of another kind carries no unsubscribe headers", async () => {
    const owner = freshActor("owner");
    await call(h.api, { method: "PUT", url: "/v1/me/notification-preferences", headers: as(owner), payload: { email: "owner@example.org" } });
    const reportId = await createLostReport(h.api, owner, { location: offset(spot, 30) });
    const sent = await call(h.api, {
      method: "POST",
      url: `/v1/safety/lost-reports/${reportId}/relay-message`,
      payload: { message: "Saw your dog", fromContact: "a finder" },
    });
    expect(sent.statusCode).toBe(202);
    const mail = await mailTo("owner@example.org", /message about your lost animal/);
    expect(headersOf(mail).has("list-unsubscribe")).toBe(false);
    expect(headersOf(mail).has("list-unsubscribe-post")).toBe(false);
  });

  it("a digest's link deletes the subscriptions the digest was about", async () => {
    const actor = freshActor("digested");
    const place = offset(spot, 0, 60);
    const subscriptionId = await subscribeWithEmail(actor, "digested@example.org", place);
    await h.db.pool.query(
      `insert into alert_daily_quota (actor_id, day, sent) values ($1, (now() at time zone 'utc')::date, 20)`,
      [actor],
    );
    const reportId = await createLostReport(h.api, freshActor("reporter"), { location: place });
    // Already at the cap: the fan-out defers them at once, and the morning digest lists the report.
    const day = await eventually(async () => {
      const { rows } = await h.db.pool.query(
        `select to_char((created_at at time zone 'utc')::date, 'YYYY-MM-DD') as day from alert_fanout where report_id = $1 and status = 'done' and deferred = 1`,
        [reportId],
      );
      return rows[0]?.day as string | undefined;
    }, 20_000);
    const tomorrow = dayAfter(day);
    expect((await runDigest(h.api.pool, tomorrow)).notifications).toBe(2);
    const mail = await mailTo("digested@example.org", /more lost animal near you/);
    expect((await oneClick(listUnsubscribe(mail))).statusCode).toBe(200);
    const { rows } = await h.db.pool.query(`select count(*)::int as n from alert_subscription where id = $1`, [subscriptionId]);
    expect(rows[0].n).toBe(0);
  });
});
