import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDigest } from "../../jobs/scheduled/alerts-digest.js";
import { runFanoutBatch } from "../../jobs/fanout/fanout.js";
import { admin } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createLostReport, freshActor } from "../safety/helpers.js";
import { dayAfter, fanoutRow, nearbyRecipients, offset, startTestFanout, subscribe, utcToday, type LatLon } from "./helpers.js";

/**
 * A suspended account gets no neighbourhood alerts: neither a nearby_lost
 * notification nor the morning digest. Suspensions go through the admin API
 * (table `account`); the fan-out's batches and the digest run by hand.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const TOWN = { lat: 47.218371, lon: -1.553621 };
let places = 0;
const place = (): LatLon => offset(TOWN, 0, 25 * ++places);

async function suspend(actor: string, expiresAt?: string): Promise<void> {
  const res = await call(h.api, {
    method: "POST",
    url: `/v1/admin/accounts/${actor}/suspend`,
    headers: admin(),
    payload: { reasonCode: "spam", reasonDetail: "mass messages", ...(expiresAt ? { expiresAt } : {}) },
  });
  expect(res.statusCode, res.body).toBe(200);
}

async function restore(actor: string): Promise<void> {
  const res = await call(h.api, { method: "POST", url: `/v1/admin/accounts/${actor}/restore`, headers: admin(), payload: { reason: "appeal upheld" } });
  expect(res.statusCode, res.body).toBe(200);
}

/** Runs a fan-out's batches until it finishes; returns its event id. */
async function fanOut(reportId: string, options: { dailyCap?: number } = {}): Promise<string> {
  const fanout = await startTestFanout(h.db.pool, reportId);
  for (let batch = 0; (await fanoutRow(h.db.pool, fanout)).status === "running"; batch++) {
    await runFanoutBatch(h.db.pool, fanout, batch, { batchSize: 10, ...options });
  }
  return fanout;
}

const ledgerOf = async (reportId: string, actor: string) =>
  (await h.db.pool.query(`select status from alert_ledger where report_id = $1 and actor_id = $2`, [reportId, actor])).rows[0]?.status;

describe("a suspended subscriber", () => {
  it("gets no nearby_lost alert, also when suspended after the fan-out collected them; a restored or expired suspension alerts again", async () => {
    const spot = place();
    const [active, suspended, restored, expired, late] = [freshActor("active"), freshActor("suspended"), freshActor("restored"), freshActor("expired"), freshActor("late")];
    for (const actor of [active, suspended, restored, expired, late]) await subscribe(h.db.pool, actor, offset(spot, 1), 5);
    await suspend(suspended);
    await suspend(restored);
    await restore(restored);
    await suspend(expired, new Date(Date.now() + 3_600_000).toISOString());
    // Its hour has passed: an expired suspension is over without a restore.
    await h.db.pool.query(`update account set suspension_expires_at = now() - interval '1 minute' where user_id = $1`, [expired]);

    const reportId = await createLostReport(h.api, freshActor("reporter"), { location: spot });
    const fanout = await startTestFanout(h.db.pool, reportId);
    expect(await runFanoutBatch(h.db.pool, fanout, 0, { batchSize: 10 })).toEqual({ outcome: "collected", recipients: 5, deferred: 0 });
    await suspend(late);
    expect(await runFanoutBatch(h.db.pool, fanout, 1, { batchSize: 10 })).toMatchObject({ notified: 3, skipped: 2, done: true });

    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual([active, restored, expired].sort());
    // Nothing is written for a skipped subscriber: a later event of the report may still reach them.
    expect(await ledgerOf(reportId, suspended)).toBeUndefined();
    expect(await ledgerOf(reportId, late)).toBeUndefined();
    expect(await fanoutRow(h.db.pool, fanout)).toMatchObject({ status: "done", notified: 3, skipped: 2 });
    // Skipped counts nothing against the day's cap.
    const quota = await h.db.pool.query(`select actor_id from alert_daily_quota where actor_id = any($1) order by 1`, [[suspended, late]]);
    expect(quota.rows).toEqual([]);
  });

  it("gets no digest of the alerts deferred past the cap before the suspension, nor does one who unsubscribed; the others still do", async () => {
    const spot = place();
    const [kept, banned, gone] = [freshActor("kept"), freshActor("banned"), freshActor("gone")];
    for (const actor of [kept, banned, gone]) await subscribe(h.db.pool, actor, offset(spot, -1), 5);
    // A cap of 1: the first report notifies all three, the second is deferred for all three.
    const first = await createLostReport(h.api, freshActor("reporter"), { location: spot });
    await fanOut(first, { dailyCap: 1 });
    const second = await createLostReport(h.api, freshActor("reporter"), { location: offset(spot, 0.3) });
    const secondFanout = await fanOut(second, { dailyCap: 1 });
    // Deferred, with no ledger row until the digest.
    expect(await fanoutRow(h.db.pool, secondFanout)).toMatchObject({ status: "done", deferred: 3 });
    expect(await ledgerOf(second, banned)).toBeUndefined();
    await suspend(banned);
    await h.db.pool.query(`delete from alert_subscription where actor_id = $1`, [gone]);

    // The digest, with the cap the fan-outs had, finds the deferred report through each subscription still there.
    const tomorrow = dayAfter(await utcToday(h.db.pool));
    expect(await runDigest(h.api.pool, tomorrow, 1)).toEqual({ subscriberDays: 2, notifications: 1 });
    expect(await runDigest(h.api.pool, tomorrow, 1)).toEqual({ subscriberDays: 0, notifications: 0 });

    const digests = await h.db.pool.query(
      `select recipient_actor_id as actor, data->>'lostReportIds' as reports from notification where kind = 'nearby_lost' and data ? 'digestDay'`,
    );
    expect(digests.rows).toEqual([{ actor: kept, reports: second }]);
    expect(await ledgerOf(second, banned)).toBe("skipped");
    expect(await ledgerOf(second, gone)).toBeUndefined();
    expect(await ledgerOf(second, kept)).toBe("digested");
  });
});
