import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { runDigest } from "../../jobs/scheduled/alerts-digest.js";
import { as } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { PrivacyRules } from "../helpers/privacy.js";
import { eventually } from "../helpers/stream.js";
import { publishEnvelope } from "../notifier/support.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createLostReport, freshActor } from "../safety/helpers.js";
import { coarsePoint, dayAfter, offset, subscribe, utcToday, type LatLon } from "./helpers.js";

/**
 * A new lost report reaches the subscribers whose radius covers it: from the
 * API call, through the outbox, the relay, JetStream and the notifier's
 * consumer, to the fan-out jobs on the notifier's worker and each
 * subscriber's GET /v1/me/notifications.
 */
let h: Harness;
let pipeline: Pipeline;

beforeAll(async () => {
  h = await startHarness();
  // Batches of 3, so a handful of subscribers already takes several batch jobs.
  pipeline = await startPipeline(h.api.pool, h.api.nc, { fanout: { batchSize: 3 } });
});
afterAll(async () => {
  await pipeline?.stop();
  await h?.close();
});

interface Listed {
  id: string;
  kind: string;
  channel: string;
  status: string;
  subject: string;
  body: string;
  data: Record<string, string>;
  eventType: string;
}

async function nearby(actor: string): Promise<Listed[]> {
  const res = await call(h.api, { url: "/v1/me/notifications?limit=200", headers: as(actor) });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().items as Listed[]).filter((n) => n.kind === "nearby_lost");
}

/** Waits until every fan-out of the report has finished. */
const fannedOut = (reportId: string) =>
  eventually(async () => {
    const { rows } = await h.db.pool.query(`select status from alert_fanout where report_id = $1`, [reportId]);
    return rows.length > 0 && rows.every((r) => r.status !== "running") ? rows : undefined;
  }, 20_000);

const distanceKm = async (subscriptionId: string, reportId: string) => {
  const { rows } = await h.db.pool.query(
    `select st_distance(s.location, r.coarse_location) / 1000 as km from alert_subscription s, safety_lost_report r where s.id = $1 and r.id = $2`,
    [subscriptionId, reportId],
  );
  return Math.round(rows[0].km);
};

let places = 0;
const place = (): LatLon => offset({ lat: 50.632557, lon: 3.057256 }, 0, 30 * ++places);

