import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadApiConfig } from "../../lib/config.js";
import { DELIVERY_TASKS } from "../../jobs/delivery/task.js";
import { CONFIRMATION_GONE, reasonCategory } from "../../lib/notifications.js";
import { enqueue } from "../../jobs/queue.js";
import { buildDeliverers } from "../../jobs/delivery/deliverers/index.js";
import { as, buildTestApi, devEnv, type TestApi } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { eventually } from "../helpers/stream.js";
import { startSmtpServer, type ReceivedMail, type TestSmtpServer } from "../notifier/smtp.js";
import { deliveryJobsFor } from "../notifier/support.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createLostReport, freshActor } from "../safety/helpers.js";

/**
 * Email goes only to a confirmed address. Setting an address sends one
 * confirmation email through the real pipeline (outbox, relay, JetStream,
 * delivery job) to a real SMTP server; the test reads the link from the
 * received mail and follows it as a browser would.
 */
let h: Harness;
let smtp: TestSmtpServer;
let pipeline: Pipeline;
const PUBLIC_BASE = "https://api.example.org";
const BROWSER = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };

beforeAll(async () => {
  h = await startHarness({ EMAIL_VERIFICATION: "required" });
  smtp = await startSmtpServer();
  const deliverers = buildDeliverers({ SMTP_URL: smtp.url, SMTP_FROM: "Animal Safety <no-reply@example.org>", API_PUBLIC_BASE_URL: PUBLIC_BASE });
  pipeline = await startPipeline(h.api.pool, h.api.nc, { deliverers });
});
afterAll(async () => {
  await pipeline?.stop();
  await smtp?.close();
  await h?.close();
});

