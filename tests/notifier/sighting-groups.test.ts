import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busClient } from "../../lib/bus.js";
import { EventType } from "../../lib/events.js";
import { envelopeSql } from "../../lib/outbox.js";
import { buildDeliverers } from "../../jobs/delivery/deliverers/index.js";
import { as } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { eventually } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, createLostReport, freshActor } from "../safety/helpers.js";
import { startSmtpServer, type TestSmtpServer } from "./smtp.js";
import { consumerInfo, deliveryJobsFor, setPreference } from "./support.js";

/**
 * An owner gets at most one `sighting` notification per report per 10
 * minutes: end to end, from POST /v1/safety/sightings through the outbox,
 * the relay, JetStream and the notifier, to the in-app list and the SMTP peer.
 */
let h: Harness;
let smtp: TestSmtpServer;
let pipeline: Pipeline;

beforeAll(async () => {
  h = await startHarness();
  smtp = await startSmtpServer();
  pipeline = await startPipeline(h.api.pool, h.api.nc, {
    deliverers: buildDeliverers({ SMTP_URL: smtp.url, SMTP_FROM: "Animal Safety <no-reply@example.org>" }),
  });
});

afterAll(async () => {
  await pipeline?.stop();
  await smtp?.close();
  await h?.close();
});

interface Row {
  id: string;
  channel: string;
  status: string;
  subject: string;
  body: string;
  data: Record<string, string>;
  source_event_id: string;
}

const sightingRows = async (owner: string): Promise<Row[]> =>
  (
    await h.db.pool.query<Row>(
      `select id, channel, status, subject, body, data, source_event_id from notification
       where recipient_actor_id = $1 and kind = 'sighting' order by created_at, channel`,
      [owner],
    )
  ).rows;

