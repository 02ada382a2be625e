import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalObjectStorage } from "../../lib/storage/index.js";
import { as, TEST_PHOTO_DIR } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, freshActor, moderate } from "../safety/helpers.js";
import { reportAnimalLost } from "../tag/helpers.js";
import { localObjectCount, photoJobsNow, smallJpeg, upload } from "./support.js";

/**
 * POST /v1/animals/{id}/lost makes "a lost report from the animal's data and
 * photos" (contract part 2): the report gets the animal's ready photos as its
 * own, naming the same stored images.
 */
let h: Harness;
const storage = new LocalObjectStorage(TEST_PHOTO_DIR);
const jobs = photoJobsNow(() => h.api.pool, storage);

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
  rmSync(TEST_PHOTO_DIR, { recursive: true, force: true });
});

async function newAnimal(owner: string): Promise<string> {
  const res = await call(h.api, { method: "POST", url: "/v1/animals", headers: as(owner), payload: { name: "Pixel", species: "cat" } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

/** Uploads a photo of the animal; `processed` runs its job, so it is ready. */
async function animalPhoto(animalId: string, owner: string, seed: number, processed = true): Promise<string> {
  const res = await upload(h.api, `/v1/animals/${animalId}/photos`, owner, await smallJpeg(seed));
  expect(res.statusCode, res.body).toBe(202);
  if (processed) await jobs.process(res.json().id);
  return res.json().id;
}

const keysOf = async (id: string) =>
  (await h.db.pool.query<{ thumb: string; display: string }>(`select thumb_key as thumb, display_key as display from photo where id = $1`, [id])).rows[0]!;

const thumb = (id: string, headers: Record<string, string> = {}) => call(h.api, { url: `/v1/photos/${id}/thumb`, headers });

describe("POST /v1/animals/{id}/lost carries the animal's photos onto the report", () => {
  it("gives the report the animal's ready photos no moderator hid, oldest first, naming the same stored images", async () => {
    const owner = freshActor("lost-with-photos");
    const animalId = await newAnimal(owner);
    const first = await animalPhoto(animalId, owner, 31);
    const second = await animalPhoto(animalId, owner, 32);
    const hidden = await animalPhoto(animalId, owner, 33);
    await moderate(h.db, "photo", hidden, "quarantined");
    await animalPhoto(animalId, owner, 34, false);
    const objectsBefore = localObjectCount(TEST_PHOTO_DIR);

    const res = await call(h.api, {
      method: "POST",
      url: `/v1/animals/${animalId}/lost`,
      headers: as(owner),
      payload: { lastSeenAt: "2025-11-21T10:00:00Z", location: { lat: 52.52, lon: 13.4 } },
    });
    expect(res.statusCode, res.body).toBe(201);
    const carried: Array<{ id: string; width: number; height: number }> = res.json().photos;
    expect(carried).toHaveLength(2);
    expect(carried.map((p) => p.id)).not.toContain(first);
    expect(carried.map((p) => ({ width: p.width, height: p.height }))).toEqual([{ width: 200, height: 150 }, { width: 200, height: 150 }]);

    // The report's own photos, public with it, the same images as the animal's (the ETag is their hash), no byte copied.
    const report = (await call(h.api, { url: `/v1/safety/lost-reports/${res.json().id}` })).json();
    expect(report.photos.map((p: { id: string }) => p.id)).toEqual(carried.map((p) => p.id));
    for (const [copy, source] of [[carried[0]!.id, first], [carried[1]!.id, second]] as const) {
      expect(await keysOf(copy)).toEqual(await keysOf(source));
      const served = await thumb(copy);
      expect(served.statusCode).toBe(200);
      expect(served.headers.etag).toBe((await thumb(source, as(owner))).headers.etag);
      expect((await call(h.api, { url: `/v1/photos/${copy}`, headers: as(owner) })).json()).toMatchObject({
        status: "ready",
        parent: { type: "lost_report", id: report.id },
      });
    }
    expect(localObjectCount(TEST_PHOTO_DIR)).toBe(objectsBefore);
  });

  it("keeps a carried photo's images when the animal's photo is deleted, and removes them once neither needs them", async () => {
    const owner = freshActor("lost-then-deleted");
    const animalId = await newAnimal(owner);
    const source = await animalPhoto(animalId, owner, 35);
    const reportId = await reportAnimalLost(h.api, owner, animalId);
    const [copy] = (await call(h.api, { url: `/v1/safety/lost-reports/${reportId}` })).json().photos as Array<{ id: string }>;
    const keys = await keysOf(copy!.id);

    expect((await call(h.api, { method: "DELETE", url: `/v1/photos/${source}`, headers: as(owner) })).statusCode).toBe(204);
    await jobs.deleteObjects(source);
    expect(await storage.exists(keys.thumb)).toBe(true);
    expect(await storage.exists(keys.display)).toBe(true);
    expect((await thumb(copy!.id)).statusCode).toBe(200);

    expect((await call(h.api, { method: "DELETE", url: `/v1/photos/${copy!.id}`, headers: as(owner) })).statusCode).toBe(204);
    await jobs.deleteObjects(copy!.id);
    expect(await storage.exists(keys.thumb)).toBe(false);
    expect(await storage.exists(keys.display)).toBe(false);
  });

  it("makes a report without photos from an animal that has none ready", async () => {
    const owner = freshActor("lost-no-photos");
    const animalId = await newAnimal(owner);
    await animalPhoto(animalId, owner, 36, false);
    const reportId = await reportAnimalLost(h.api, owner, animalId);
    expect((await call(h.api, { url: `/v1/safety/lost-reports/${reportId}` })).json().photos).toEqual([]);
  });
});
