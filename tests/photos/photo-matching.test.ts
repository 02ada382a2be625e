import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SUGGESTION_THRESHOLD } from "../../lib/matches.js";
import { LocalObjectStorage } from "../../lib/storage/index.js";
import { scoreMatch } from "../../jobs/matching/score.js";
import { loadSide } from "../../jobs/matching/store.js";
import { as, TEST_PHOTO_DIR } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { eventually } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, freshActor } from "../safety/helpers.js";
import { phoneJpeg, untilStatus, upload } from "./support.js";

/**
 * Photos take part in matching: the matcher reads the ready photos' dHashes
 * of both sides, and a photo becoming ready re-runs matching for its report
 * (events.photo.ready.v1 → match__subject job), through the real relay,
 * consumer, photo jobs and matcher.
 */
let h: Harness;
let pipeline: Pipeline;

beforeAll(async () => {
  h = await startHarness();
  pipeline = await startPipeline(h.api.pool, h.api.nc, { photoStorage: new LocalObjectStorage(TEST_PHOTO_DIR) });
});
afterAll(async () => {
  await pipeline?.stop();
  await h?.close();
  rmSync(TEST_PHOTO_DIR, { recursive: true, force: true });
});

const lastSeenAt = "2026-08-01T08:00:00Z";
const home = { lat: 47.3769, lon: 8.5417 };

/** Both sides name only the species, 11 km and two days apart: nothing else says it is the same dog. */
async function bareReports() {
  const owner = freshActor("photo-owner");
  const finder = freshActor("photo-finder");
  const lostId = await createLostReport(h.api, owner, { animal: { species: "dog" }, lastSeenAt, location: home, description: undefined, verificationDetail: undefined });
  const foundId = await createFoundReport(h.api, finder, {
    animal: { species: "dog" },
    foundAt: "2026-08-03T10:00:00Z",
    location: { lat: home.lat + 0.1, lon: home.lon },
  });
  return { owner, finder, lostId, foundId };
}

const matchesOf = async (lostId: string, owner: string) => {
  const res = await call(h.api, { url: `/v1/safety/lost-reports/${lostId}/matches`, headers: as(owner) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().items as Array<{ targetId: string; score: number; reasons: string[] }>;
};

/** Matching and photo jobs and unpublished events are all gone: the pipeline is idle. */
const settled = () =>
  eventually(async () => {
    const { rows } = await h.db.pool.query(
      `select (select count(*)::int from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
               where t.identifier = 'match__subject' or t.identifier like 'photo%') as jobs,
              (select count(*)::int from outbox_event where published_at is null) as unpublished`,
    );
    return rows[0].jobs === 0 && rows[0].unpublished === 0 ? true : undefined;
  }, 30_000);

describe("the same picture on a lost and a found report", () => {
  it("re-runs matching when the photos become ready, and suggests the pair for the photo reason", async () => {
    const { owner, finder, lostId, foundId } = await bareReports();
    await settled();
    expect(await matchesOf(lostId, owner)).toEqual([]);
    // The matcher's own reading of the two sides without photos: below the threshold.
    const without = scoreMatch((await loadSide(h.db.pool, { kind: "lost", id: lostId }))!, (await loadSide(h.db.pool, { kind: "found", id: foundId }))!);
    expect(without.score).toBeLessThan(SUGGESTION_THRESHOLD);

    // The owner's photo, and the finder's snapshot of the same dog (re-encoded at another size).
    const ownersPhoto = await phoneJpeg(1600, 1200, 1);
    const findersPhoto = await phoneJpeg(1000, 750, 1);
    const a = await upload(h.api, `/v1/safety/lost-reports/${lostId}/photos`, owner, ownersPhoto);
    const b = await upload(h.api, `/v1/safety/found-reports/${foundId}/photos`, finder, findersPhoto);
    await untilStatus(h.db.pool, a.json().id, "ready");
    await untilStatus(h.db.pool, b.json().id, "ready");

    const [match] = await eventually(async () => {
      const items = await matchesOf(lostId, owner);
      return items.length === 1 ? items : undefined;
    }, 30_000);
    expect(match).toMatchObject({ targetId: foundId, reasons: expect.arrayContaining(["photo"]) });
    expect(match!.score).toBeGreaterThanOrEqual(SUGGESTION_THRESHOLD);
    const side = await loadSide(h.db.pool, { kind: "lost", id: lostId });
    expect(side!.photoHashes).toEqual([expect.stringMatching(/^[0-9a-f]{16}$/)]);
  });

  it("leaves out the hash of a photo a moderator hid, and of a sighting (none)", async () => {
    const { owner, lostId } = await bareReports();
    const res = await upload(h.api, `/v1/safety/lost-reports/${lostId}/photos`, owner, await phoneJpeg(800, 600, 2));
    await untilStatus(h.db.pool, res.json().id, "ready");
    expect((await loadSide(h.db.pool, { kind: "lost", id: lostId }))!.photoHashes).toHaveLength(1);
    await h.db.pool.query(`insert into moderation_content_state (target_type, target_id, state, applied_by) values ('photo', $1, 'quarantined', 'admin-1')`, [
      res.json().id,
    ]);
    expect((await loadSide(h.db.pool, { kind: "lost", id: lostId }))!.photoHashes).toEqual([]);
  });
});
