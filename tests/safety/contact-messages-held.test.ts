import type { LightMyRequestResponse } from "fastify";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONTACT_MESSAGES_PER_SENDER_PER_DAY } from "../../api/safety/contact-messages/send.js";
import { CONTACT_MESSAGES_DIGEST_CRONTAB, CONTACT_MESSAGES_DIGEST_TASK, contactMessagesDigestTask } from "../../jobs/scheduled/task.js";
import { CONTACT_MESSAGE_KIND } from "../../lib/notifications.js";
import { HELD_MESSAGES_PER_DIGEST, runContactMessageDigest } from "../../jobs/scheduled/contact-messages-digest.js";
import { SCHEDULED_CRONTAB, scheduledTasks } from "../../jobs/families.js";
import { as } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { eventually } from "../helpers/stream.js";
import { consumerInfo } from "../notifier/support.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, createLostReport, expectProblem, freshActor } from "./helpers.js";

/**
 * Nobody can silence a report: each sender's daily cap on a report is their
 * own, and past the report's daily volume messages are taken and held for the
 * owner's hourly digest instead of refused. Through the API behind a trusted
 * proxy (X-Forwarded-For), with the relay, the notifier's consumer and its
 * delivery runner in the process (tests/helpers/pipeline.ts), and the digest
 * run against the database.
 */
let h: Harness;
let pipeline: Pipeline;
const PROXY = "127.0.0.1";

beforeAll(async () => {
  h = await startHarness({ API_TRUSTED_PROXY_CIDRS: `${PROXY}/32` });
  pipeline = await startPipeline(h.api.pool, h.api.nc);
});
afterAll(async () => {
  await pipeline?.stop();
  await h?.close();
});

let clientCounter = 0;
/** A client address of its own, as the proxy forwards it. */
const freshClient = () => {
  clientCounter += 1;
  return `198.51.${(clientCounter >> 8) & 255}.${clientCounter & 255}`;
};

/** A contact message as the trusted proxy forwards it from `client`. */
const send = (id: string, client: string, message = "I think I saw your dog near the park"): Promise<LightMyRequestResponse> =>
  h.api.app.inject({
    method: "POST",
    url: `/v1/safety/lost-reports/${id}/relay-message`,
    remoteAddress: PROXY,
    headers: { "x-forwarded-for": client },
    payload: { message, fromContact: `${client} via sms` },
  });

/** As if an hour passed for the sender's per-address bucket (5 an hour), which a test cannot wait for. */
const hourPassed = (key: string) => h.db.pool.query(`update rate_limit_bucket set tokens = 5 where key = $1`, [`relay-message:${key}`]);

interface Listed {
  kind: string;
  status: string;
  subject: string;
  body: string;
  data: Record<string, string>;
}

async function contactNotifications(actor: string): Promise<Listed[]> {
  const res = await call(h.api, { url: "/v1/me/notifications?limit=200", headers: as(actor) });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().items as Listed[]).filter((n) => n.kind === CONTACT_MESSAGE_KIND);
}

/** Every event of the report published and handled: nothing pending at the notifier's consumer. */
async function allHandled(reportId: string): Promise<void> {
  await eventually(async () => {
    const unpublished = await count(h.db, `select 1 from outbox_event where payload->>'lostReportId' = $1 and published_at is null`, [reportId]);
    if (unpublished > 0) return undefined;
    const info = await consumerInfo(h.api.nc);
    return info.num_pending + info.num_ack_pending === 0 ? true : undefined;
  }, 20_000);
}

describe("each sender has a daily cap of their own on a report", () => {
  it("refuses a spammer's 21st message of the day (429, Retry-After), and a second sender on the same report still gets through", async () => {
    const id = await createLostReport(h.api, freshActor("owner"));
    // One spammer: any address of one IPv6 /64, so one sender.
    const spammer = "2001:db8:5:1::/64";
    for (let i = 0; i < CONTACT_MESSAGES_PER_SENDER_PER_DAY; i++) {
      if (i > 0 && i % 5 === 0) await hourPassed(spammer);
      const res = await send(id, `2001:db8:5:1::${(i + 1).toString(16)}`);
      expect(res.statusCode, res.body).toBe(202);
    }
    await hourPassed(spammer);
    const capped = await send(id, "2001:db8:5:1:ffff::9");
    expectProblem(capped, 429, "rate-limited");
    expect(capped.json().detail).toBe(`you can send this report at most ${CONTACT_MESSAGES_PER_SENDER_PER_DAY} messages a day`);
    expect(Number(capped.headers["retry-after"])).toBeGreaterThan(23 * 3600);

    const finder = await send(id, "203.0.113.50", "Your cat is in my garden");
    expect(finder.statusCode, finder.body).toBe(202);
    const { rows } = await h.db.pool.query(`select message, held from safety_relay_message where id = $1`, [finder.json().id]);
    expect(rows).toEqual([{ message: "Your cat is in my garden", held: true }]);
    expect(await count(h.db, `select 1 from safety_relay_message where lost_report_id = $1`, [id])).toBe(CONTACT_MESSAGES_PER_SENDER_PER_DAY + 1);
  });

  it("keys the cap on the sender's address: the spammer's messages are stored with its /64, the others' with theirs", async () => {
    const id = await createLostReport(h.api, freshActor("owner"));
    expect((await send(id, "2001:db8:6:1::a")).statusCode).toBe(202);
    expect((await send(id, "::ffff:192.0.2.44")).statusCode).toBe(202);
    const { rows } = await h.db.pool.query(`select sender_key from safety_relay_message where lost_report_id = $1 order by created_at`, [id]);
    expect(rows).toEqual([{ sender_key: "2001:db8:6:1::/64" }, { sender_key: "192.0.2.44" }]);
  });
});