const sight = async (lostReportId: string, actor = freshActor("neighbour")): Promise<string> => {
  const res = await call(h.api, {
    method: "POST",
    url: "/v1/safety/sightings",
    headers: as(actor),
    payload: { lostReportId, location: { lat: 48.857, lon: 2.353 }, seenAt: new Date(Date.now() - 60_000).toISOString() },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
};

/** The sighting's event as the relay published it. */
const eventOf = async (sightingId: string): Promise<{ id: string; envelope: string }> =>
  (
    await h.db.pool.query(`select id, ${envelopeSql} as envelope from outbox_event where type = $1 and payload->>'sightingId' = $2`, [
      EventType.SightingReported,
      sightingId,
    ])
  ).rows[0];

/** Every sighting event is published and the consumer has acked it. */
const settled = () =>
  eventually(async () => {
    const unpublished = await count(h.db, `select 1 from outbox_event where published_at is null`);
    const info = await consumerInfo(h.api.nc);
    return unpublished === 0 && info.num_pending === 0 && info.num_ack_pending === 0 ? true : undefined;
  }, 15_000);

// The owner's mails about sightings: filing the report also mailed them its first hour's guide (report_guide).
const mailsTo = (address: string) => smtp.received.filter((m) => m.to.includes(address) && !/what to do in the first hour/.test(m.raw));
const emailed = (address: string, n: number) => eventually(async () => (mailsTo(address).length === n ? true : undefined), 15_000);

/** As if the report's open group had been opened 11 minutes ago. */
const windowPassed = (owner: string) =>
  h.db.pool.query(`update notification_group_member set occurred_at = occurred_at - interval '11 minutes' where recipient_actor_id = $1`, [
    owner,
  ]);

const inAppList = async (owner: string) => {
  const res = await call(h.api, { method: "GET", url: "/v1/me/notifications", headers: as(owner) });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().items as Array<{ kind: string; channel: string; body: string; data: Record<string, string>; readAt: string | null }>).filter(
    (n) => n.kind === "sighting" && n.channel === "in_app",
  );
};

describe("an owner gets one sighting notification per report per 10 minutes, counting the rest", () => {
  it("five sightings in the window give one notification per channel, saying five, and one email", async () => {
    const owner = freshActor("owner");
    const address = `${owner}@example.org`;
    await setPreference(h.db.pool, owner, "email", address);
    const lostReportId = await createLostReport(h.api, owner);
    const first = await sight(lostReportId);
    // The first sighting's email goes out at once.
    await emailed(address, 1);
    const ids = [first];
    for (let i = 0; i < 4; i++) ids.push(await sight(lostReportId));
    await settled();

    const rows = await sightingRows(owner);
    expect(rows.map((r) => r.channel)).toEqual(["email", "in_app"]);
    expect(new Set(rows.map((r) => r.source_event_id)).size).toBe(1);
    const inApp = rows.find((r) => r.channel === "in_app")!;
    expect(inApp.subject).toBe("5 sightings of an animal that may be yours");
    expect(inApp.body).toContain("5 sightings were reported on your lost report within 10 minutes");
    expect(inApp.data).toEqual({ lostReportId, sightingId: ids[4], sightingCount: "5" });
    // The email went out with the first sighting; the four after it sent nothing new, and no job is left to.
    expect(rows.find((r) => r.channel === "email")!.status).toBe("sent");
    await eventually(async () => ((await Promise.all(rows.map((r) => deliveryJobsFor(h.db.pool, r.id)))).every((n) => n === 0) ? true : undefined));
    expect(mailsTo(address)).toHaveLength(1);
    expect(mailsTo(address)[0]!.raw).toContain("Someone saw an animal that may be yours");

    const listed = await inAppList(owner);
    expect(listed).toHaveLength(1);
    expect(listed[0]!.data.sightingCount).toBe("5");
  });

  it("an email still waiting to be sent carries the count", async () => {
    const owner = freshActor("owner");
    const address = `${owner}@example.org`;
    await setPreference(h.db.pool, owner, "email", address);
    const lostReportId = await createLostReport(h.api, owner);
    // Hold the email rows pending, as a busy delivery worker would, until both sightings are counted.
    await h.db.pool.query(`
      create function hold_sighting_email() returns trigger language plpgsql as $$
      begin new.status := 'pending'; new.attempts := 0; new.round_attempts := 0; return new; end $$;
      create trigger hold_sighting_email before update of status on notification
        for each row when (new.channel = 'email' and new.kind = 'sighting' and new.recipient_actor_id = '${owner}')
        execute function hold_sighting_email();`);
    try {
      await sight(lostReportId);
      await sight(lostReportId);
      await settled();
    } finally {
      await h.db.pool.query(`drop trigger hold_sighting_email on notification; drop function hold_sighting_email();`);
    }
    const email = (await sightingRows(owner)).find((r) => r.channel === "email")!;
    expect(email.body).toContain("2 sightings were reported");
    expect(email.data.sightingCount).toBe("2");
  });

  it("a sighting after the window gives a new notification, and a new email", async () => {
    const owner = freshActor("owner");
    const address = `${owner}@example.org`;
    await setPreference(h.db.pool, owner, "email", address);
    const lostReportId = await createLostReport(h.api, owner);
    await sight(lostReportId);
    await sight(lostReportId);
    await settled();
    await emailed(address, 1);
    await windowPassed(owner);

    const later = await sight(lostReportId);
    await settled();
    await emailed(address, 2);
    const rows = await sightingRows(owner);
    expect(rows).toHaveLength(4);
    expect(new Set(rows.map((r) => r.source_event_id)).size).toBe(2);
    const newest = rows.filter((r) => r.channel === "in_app")[1]!;
    expect(newest.data).toEqual({ lostReportId, sightingId: later });
    expect(newest.subject).toBe("Someone saw an animal that may be yours");
    // The earlier group keeps its own count.
    expect(rows.filter((r) => r.channel === "in_app")[0]!.data.sightingCount).toBe("2");
  });

  it("each report is its own group: sightings on two reports give two notifications", async () => {
    const owner = freshActor("owner");
    const one = await createLostReport(h.api, owner);
    const two = await createLostReport(h.api, owner);
    await sight(one);
    await sight(two);
    await settled();
    const rows = await sightingRows(owner);
    expect(rows.map((r) => r.data.lostReportId).sort()).toEqual([one, two].sort());
  });

  it("a redelivered sighting event does not count twice, nor write a second notification", async () => {
    const owner = freshActor("owner");
    const lostReportId = await createLostReport(h.api, owner);
    const first = await sight(lostReportId);
    const second = await sight(lostReportId);
    const third = await sight(lostReportId);
    await settled();
    const [before] = await sightingRows(owner);
    expect(before!.data.sightingCount).toBe("3");

    // Past the stream's duplicate window: a new message id, as an admin requeue or a re-publish would send.
    for (const [i, sightingId] of [first, second, third, second].entries()) {
      const event = await eventOf(sightingId);
      await busClient(h.api.nc).publish(EventType.SightingReported, event.envelope, { msgID: `${event.id}-again-${i}` });
    }
    await settled();
    const after = await sightingRows(owner);
    expect(after).toHaveLength(1);
    expect(after[0]!.data.sightingCount).toBe("3");
    expect(after[0]!.body).toContain("3 sightings");
    expect(await count(h.db, `select 1 from notification_group_member where recipient_actor_id = $1`, [owner])).toBe(3);
  });

  it("a counted sighting makes the in-app notification unread again", async () => {
    const owner = freshActor("owner");
    const lostReportId = await createLostReport(h.api, owner);
    await sight(lostReportId);
    await settled();
    const [row] = await sightingRows(owner);
    const read = await call(h.api, { method: "POST", url: `/v1/me/notifications/${row!.id}/read`, headers: as(owner) });
    expect(read.statusCode, read.body).toBe(200);
    expect((await inAppList(owner))[0]!.readAt).not.toBeNull();
    await sight(lostReportId);
    await settled();
    const [listed] = await inAppList(owner);
    expect(listed!.readAt).toBeNull();
    expect(listed!.data.sightingCount).toBe("2");
  });
});