describe("a new lost report notifies the subscribers whose radius covers its coarse point", () => {
  it("reaches each subscriber in range once, never the reporter, and nobody out of range or of another species", async () => {
    const spot = place();
    const reporter = freshActor("reporter");
    const near = freshActor("near");
    const far = freshActor("far");
    const catsOnly = freshActor("cats");
    const dogs = freshActor("dogs");
    const twice = freshActor("twice");
    const crowd = Array.from({ length: 6 }, () => freshActor("crowd"));
    const subs = {
      near: await subscribe(h.db.pool, near, offset(spot, 1.2, 0.4), 3),
      far: await subscribe(h.db.pool, far, offset(spot, 6), 2),
      catsOnly: await subscribe(h.db.pool, catsOnly, offset(spot, 0.5), 5, ["cat"]),
      dogs: await subscribe(h.db.pool, dogs, offset(spot, -3.3), 10, ["dog", "rabbit"]),
      twiceWide: await subscribe(h.db.pool, twice, offset(spot, 7.6), 20),
      twiceClose: await subscribe(h.db.pool, twice, offset(spot, 2.1), 4),
      reporter: await subscribe(h.db.pool, reporter, spot, 5),
    };
    for (const actor of crowd) await subscribe(h.db.pool, actor, offset(spot, -0.7), 2);

    const reportId = await createLostReport(h.api, reporter, { location: spot });
    await fannedOut(reportId);
    const coarse = await coarsePoint(h.db.pool, reportId);

    for (const [actor, subscriptionId] of [[near, subs.near], [dogs, subs.dogs], [twice, subs.twiceClose]] as const) {
      const items = await nearby(actor);
      expect(items, actor).toHaveLength(1);
      const km = await distanceKm(subscriptionId, reportId);
      expect(items[0]).toMatchObject({
        channel: "in_app",
        status: expect.stringMatching(/^(pending|sent)$/),
        eventType: EventType.AnimalLostReported,
        data: { lostReportId: reportId, alertSubscriptionId: subscriptionId, distanceKm: String(km), lat: String(coarse.lat), lon: String(coarse.lon) },
      });
      expect(Object.keys(items[0]!.data).sort()).toEqual(["alertSubscriptionId", "distanceKm", "lat", "lon", "lostReportId"]);
      expect(items[0]!.subject).toContain("dog");
    }
    for (const actor of crowd) expect(await nearby(actor)).toHaveLength(1);
    for (const actor of [reporter, far, catsOnly]) expect(await nearby(actor), actor).toEqual([]);
    const { rows } = await h.db.pool.query(`select notified, batches_done from alert_fanout where report_id = $1`, [reportId]);
    // near, dogs, twice and the crowd of 6: 9 recipients in batches of 3.
    expect(rows).toEqual([{ notified: 9, batches_done: 3 }]);
  });

  it("tells subscribers nothing about where they subscribed but the distance, rounded to the kilometre", async () => {
    const spot = place();
    const subscriber = freshActor("private");
    const home = offset(spot, 2.345, 1.234);
    const subscriptionId = await subscribe(h.db.pool, subscriber, home, 10);
    const reportId = await createLostReport(h.api, freshActor("reporter"), { location: spot });
    await fannedOut(reportId);
    const [alert] = await nearby(subscriber);
    // The privacy checker's own rules: neither of the home's coordinates, in any rounding to ~10 m, anywhere in the notification.
    expect(new PrivacyRules().point(home).violations(alert)).toEqual([]);
    expect(alert!.data.distanceKm).toBe(String(await distanceKm(subscriptionId, reportId)));
    expect(alert!.body).toMatch(/about \d+ km from the centre of your alert area/);
  });
});

describe("at most once per report per subscriber", () => {
  it("ignores a redelivered event and adds nothing when the same report's fan-out runs again", async () => {
    const spot = place();
    const subscriber = freshActor("once");
    await subscribe(h.db.pool, subscriber, spot, 5);
    const reportId = await createLostReport(h.api, freshActor("reporter"), { location: spot });
    await fannedOut(reportId);
    expect(await nearby(subscriber)).toHaveLength(1);

    // The same event again, past the stream's duplicate window (another message id): the notifier sees it twice.
    const { rows } = await h.db.pool.query(`select id, type, occurred_at, payload from outbox_event where type = $1 and payload->>'reportId' = $2`, [
      EventType.AnimalLostReported,
      reportId,
    ]);
    const event = rows[0]!;
    await publishEnvelope(h.api.nc, { id: event.id, type: event.type, occurredAt: event.occurred_at.toISOString(), data: event.payload }, `again-${event.id}`);
    // A later event about the same report (a reopen or a move) starts a second fan-out, which finds everyone decided.
    const later = crypto.randomUUID();
    await publishEnvelope(h.api.nc, { id: later, type: EventType.AnimalLostReported, occurredAt: new Date().toISOString(), data: event.payload });
    await eventually(async () => {
      const { rows: done } = await h.db.pool.query(`select status from alert_fanout where event_id = $1`, [later]);
      return done[0]?.status === "done" ? true : undefined;
    }, 20_000);
    const { rows: fanouts } = await h.db.pool.query(`select event_id, recipients from alert_fanout where report_id = $1 order by created_at`, [reportId]);
    expect(fanouts).toEqual([
      { event_id: event.id, recipients: 1 },
      { event_id: later, recipients: 0 },
    ]);
    expect(await nearby(subscriber)).toHaveLength(1);
  });
});