describe("past a report's daily volume, messages are held for one digest notification", () => {
  it("notifies the first 20 one by one, the held ones not at all, then lists them in one digest; a second run sends nothing", async () => {
    // What earlier tests left held goes out first, so this run's counts are this report's.
    await runContactMessageDigest(h.api.pool);
    const owner = freshActor("owner");
    const id = await createLostReport(h.api, owner);
    for (let i = 0; i < 20; i++) expect((await send(id, freshClient(), `told ${i}`)).statusCode).toBe(202);
    const held: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await send(id, freshClient(), `held ${i}`);
      expect(res.statusCode, res.body).toBe(202);
      held.push(res.json().id);
    }
    await allHandled(id);
    const told = await contactNotifications(owner);
    expect(told).toHaveLength(20);
    expect(told.map((n) => n.body).filter((b) => b.startsWith("held"))).toEqual([]);
    expect(told.map((n) => n.data.relayMessageId).filter((m) => held.includes(m!))).toEqual([]);

    expect(await runContactMessageDigest(h.api.pool)).toMatchObject({ notifications: 1, messages: 3 });
    const [digest, ...rest] = await contactNotifications(owner);
    expect(rest).toHaveLength(20);
    expect(digest).toMatchObject({
      status: "sent",
      subject: "3 more messages about your lost animal",
      data: { lostReportId: id, heldCount: "3", waitingCount: "0", relayMessageIds: held.join(",") },
    });
    for (let i = 0; i < 3; i++) expect(digest!.body).toContain(`held ${i}\nReply to (given by the sender, not verified): `);
    expect(digest!.body.indexOf("held 0")).toBeLessThan(digest!.body.indexOf("held 2"));
    expect(await count(h.db, `select 1 from safety_relay_message where lost_report_id = $1 and held and digested_at is null`, [id])).toBe(0);

    expect(await runContactMessageDigest(h.api.pool)).toMatchObject({ notifications: 0, messages: 0 });
    expect(await contactNotifications(owner)).toHaveLength(21);
  });

  it(`lists at most ${HELD_MESSAGES_PER_DIGEST} a digest, oldest first, and the rest in the next one`, async () => {
    const owner = freshActor("owner");
    const id = await createLostReport(h.api, owner);
    const total = HELD_MESSAGES_PER_DIGEST + 7;
    await h.db.pool.query(
      `insert into safety_relay_message (lost_report_id, message, from_contact, held, created_at)
       select $1, 'backlog ' || n, 'x', true, now() - interval '1 hour' + n * interval '1 second' from generate_series(1, $2::int) n`,
      [id, total],
    );
    await runContactMessageDigest(h.api.pool);
    const [first] = await contactNotifications(owner);
    expect(first!.data).toMatchObject({ heldCount: String(HELD_MESSAGES_PER_DIGEST), waitingCount: "7" });
    expect(first!.body).toContain("backlog 1\n");
    expect(first!.body).not.toContain(`backlog ${HELD_MESSAGES_PER_DIGEST + 1}\n`);
    expect(first!.body).toContain("7 more are waiting");
    await runContactMessageDigest(h.api.pool);
    const [second] = await contactNotifications(owner);
    expect(second).toMatchObject({ subject: "7 more messages about your lost animal", data: { heldCount: "7", waitingCount: "0" } });
    expect(second!.body).toContain(`backlog ${total}\n`);
  });

  it("forgets a sender's address once their message is a day old", async () => {
    const id = await createLostReport(h.api, freshActor("owner"));
    const old = await send(id, "2001:db8:7:1::1");
    const recent = await send(id, "2001:db8:7:2::1");
    await h.db.pool.query(`update safety_relay_message set created_at = now() - interval '25 hours' where id = $1`, [old.json().id]);
    await runContactMessageDigest(h.api.pool);
    const { rows } = await h.db.pool.query(`select id, sender_key from safety_relay_message where lost_report_id = $1`, [id]);
    expect(Object.fromEntries(rows.map((r) => [r.id, r.sender_key]))).toEqual({ [old.json().id]: null, [recent.json().id]: "2001:db8:7:2::/64" });
  });

  it("runs hourly in the scheduled family as contact_messages__digest", async () => {
    expect(CONTACT_MESSAGES_DIGEST_CRONTAB).toBe(`0 * * * * ${CONTACT_MESSAGES_DIGEST_TASK}`);
    expect(SCHEDULED_CRONTAB.split("\n")).toContain(CONTACT_MESSAGES_DIGEST_CRONTAB);
    const tasks = scheduledTasks({ pool: h.api.pool, deliverers: {}, logger: pino({ level: "silent" }), reportTtlDays: 30, outboxRetentionDays: 7 });
    expect(Object.keys(tasks)).toContain(CONTACT_MESSAGES_DIGEST_TASK);
    // The task runs the digest for real: a held message goes out.
    const owner = freshActor("owner");
    const id = await createLostReport(h.api, owner);
    await h.db.pool.query(`insert into safety_relay_message (lost_report_id, message, from_contact, held) values ($1, 'via the task', 'x', true)`, [id]);
    const logged: string[] = [];
    await contactMessagesDigestTask(() => runContactMessageDigest(h.api.pool))({}, { logger: { info: (m: string) => logged.push(m) } } as never);
    expect(logged).toEqual([expect.stringMatching(/^contact messages: 1 held messages in 1 notifications/)]);
    expect((await contactNotifications(owner)).map((n) => n.data.heldCount)).toEqual(["1"]);
  });
});
