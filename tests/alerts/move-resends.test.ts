import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { runFanoutBatch } from "../../jobs/fanout/fanout.js";
import { insertFanout } from "../../jobs/fanout/store.js";
import { as } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { eventually } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createLostReport, freshActor } from "../safety/helpers.js";
import { nearbyRecipients, offset, subscribe } from "./helpers.js";

/**
 * A lost report that moves (PATCH) re-sends nearby_lost only to subscribers
 * not alerted for it before, and only twice: through the API, the outbox, the
 * relay, JetStream, the notifier's consumer and its fan-out jobs.
 */
let h: Harness;
let pipeline: Pipeline;

beforeAll(async () => {
  h = await startHarness();
  pipeline = await startPipeline(h.api.pool, h.api.nc, { fanout: { batchSize: 2 } });
});
afterAll(async () => {
  await pipeline?.stop();
  await h?.close();
});

interface FanoutSummary {
  event_type: string;
  status: string;
  recipients: number | null;
  notified: number;
  stop_reason: string | null;
}

/** Waits until the report has `n` fan-outs, all finished; returns them oldest first. */
const fanouts = (reportId: string, n: number) =>
  eventually(async () => {
    const { rows } = await h.db.pool.query<FanoutSummary>(
      `select event_type, status, recipients, notified, stop_reason from alert_fanout where report_id = $1 order by created_at`,
      [reportId],
    );
    return rows.length === n && rows.every((r) => r.status !== "running") ? rows : undefined;
    // Through the relay, JetStream, the consumer and the fan-out's jobs: a loaded CI machine has taken over 20 s.
  }, 60_000);

/** Every nearby_lost row the actor has, any channel, any report. */
const nearbyCount = async (actor: string) =>
  (await h.db.pool.query(`select count(*)::int as n from notification where kind = 'nearby_lost' and recipient_actor_id = $1`, [actor])).rows[0].n;

describe("a moved lost report re-sends nearby_lost", () => {
  it("to new subscribers only, never twice to one, after a move into an empty area too; the third re-send alerts nobody", async () => {
    const filed = { lat: 52.37, lon: 4.9 };
    const reporter = freshActor("mover");
    // Covers the filed point and the first move's (20 km from each).
    const early = freshActor("early");
    await subscribe(h.db.pool, early, offset(filed, 20), 50);
    const [atB, atC, atD] = [freshActor("b"), freshActor("c"), freshActor("d")];
    const b = offset(filed, 40);
    const c = offset(filed, 80);
    const d = offset(filed, 120);
    await subscribe(h.db.pool, atB, offset(b, 0.5), 5);
    await subscribe(h.db.pool, atC, offset(c, 0.5), 5);
    await subscribe(h.db.pool, atD, offset(d, 0.5), 5);
    // A second newcomer near C, so that re-send's fan-out runs two batches.
    const alsoC = freshActor("c");
    await subscribe(h.db.pool, alsoC, offset(c, -0.5), 5);

    const reportId = await createLostReport(h.api, reporter, { location: filed });
    await fanouts(reportId, 1);
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual([early]);

    const move = async (to: { lat: number; lon: number }, n: number) => {
      const res = await call(h.api, { method: "PATCH", url: `/v1/safety/lost-reports/${reportId}`, headers: as(reporter), payload: { location: to } });
      expect(res.statusCode, res.body).toBe(200);
      return (await fanouts(reportId, n)).at(-1)!;
    };

    // Into an area nobody watches: it reaches no one, and costs no re-send.
    expect(await move(offset(filed, -40), 2)).toMatchObject({ event_type: EventType.ReportUpdated, status: "done", recipients: 0 });
    // The early subscriber still covers B but was alerted already: only B's newcomer.
    expect(await move(b, 3)).toMatchObject({ status: "done", recipients: 1, notified: 1 });
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual([atB, early].sort());
    expect(await move(c, 4)).toMatchObject({ status: "done", recipients: 2, notified: 2 });
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual([atB, atC, alsoC, early].sort());

    // Two re-sends reached someone: the third stops before it collects anyone.
    expect(await move(d, 5)).toMatchObject({
      status: "stopped",
      recipients: null,
      notified: 0,
      stop_reason: "the report's alerts were re-sent 2 times already",
    });
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual([atB, atC, alsoC, early].sort());
    expect(await nearbyCount(atD)).toBe(0);
    for (const actor of [early, atB, atC, alsoC]) expect(await nearbyCount(actor), actor).toBe(1);

    // Nor does a fourth, back where the early subscriber and B's newcomer were alerted.
    expect(await move(offset(b, 1), 6)).toMatchObject({ status: "stopped", recipients: null });
    for (const actor of [early, atB, atC, alsoC]) expect(await nearbyCount(actor), actor).toBe(1);
  });
});

describe("re-sends started at once", () => {
  it("collect at most two: the count of a report's re-sends is taken one batch 0 at a time", async () => {
    const at = { lat: 53.55, lon: 9.99 };
    const reportId = await createLostReport(h.api, freshActor("mover"), { location: at });
    await fanouts(reportId, 1);
    for (let i = 0; i < 3; i++) await subscribe(h.db.pool, freshActor("near"), offset(at, 0.3 * i), 5);
    // Three moves' fan-outs recorded as their start jobs would, their batch 0s run side by side.
    const ids = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    for (const eventId of ids) await insertFanout(h.db.pool, { reportId, eventId, eventType: EventType.ReportUpdated });
    const outcomes = await Promise.all(ids.map((id) => runFanoutBatch(h.db.pool, id, 0, { batchSize: 2 })));
    // The first to take the lock collects the three. The next may collect them too, or nobody: the running
    // pipeline may have decided the first's batch by then, and a fan-out that collects nobody is no re-send,
    // so then the third may collect (nobody) as well. What never happens is a third that collects anyone.
    const { rows } = await h.db.pool.query<{ recipients: number | null; status: string }>(
      `select recipients, status from alert_fanout where event_id = any($1::uuid[]) order by recipients desc nulls last`,
      [ids],
    );
    expect(rows[0]).toMatchObject({ recipients: 3 });
    expect(rows.filter((r) => (r.recipients ?? 0) > 0).length).toBeLessThanOrEqual(2);
    expect(outcomes.filter((o) => o.outcome === "collected" && o.recipients > 0)).toHaveLength(rows.filter((r) => (r.recipients ?? 0) > 0).length);
  });
});