describe("a lost report that moves (PATCH) alerts the subscribers it now reaches", () => {
  it("notifies the newly covered subscriber, not the earlier one again; a PATCH of the description alerts no one", async () => {
    const before = place();
    const after = offset(before, 15);
    const reporter = freshActor("mover");
    const early = freshActor("early");
    const late = freshActor("late");
    await subscribe(h.db.pool, early, offset(before, 0.5), 20);
    await subscribe(h.db.pool, late, offset(after, 0.5), 3);
    const reportId = await createLostReport(h.api, reporter, { location: before });
    await fannedOut(reportId);
    expect(await nearby(early)).toHaveLength(1);
    expect(await nearby(late)).toEqual([]);

    const patch = (payload: object) =>
      call(h.api, { method: "PATCH", url: `/v1/safety/lost-reports/${reportId}`, headers: as(reporter), payload });
    const described = await patch({ description: "Now with a blue collar" });
    expect(described.statusCode, described.body).toBe(200);
    const moved = await patch({ location: after });
    expect(moved.statusCode, moved.body).toBe(200);
    await eventually(async () => {
      const { rows } = await h.db.pool.query(`select status from alert_fanout where report_id = $1`, [reportId]);
      return rows.length === 2 && rows.every((r) => r.status === "done") ? true : undefined;
    }, 20_000);
    const { rows } = await h.db.pool.query(`select event_type, recipients from alert_fanout where report_id = $1 order by created_at`, [reportId]);
    expect(rows).toEqual([
      { event_type: EventType.AnimalLostReported, recipients: 1 },
      // The early subscriber still covers the moved point, but was alerted already.
      { event_type: EventType.ReportUpdated, recipients: 1 },
    ]);
    expect(await nearby(late)).toHaveLength(1);
    expect(await nearby(early)).toHaveLength(1);
  });
});

describe("past 20 a day, the rest come as one digest the next morning", () => {
  it("writes 20 alerts, defers 3, and the digest lists the deferred reports still open, once", async () => {
    const spot = place();
    const subscriber = freshActor("busy");
    const subscriptionId = await subscribe(h.db.pool, subscriber, spot, 8);
    const reports: string[] = [];
    for (let i = 0; i < 23; i++) reports.push(await createLostReport(h.api, freshActor("reporter"), { location: offset(spot, 0.1 * i) }));
    for (const id of reports) await fannedOut(id);
    const alerted = new Set((await nearby(subscriber)).map((n) => n.data.lostReportId));
    expect(alerted.size).toBe(20);
    const deferred = reports.filter((id) => !alerted.has(id));
    expect(deferred).toHaveLength(3);
    const day = await utcToday(h.db.pool);

    // One of the deferred reports is resolved before the morning: the digest leaves it out.
    const [closed, ...open] = deferred;
    await h.db.pool.query(`update safety_lost_report set status = 'reunited', resolved_at = now() where id = $1`, [closed]);

    expect(await runDigest(h.api.pool, day)).toEqual({ subscriberDays: 0, notifications: 0 });
    const tomorrow = dayAfter(day);
    expect(await runDigest(h.api.pool, tomorrow)).toMatchObject({ subscriberDays: 1, notifications: 1 });
    expect(await runDigest(h.api.pool, tomorrow)).toEqual({ subscriberDays: 0, notifications: 0 });
    // The digest wrote their ledger rows: none of the three can alert this subscriber again.
    const ledger = await h.db.pool.query(`select status, count(*)::int as n from alert_ledger where actor_id = $1 group by 1 order by 1`, [subscriber]);
    expect(ledger.rows).toEqual([{ status: "digested", n: 3 }, { status: "notified", n: 20 }]);

    const digests = (await nearby(subscriber)).filter((n) => n.data.digestDay);
    expect(digests).toHaveLength(1);
    expect(digests[0]!.data).toEqual({
      digestDay: day,
      count: "2",
      alertSubscriptionIds: subscriptionId,
      lostReportIds: expect.any(String),
    });
    expect(digests[0]!.data.lostReportIds!.split(",").sort()).toEqual(open.sort());
    expect(digests[0]!.body).not.toContain(closed);
    expect(digests[0]!.subject).toBe(`2 more lost animals near you on ${day}`);
  });
});