/** The mail's text part, quoted-printable decoded (nodemailer wraps long lines with soft breaks). */
function textOf(mail: ReceivedMail): string {
  const [head = "", ...rest] = mail.raw.split(/\r?\n\r?\n/);
  const body = rest.join("\n\n");
  if (!/content-transfer-encoding:\s*quoted-printable/i.test(head)) return body;
  return body.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

const mailsTo = (address: string) => smtp.received.filter((m) => m.to.includes(address));

/** Waits for the count-th mail to the address and returns it. */
const nthMailTo = (address: string, count = 1) => eventually(async () => mailsTo(address)[count - 1], 20_000);

/** The confirmation link in a mail, as a path and query to inject. */
function linkIn(mail: ReceivedMail): { url: string; token: string } {
  const match = /https:\/\/api\.example\.org(\/v1\/me\/email\/confirm\?token=([A-Za-z0-9_-]+))/.exec(textOf(mail));
  expect(match, textOf(mail)).not.toBeNull();
  return { url: match![1]!, token: match![2]! };
}

const setEmail = (actor: string, email: string | null, api: TestApi = h.api) =>
  call(api, { method: "PUT", url: "/v1/me/notification-preferences", headers: as(actor), payload: { email } });

const preferences = async (actor: string) =>
  (await call(h.api, { method: "GET", url: "/v1/me/notification-preferences", headers: as(actor) })).json();

const follow = (url: string, headers: Record<string, string> = BROWSER) => call(h.api, { method: "GET", url, headers });

const confirmationRows = async (actor: string) =>
  (await h.db.pool.query(`select id, status from notification where recipient_actor_id = $1 and kind = 'email_confirmation'`, [actor])).rows;

/** Sets the address and waits for its confirmation email; returns the link. */
async function requestLink(actor: string, email: string): Promise<{ url: string; token: string }> {
  const res = await setEmail(actor, email);
  expect(res.statusCode, res.body).toBe(200);
  return linkIn(await nthMailTo(email));
}

describe("setting an address sends one confirmation email, and its link confirms the address", () => {
  it("sends exactly one email with a single-use 24 h link, stores only the token's hash, and confirms on the link", async () => {
    const actor = freshActor("confirm");
    const email = `${actor}@example.org`;
    const put = await setEmail(actor, email);
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toMatchObject({ email, emailStatus: "pending", channel: "in_app" });

    const mail = await nthMailTo(email);
    expect(mail.raw).toMatch(/^Subject: Confirm your email address/m);
    const { url, token } = linkIn(mail);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Only one, once the pipeline is done with it: the row is sent and no job is left that could send it again.
    await eventually(async () => {
      const [row] = await confirmationRows(actor);
      return row?.status === "sent" && (await deliveryJobsFor(h.db.pool, row.id)) === 0 ? true : undefined;
    });
    expect(mailsTo(email)).toHaveLength(1);
    expect(await confirmationRows(actor)).toEqual([{ id: expect.any(String), status: "sent" }]);

    // Stored hashed, expiring 24 h after the email went out; the raw token is in no row, event, job or audit.
    const { rows } = await h.db.pool.query(
      `select token_hash, extract(epoch from expires_at - now()) as ttl from email_confirmation where actor_id = $1`,
      [actor],
    );
    expect(rows[0].token_hash).toEqual(createHash("sha256").update(token).digest());
    expect(Number(rows[0].ttl)).toBeGreaterThan(24 * 3600 - 120);
    expect(Number(rows[0].ttl)).toBeLessThanOrEqual(24 * 3600);
    const stored = await h.db.pool.query(
      `select (select count(*)::int from outbox_event where payload::text like '%' || $1 || '%')
            + (select count(*)::int from notification where body like '%' || $1 || '%' or data::text like '%' || $1 || '%')
            + (select count(*)::int from graphile_worker._private_jobs where payload::text like '%' || $1 || '%')
            + (select count(*)::int from audit_event where metadata::text like '%' || $1 || '%') as n`,
      [token],
    );
    expect(stored.rows[0].n).toBe(0);
    // The event says who and which confirmation, never the address.
    const events = await h.db.pool.query(
      `select payload from outbox_event where type = 'events.account.email_confirmation_requested.v1' and payload->>'actorId' = $1`,
      [actor],
    );
    expect(events.rows).toHaveLength(1);
    expect(JSON.stringify(events.rows[0].payload)).not.toContain(email);

    // A link preview that only probes (HEAD) does not use the link up.
    expect((await call(h.api, { method: "HEAD", url, headers: BROWSER })).statusCode).not.toBe(200);
    const page = await follow(url);
    expect(page.statusCode, page.body).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect(page.body).toContain("Email address confirmed");
    expect(await preferences(actor)).toMatchObject({ email, emailStatus: "confirmed", channel: "email" });
    const audit = await h.db.pool.query(`select actor_id, object_type from audit_event where action = 'account.email_confirmed' and object_id = $1`, [actor]);
    expect(audit.rows).toEqual([{ actor_id: actor, object_type: "account" }]);
  });

  it("answers an API client with JSON, and problem+json 404 for a bad token", async () => {
    const actor = freshActor("confirm-json");
    const { url } = await requestLink(actor, `${actor}@example.org`);
    const ok = await follow(url, { accept: "application/json" });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toEqual({ emailStatus: "confirmed" });
    const again = await follow(url, { accept: "application/json" });
    expect(again.statusCode).toBe(404);
    expect(again.headers["content-type"]).toMatch(/^application\/problem\+json/);
  });
});

describe("no other email goes to an address until it is confirmed", () => {
  it("a contact message to the owner is in-app only while the address is pending, and emailed once it is confirmed", async () => {
    const owner = freshActor("owner");
    const email = `${owner}@example.org`;
    const reportId = await createLostReport(h.api, owner);
    const { url } = await requestLink(owner, email);

    const contact = (message: string) =>
      call(h.api, {
        method: "POST",
        url: `/v1/safety/lost-reports/${reportId}/relay-message`,
        payload: { message, fromContact: "finder@example.org" },
      });
    const channels = async () =>
      (
        await h.db.pool.query(
          `select channel, status, body from notification where recipient_actor_id = $1 and kind = 'relay_message' order by created_at`,
          [owner],
        )
      ).rows;

    expect((await contact("I saw your dog by the station")).statusCode).toBe(202);
    // The notifier writes an event's rows for every channel in one transaction: an email row would be here too.
    await eventually(async () => ((await channels()).length > 0 ? true : undefined), 15_000);
    expect((await channels()).map((n) => n.channel)).toEqual(["in_app"]);
    expect(mailsTo(email)).toHaveLength(1);

    expect((await follow(url)).statusCode).toBe(200);
    expect((await contact("Still by the station this morning")).statusCode).toBe(202);
    const second = await nthMailTo(email, 2);
    expect(textOf(second)).toContain("Still by the station this morning");
    // The mail arrives a moment before the delivery records it sent.
    const emailed = await eventually(async () => {
      const rows = (await channels()).filter((n) => n.channel === "email");
      return rows.every((n) => n.status === "sent") ? rows : undefined;
    });
    expect(emailed).toEqual([expect.objectContaining({ status: "sent", body: expect.stringContaining("Still by the station") })]);
  });

  it("changing a confirmed address stops email to the old one until the new one is confirmed", async () => {
    const owner = freshActor("mover");
    const first = `${owner}-first@example.org`;
    const second = `${owner}-second@example.org`;
    const reportId = await createLostReport(h.api, owner);
    expect((await follow((await requestLink(owner, first)).url)).statusCode).toBe(200);
    await requestLink(owner, second);
    expect(await preferences(owner)).toMatchObject({ email: second, emailStatus: "pending", channel: "in_app" });

    const sent = await call(h.api, {
      method: "POST",
      url: `/v1/safety/lost-reports/${reportId}/relay-message`,
      payload: { message: "Seen near the bakery", fromContact: "finder@example.org" },
    });
    expect(sent.statusCode).toBe(202);
    await eventually(async () => {
      const { rows } = await h.db.pool.query(`select 1 from notification where recipient_actor_id = $1 and kind = 'relay_message'`, [owner]);
      return rows.length > 0 ? true : undefined;
    }, 15_000);
    // The event's rows for every channel commit together: an email row would be here too.
    const { rows } = await h.db.pool.query(`select channel from notification where recipient_actor_id = $1 and kind = 'relay_message'`, [owner]);
    expect(rows.map((r) => r.channel)).toEqual(["in_app"]);
    expect(mailsTo(first)).toHaveLength(1);
    expect(mailsTo(second)).toHaveLength(1);
  });
});

describe("a link works once, for 24 hours, and only for the address last set", () => {
  it("a used, an expired, a replaced, an unknown and a malformed token all get the same 404 page", async () => {
    const used = freshActor("used");
    const usedLink = await requestLink(used, `${used}@example.org`);
    expect((await follow(usedLink.url)).statusCode).toBe(200);

    const late = freshActor("late");
    const lateLink = await requestLink(late, `${late}@example.org`);
    await h.db.pool.query(`update email_confirmation set expires_at = now() - interval '1 second' where actor_id = $1`, [late]);

    const mover = freshActor("changed");
    const firstLink = await requestLink(mover, `${mover}-a@example.org`);
    const secondLink = await requestLink(mover, `${mover}-b@example.org`);

    const refused = await Promise.all(
      [
        usedLink.url,
        lateLink.url,
        firstLink.url,
        `/v1/me/email/confirm?token=${"A".repeat(43)}`,
        "/v1/me/email/confirm?token=short",
        "/v1/me/email/confirm",
        "/v1/me/email/confirm?token=a&token=b",
      ].map((url) => follow(url)),
    );
    for (const res of refused) {
      expect(res.statusCode, res.body).toBe(404);
      expect(res.headers["content-type"]).toMatch(/^text\/html/);
      expect(res.body).toBe(refused[0]!.body);
    }
    expect(await preferences(late)).toMatchObject({ emailStatus: "pending" });
    expect(await preferences(mover)).toMatchObject({ email: `${mover}-b@example.org`, emailStatus: "pending" });

    // The link of the address last set still works.
    expect((await follow(secondLink.url)).statusCode).toBe(200);
    expect(await preferences(mover)).toMatchObject({ email: `${mover}-b@example.org`, emailStatus: "confirmed" });
  });

  it("a delivery of a replaced confirmation (a replay, a late job) sends nothing and dead-letters as permanent", async () => {
    const actor = freshActor("stale");
    await requestLink(actor, `${actor}-a@example.org`);
    await requestLink(actor, `${actor}-b@example.org`);
    const { rows } = await h.db.pool.query(
      `select id from notification where recipient_actor_id = $1 and kind = 'email_confirmation' order by created_at limit 1`,
      [actor],
    );
    const first = rows[0].id as string;
    await h.db.pool.query(`update notification set status = 'failed', round_attempts = 0 where id = $1`, [first]);
    await enqueue(h.db.pool, DELIVERY_TASKS.email.one, { notificationId: first });
    const done = await eventually(async () => {
      const { rows: now } = await h.db.pool.query(`select status, last_error from notification where id = $1`, [first]);
      return now[0].status === "dead_letter" ? now[0] : undefined;
    }, 15_000);
    expect(done.last_error).toBe(CONFIRMATION_GONE);
    expect(reasonCategory(done.last_error)).toBe("permanent");
    expect(mailsTo(`${actor}-a@example.org`)).toHaveLength(1);
  });
});

describe("at most 3 confirmation emails an hour per actor", () => {
  it("refuses the PUT that would send a fourth with 429 and Retry-After, and changes nothing", async () => {
    const actor = freshActor("limit");
    for (const n of [1, 2, 3]) {
      const res = await setEmail(actor, `${actor}-${n}@example.org`);
      expect(res.statusCode, res.body).toBe(200);
    }
    const fourth = await setEmail(actor, `${actor}-4@example.org`);
    expect(fourth.statusCode, fourth.body).toBe(429);
    expect(fourth.json().type).toMatch(/\/rate-limited$/);
    expect(Number(fourth.headers["retry-after"])).toBeGreaterThan(3_500);
    expect(Number(fourth.headers["retry-after"])).toBeLessThanOrEqual(3_600);
    expect(await preferences(actor)).toMatchObject({ email: `${actor}-3@example.org`, emailStatus: "pending" });
    expect(await confirmationRows(actor)).toHaveLength(3);
    // Sending the waiting address again is a fourth email too; other changes still go through.
    expect((await setEmail(actor, `${actor}-3@example.org`)).statusCode).toBe(429);
    const kinds = await call(h.api, { method: "PUT", url: "/v1/me/notification-preferences", headers: as(actor), payload: { emailKinds: ["match"] } });
    expect(kinds.statusCode, kinds.body).toBe(200);
    // After an hour the oldest leaves the window.
    await h.db.pool.query(
      `update notification set created_at = created_at - interval '1 hour'
       where id = (select id from notification where recipient_actor_id = $1 and kind = 'email_confirmation' order by created_at limit 1)`,
      [actor],
    );
    expect((await setEmail(actor, `${actor}-4@example.org`)).statusCode).toBe(200);
  });

  it("holds under concurrent PUTs: five at once send three", async () => {
    const actor = freshActor("burst");
    // An app of its own, with a connection for each PUT (the file's app shares its pool with the pipeline).
    const api = await buildTestApi(devEnv(h.db.url, h.bus.url, { EMAIL_VERIFICATION: "required", DATABASE_POOL_SIZE: "6" }));
    // An uncommitted preference row holds every PUT past its count until all five have started, so
    // without the per-actor lock each would count the same zero.
    const holder = await h.db.pool.connect();
    try {
      await holder.query("begin");
      await holder.query(`insert into notification_preference (actor_id) values ($1)`, [actor]);
      const puts = Promise.all([1, 2, 3, 4, 5].map((n) => setEmail(actor, `${actor}-${n}@example.org`, api)));
      await eventually(async () => {
        const { rows } = await h.db.pool.query(
          `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
        );
        return rows[0].n >= 5 ? true : undefined;
      });
      await holder.query("rollback");
      const results = await puts;
      expect(results.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 429, 429]);
    } finally {
      holder.release();
      await api.close();
    }
    expect(await confirmationRows(actor)).toHaveLength(3);
  });
});

describe("EMAIL_VERIFICATION", () => {
  it("defaults to off in development and to required elsewhere", () => {
    const base = { DATABASE_URL: "postgres://x/y", NATS_URL: "nats://127.0.0.1:4222" };
    expect(loadApiConfig({ ...base, API_ENV: "development" }).EMAIL_VERIFICATION).toBe("off");
    expect(loadApiConfig({ ...base, API_ENV: "development", EMAIL_VERIFICATION: "required" }).EMAIL_VERIFICATION).toBe("required");
    expect(h.api.config.EMAIL_VERIFICATION).toBe("required");
  });

  it("off: an address is in use as soon as it is set, with no confirmation email, as before", async () => {
    const off = await buildTestApi(devEnv(h.db.url, h.bus.url));
    try {
      expect(off.config.EMAIL_VERIFICATION).toBe("off");
      const owner = freshActor("off");
      const email = `${owner}@example.org`;
      const reportId = await createLostReport(off, owner);
      const put = await setEmail(owner, email, off);
      expect(put.statusCode, put.body).toBe(200);
      expect(put.json()).toMatchObject({ email, emailStatus: "confirmed", channel: "email" });
      const sent = await call(off, {
        method: "POST",
        url: `/v1/safety/lost-reports/${reportId}/relay-message`,
        payload: { message: "Your cat is in my garden", fromContact: "finder@example.org" },
      });
      expect(sent.statusCode).toBe(202);
      // The report's first-hour guide may reach the address too, once it is in use: the message's mail is the one counted.
      const message = (m: Parameters<typeof textOf>[0]) => textOf(m).includes("Your cat is in my garden");
      await eventually(async () => (mailsTo(email).some(message) ? true : undefined));
      expect(await confirmationRows(owner)).toHaveLength(0);
      expect(mailsTo(email).filter(message)).toHaveLength(1);
      expect(mailsTo(email).filter((m) => !message(m)).every((m) => textOf(m).includes("first hours"))).toBe(true);
    } finally {
      await off.close();
    }
  });
});
