import { createECDH, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDigest } from "../../jobs/scheduled/alerts-digest.js";
import { runFanoutBatch } from "../../jobs/fanout/fanout.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createLostReport, freshActor } from "../safety/helpers.js";
import { dayAfter, fanoutRow, offset, startTestFanout, subscribe, utcToday } from "../alerts/helpers.js";

/**
 * nearby_lost goes to push as well, under the same daily cap, and the next
 * morning's digest is pushed too: the fan-out and the digest write a push row
 * for each recipient who has a push subscription at that moment.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

async function subscribePhone(actor: string): Promise<void> {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  const res = await call(h.api, {
    method: "POST",
    url: "/v1/me/push-subscriptions",
    headers: as(actor),
    payload: {
      endpoint: `https://push.example.com/send/${randomBytes(8).toString("hex")}`,
      keys: { p256dh: ecdh.getPublicKey().toString("base64url"), auth: randomBytes(16).toString("base64url") },
    },
  });
  expect(res.statusCode).toBe(201);
}

/** Each recipient's nearby_lost rows as "channel status" and whether they are a digest. */
async function nearbyRows(actors: string[]) {
  const { rows } = await h.db.pool.query<{ actor: string; channel: string; status: string; digest: boolean; jobs: number }>(
    `select n.recipient_actor_id as actor, n.channel, n.status, n.data ? 'digestDay' as digest,
       (select count(*)::int from graphile_worker._private_jobs j where j.payload::jsonb->'notificationIds' ? n.id::text) as jobs
     from notification n where n.kind = 'nearby_lost' and n.recipient_actor_id = any($1) order by 1, 4, 2`,
    [actors],
  );
  return rows;
}

describe("nearby_lost by push", () => {
  it("is pushed to subscribers with a phone, under the same daily cap, and the next morning's digest is pushed too", async () => {
    const spot = { lat: 47.218371, lon: -1.553621 };
    const withPhone = freshActor("phone");
    const without = freshActor("nophone");
    for (const actor of [withPhone, without]) await subscribe(h.db.pool, actor, spot, 10);
    await subscribePhone(withPhone);
    const capOne = { batchSize: 10, dailyCap: 1 };
    const runAll = async (reportId: string) => {
      const fanout = await startTestFanout(h.db.pool, reportId);
      for (let b = 0; (await fanoutRow(h.db.pool, fanout)).status === "running"; b++) await runFanoutBatch(h.db.pool, fanout, b, capOne);
      return fanoutRow(h.db.pool, fanout);
    };

    // The first report: both notified; the phone's owner in the app and by push (its delivery job queued).
    expect(await runAll(await createLostReport(h.api, freshActor("reporter"), { location: offset(spot, 1) }))).toMatchObject({ notified: 2 });
    expect(await nearbyRows([withPhone, without])).toEqual([
      { actor: withPhone, channel: "in_app", status: "sent", digest: false, jobs: 0 },
      { actor: withPhone, channel: "push", status: "pending", digest: false, jobs: 1 },
      { actor: without, channel: "in_app", status: "sent", digest: false, jobs: 0 },
    ].sort((a, b) => a.actor.localeCompare(b.actor)));

    // The second is past the cap of 1: nothing now, on any channel; the next morning's digest lists it, pushed as well.
    const deferred = await createLostReport(h.api, freshActor("reporter"), { location: offset(spot, 2) });
    expect(await runAll(deferred)).toMatchObject({ deferred: 2, notified: 0 });
    expect(await nearbyRows([withPhone])).toHaveLength(2);
    await runDigest(h.db.pool, dayAfter(await utcToday(h.db.pool)), 1);
    const digests = (await nearbyRows([withPhone, without])).filter((r) => r.digest);
    expect(digests).toEqual([
      { actor: withPhone, channel: "in_app", status: "sent", digest: true, jobs: 0 },
      { actor: withPhone, channel: "push", status: "pending", digest: true, jobs: 1 },
      { actor: without, channel: "in_app", status: "sent", digest: true, jobs: 0 },
    ].sort((a, b) => a.actor.localeCompare(b.actor)));
  });
});
