import { rmSync } from "node:fs";
import { deflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalObjectStorage } from "../../lib/storage/index.js";
import { admin, as, buildTestApi, devEnv, TEST_PHOTO_DIR } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, freshActor, moderate } from "../safety/helpers.js";
import { expectProblemOf, localObjectCount, photoJobsNow, photoStatus, scene, smallJpeg, upload } from "./support.js";

/**
 * Which photos anyone may see, and their deletion. The jobs' functions are
 * called directly (the same ones the notifier's worker runs), so each step
 * happens exactly when the test says.
 */
let h: Harness;
const storage = new LocalObjectStorage(TEST_PHOTO_DIR);
const { process: processNow, deleteObjects: deleteObjectsNow } = photoJobsNow(() => h.api.pool, storage);

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
  rmSync(TEST_PHOTO_DIR, { recursive: true, force: true });
});

/** Uploads smallJpeg(seed), or the given image, and processes it. */
async function readyPhoto(url: string, owner: string, image: number | Buffer): Promise<string> {
  const res = await upload(h.api, url, owner, typeof image === "number" ? await smallJpeg(image) : image);
  expect(res.statusCode, res.body).toBe(202);
  await processNow(res.json().id);
  expect((await photoStatus(h.db.pool, res.json().id)).status).toBe("ready");
  return res.json().id;
}

const get = (url: string, headers: Record<string, string> = {}) => call(h.api, { url, headers });
const variant = (id: string, which = "thumb", headers: Record<string, string> = {}) => get(`/v1/photos/${id}/${which}`, headers);

/** Reports content through the API and has an admin act on it. */
async function moderateThroughApi(targetType: string, targetId: string, action: "quarantine" | "remove") {
  const report = await call(h.api, {
    method: "POST",
    url: "/v1/moderation/reports",
    headers: as(freshActor("flagger")),
    payload: { targetType, targetId, reason: "abuse" },
  });
  expect(report.statusCode, report.body).toBe(201);
  const moderator = admin(freshActor("moderator"));
  expect((await call(h.api, { method: "POST", url: `/v1/admin/moderation/${report.json().id}/claim`, headers: moderator })).statusCode).toBe(200);
  const acted = await call(h.api, { method: "POST", url: `/v1/admin/moderation/${report.json().id}/action`, headers: moderator, payload: { action } });
  expect(acted.statusCode, acted.body).toBe(200);
  return report.json().id as string;
}

describe("serving a variant", () => {
  it("is 404 while processing, then image/webp with an ETag that If-None-Match turns into 304; HEAD has the length only", async () => {
    const owner = freshActor("serve");
    const reportId = await createLostReport(h.api, owner);
    const res = await upload(h.api, `/v1/safety/lost-reports/${reportId}/photos`, owner, await smallJpeg(1));
    const { id } = res.json();
    expectProblemOf(await variant(id), 404, "not-found");
    expect((await get(`/v1/safety/lost-reports/${reportId}`)).json().photos).toEqual([]);

    await processNow(id);
    const got = await variant(id, "display");
    expect(got.statusCode).toBe(200);
    expect(got.headers["content-type"]).toBe("image/webp");
    expect(Number(got.headers["content-length"])).toBe(got.rawPayload.length);
    const etag = got.headers.etag as string;
    const notModified = await variant(id, "display", { "if-none-match": etag });
    expect(notModified.statusCode).toBe(304);
    expect(notModified.rawPayload.length).toBe(0);
    expect(notModified.headers).toMatchObject({ etag, "cache-control": "public, max-age=31536000, immutable" });
    expect((await variant(id, "display", { "if-none-match": '"another"' })).statusCode).toBe(200);

    const head = await call(h.api, { method: "HEAD", url: `/v1/photos/${id}/thumb` });
    expect(head.statusCode).toBe(200);
    expect(head.rawPayload.length).toBe(0);
    expect(Number(head.headers["content-length"])).toBe((await variant(id)).rawPayload.length);
  });

  it("never serves the original, and refuses an unknown photo or variant", async () => {
    const owner = freshActor("serve-original");
    const reportId = await createLostReport(h.api, owner);
    const { id } = (await upload(h.api, `/v1/safety/lost-reports/${reportId}/photos`, owner, await smallJpeg(2))).json();
    await processNow(id);
    for (const name of ["original", "originals", "..%2Foriginals", "full"]) expect((await variant(id, name)).statusCode).toBe(400);
    expectProblemOf(await variant(crypto.randomUUID()), 404, "not-found");
  });
});

describe("serving variants from memory (API_PHOTO_CACHE_BYTES), shown by taking the stored objects away", () => {
  // A size no other test here uploads: no variant of these images was served (and kept) before.
  const unseen = (seed: number) => scene(240, 180, seed).jpeg().toBuffer();
  const keysOf = async (id: string) =>
    (await h.db.pool.query<{ thumb: string; display: string }>(`select thumb_key as thumb, display_key as display from photo where id = $1`, [id])).rows[0]!;

  it("serves a variant read once without storage, while quarantine and delete still take effect at once", async () => {
    const owner = freshActor("cached");
    const id = await readyPhoto(`/v1/safety/lost-reports/${await createLostReport(h.api, owner)}/photos`, owner, await unseen(1));
    const first = await variant(id);
    expect(first.statusCode).toBe(200);

    const keys = await keysOf(id);
    await storage.delete(keys.thumb);
    await storage.delete(keys.display);
    const again = await variant(id);
    expect(again.statusCode).toBe(200);
    expect(again.rawPayload.equals(first.rawPayload)).toBe(true);
    expect(again.headers.etag).toBe(first.headers.etag);
    // Never read, so never kept: its object is gone.
    expectProblemOf(await variant(id, "display"), 404, "not-found");

    await moderate(h.db, "photo", id, "quarantined");
    expectProblemOf(await variant(id), 404, "not-found");
    expect((await variant(id, "thumb", as(owner))).headers["cache-control"]).toBe("private, no-store");
    expect((await call(h.api, { method: "DELETE", url: `/v1/photos/${id}`, headers: as(owner) })).statusCode).toBe(204);
    expectProblemOf(await variant(id, "thumb", as(owner)), 404, "not-found");
  });

  it("keeps nothing with API_PHOTO_CACHE_BYTES=0", async () => {
    const uncached = await buildTestApi(devEnv(h.db.url, h.bus.url, { API_PHOTO_CACHE_BYTES: "0" }));
    try {
      const owner = freshActor("uncached");
      const id = await readyPhoto(`/v1/safety/lost-reports/${await createLostReport(h.api, owner)}/photos`, owner, await unseen(2));
      expect((await call(uncached, { url: `/v1/photos/${id}/thumb` })).statusCode).toBe(200);
      await storage.delete((await keysOf(id)).thumb);
      expectProblemOf(await call(uncached, { url: `/v1/photos/${id}/thumb` }), 404, "not-found");
    } finally {
      await uncached.close();
    }
  });
});

describe("report and animal views list ready photos, oldest first", () => {
  it("lists a lost report's ready photos as {id, thumbUrl, displayUrl, width, height}, leaving out one still processing", async () => {
    const owner = freshActor("views");
    const reportId = await createLostReport(h.api, owner);
    const url = `/v1/safety/lost-reports/${reportId}/photos`;
    const first = await readyPhoto(url, owner, 3);
    const second = await readyPhoto(url, owner, 4);
    const waiting = (await upload(h.api, url, owner, await smallJpeg(5))).json().id;
    const view = (await get(`/v1/safety/lost-reports/${reportId}`)).json();
    expect(view.photos).toEqual([
      { id: first, thumbUrl: `http://localhost:8080/v1/photos/${first}/thumb`, displayUrl: `http://localhost:8080/v1/photos/${first}/display`, width: 200, height: 150 },
      { id: second, thumbUrl: expect.stringMatching(/thumb$/), displayUrl: expect.stringMatching(/display$/), width: 200, height: 150 },
    ]);
    expect(view.photos.map((p: { id: string }) => p.id)).not.toContain(waiting);
    const privateView = (await get(`/v1/safety/lost-reports/${reportId}/private`, as(owner))).json();
    expect(privateView.photos.map((p: { id: string }) => p.id)).toEqual([first, second]);
  });

  it("lists a found report's photos", async () => {
    const finder = freshActor("finder");
    const reportId = await createFoundReport(h.api, finder);
    const id = await readyPhoto(`/v1/safety/found-reports/${reportId}/photos`, finder, 6);
    expect((await get(`/v1/safety/found-reports/${reportId}`)).json().photos).toEqual([expect.objectContaining({ id })]);
  });

  it("an animal's photos are public only with a live emergency profile, which lists them", async () => {
    const owner = freshActor("animal-owner");
    const animal = await call(h.api, { method: "POST", url: "/v1/animals", headers: as(owner), payload: { name: "Mia", species: "cat" } });
    const animalId = animal.json().id;
    const id = await readyPhoto(`/v1/animals/${animalId}/photos`, owner, 7);
    expect((await get(`/v1/animals/${animalId}`, as(owner))).json().photos).toEqual([expect.objectContaining({ id })]);
    // No public page for the animal yet: only its owner gets the photo, never from a shared cache.
    expectProblemOf(await variant(id), 404, "not-found");
    const mine = await variant(id, "thumb", as(owner));
    expect(mine.statusCode).toBe(200);
    expect(mine.headers["cache-control"]).toBe("private, no-store");

    const profile = await call(h.api, { method: "PUT", url: `/v1/animals/${animalId}/emergency-profile`, headers: as(owner), payload: { showName: true } });
    const { token } = profile.json();
    const emergency = (await get(`/emergency/${token}`)).json();
    expect(emergency.photos).toEqual([expect.objectContaining({ id, width: 200, height: 150 })]);
    expect((await variant(emergency.photos[0].thumbUrl.split("/v1/photos/")[1].split("/")[0])).statusCode).toBe(200);

    const revoked = await call(h.api, {
      method: "POST",
      url: `/v1/admin/animals/${animalId}/emergency-profile/revoke`,
      headers: admin(),
      payload: { reason: "lost tag" },
    });
    expect(revoked.statusCode, revoked.body).toBe(204);
    expectProblemOf(await variant(id), 404, "not-found");
  });
});

describe("moderation: a photo is a target; a quarantined photo, or any photo of quarantined content, is 404", () => {
  it("quarantines a photo reported with targetType photo: 404 to the public, still shown to its owner and admins", async () => {
    const owner = freshActor("moderated-owner");
    const reportId = await createLostReport(h.api, owner);
    const url = `/v1/safety/lost-reports/${reportId}/photos`;
    const kept = await readyPhoto(url, owner, 8);
    const bad = await readyPhoto(url, owner, 9);
    const moderationId = await moderateThroughApi("photo", bad, "quarantine");

    for (const which of ["thumb", "display"]) expectProblemOf(await variant(bad, which), 404, "not-found");
    expectProblemOf(await variant(bad, "thumb", as(freshActor("stranger"))), 404, "not-found");
    expect((await variant(bad, "thumb", as(owner))).headers["cache-control"]).toBe("private, no-store");
    expect((await variant(bad, "thumb", admin())).statusCode).toBe(200);
    expect((await variant(kept)).statusCode).toBe(200);

    expect((await get(`/v1/safety/lost-reports/${reportId}`)).json().photos.map((p: { id: string }) => p.id)).toEqual([kept]);
    const ownersView = (await get(`/v1/safety/lost-reports/${reportId}`, as(owner))).json();
    expect(ownersView.photos).toEqual([expect.objectContaining({ id: kept }), expect.objectContaining({ id: bad, moderationState: "quarantined" })]);
    expect((await get(`/v1/photos/${bad}`, as(owner))).json()).toMatchObject({ status: "ready", moderationState: "quarantined" });

    const queue = (await get(`/v1/admin/moderation/queue?status=open`, admin())).json();
    expect(queue.items.find((i: { id: string }) => i.id === moderationId)).toBeUndefined();
    const { rows } = await h.db.pool.query(`select payload from outbox_event where type = 'events.moderation.content_moderated.v1' and payload->>'targetId' = $1`, [bad]);
    expect(rows.map((r) => r.payload)).toEqual([expect.objectContaining({ authorId: owner, targetType: "photo", state: "quarantined" })]);
  });

  it("a removed photo is 404 too, and a photo of a quarantined or removed report is 404 with it", async () => {
    const owner = freshActor("report-moderated");
    const reportId = await createLostReport(h.api, owner);
    const id = await readyPhoto(`/v1/safety/lost-reports/${reportId}/photos`, owner, 10);
    const other = await readyPhoto(`/v1/safety/lost-reports/${reportId}/photos`, owner, 11);
    await moderateThroughApi("photo", other, "remove");
    expectProblemOf(await variant(other), 404, "not-found");
    expect((await variant(id)).statusCode).toBe(200);
    await moderate(h.db, "lost_report", reportId, "quarantined");
    expectProblemOf(await variant(id), 404, "not-found");
    expect((await variant(id, "thumb", as(owner))).statusCode).toBe(200);

    const finder = freshActor("found-moderated");
    const foundId = await createFoundReport(h.api, finder);
    const foundPhoto = await readyPhoto(`/v1/safety/found-reports/${foundId}/photos`, finder, 12);
    await moderateThroughApi("found_report", foundId, "remove");
    expectProblemOf(await variant(foundPhoto), 404, "not-found");
  });

  it("refuses a moderation report on an unknown or deleted photo with 404", async () => {
    const flag = (targetId: string) =>
      call(h.api, { method: "POST", url: "/v1/moderation/reports", headers: as(freshActor("flagger")), payload: { targetType: "photo", targetId, reason: "spam" } });
    expectProblemOf(await flag(crypto.randomUUID()), 404, "not-found");
    const owner = freshActor("deleted-target");
    const reportId = await createLostReport(h.api, owner);
    const id = await readyPhoto(`/v1/safety/lost-reports/${reportId}/photos`, owner, 13);
    expect((await call(h.api, { method: "DELETE", url: `/v1/photos/${id}`, headers: as(owner) })).statusCode).toBe(204);
    expectProblemOf(await flag(id), 404, "not-found");
  });
});

describe("delete: the uploader or an admin; the objects go by an idempotent job", () => {
  const objectsOf = async (id: string) => {
    const { rows } = await h.db.pool.query(`select thumb_key, display_key, original_sha256 from photo where id = $1`, [id]);
    return [rows[0].thumb_key, rows[0].display_key].map((key: string) => storage.exists(key));
  };

  it("deletes on the uploader's word: 204, gone from views and serving; the job removes the objects, twice without harm", async () => {
    const owner = freshActor("deleter");
    const reportId = await createLostReport(h.api, owner);
    const id = await readyPhoto(`/v1/safety/lost-reports/${reportId}/photos`, owner, 14);
    expect(await Promise.all(await objectsOf(id))).toEqual([true, true]);

    expectProblemOf(await call(h.api, { method: "DELETE", url: `/v1/photos/${id}`, headers: as(freshActor("stranger")) }), 403, "forbidden");
    const res = await call(h.api, { method: "DELETE", url: `/v1/photos/${id}`, headers: as(owner) });
    expect(res.statusCode).toBe(204);
    expectProblemOf(await variant(id), 404, "not-found");
    expectProblemOf(await variant(id, "thumb", as(owner)), 404, "not-found");
    expect((await get(`/v1/safety/lost-reports/${reportId}`)).json().photos).toEqual([]);
    expect((await get(`/v1/photos/${id}`, as(owner))).json().status).toBe("deleted");
    const { rows: jobs } = await h.db.pool.query(
      `select count(*)::int as n from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
       where t.identifier = 'photo__delete_objects' and j.payload->>'photoId' = $1`,
      [id],
    );
    expect(jobs[0].n).toBe(1);

    await deleteObjectsNow(id);
    expect(await Promise.all(await objectsOf(id))).toEqual([false, false]);
    await deleteObjectsNow(id);
    expect((await call(h.api, { method: "DELETE", url: `/v1/photos/${id}`, headers: as(owner) })).statusCode).toBe(204);
  });

  it("keeps an object another photo still shows: the same bytes on two reports share their variants", async () => {
    const owner = freshActor("shared");
    const jpeg = await smallJpeg(15);
    const ids: string[] = [];
    for (const reportId of [await createLostReport(h.api, owner), await createLostReport(h.api, owner)]) {
      const res = await upload(h.api, `/v1/safety/lost-reports/${reportId}/photos`, owner, jpeg);
      await processNow(res.json().id);
      ids.push(res.json().id);
    }
    const [a, b] = ids as [string, string];
    const { rows } = await h.db.pool.query(`select distinct thumb_key from photo where id = any($1)`, [ids]);
    expect(rows).toHaveLength(1);
    const before = localObjectCount(TEST_PHOTO_DIR);

    expect((await call(h.api, { method: "DELETE", url: `/v1/photos/${a}`, headers: as(owner) })).statusCode).toBe(204);
    await deleteObjectsNow(a);
    expect(localObjectCount(TEST_PHOTO_DIR)).toBe(before);
    expect((await variant(b)).statusCode).toBe(200);

    expect((await call(h.api, { method: "DELETE", url: `/v1/photos/${b}`, headers: as(owner) })).statusCode).toBe(204);
    await deleteObjectsNow(b);
    expect(localObjectCount(TEST_PHOTO_DIR)).toBe(before - 2);
  });

  it("lets a platform admin delete anyone's photo, audited as admin.photo.deleted in the same transaction", async () => {
    const owner = freshActor("admin-deleted");
    const reportId = await createLostReport(h.api, owner);
    const id = await readyPhoto(`/v1/safety/lost-reports/${reportId}/photos`, owner, 16);
    expect((await get(`/v1/photos/${id}`, admin("photo-admin"))).statusCode).toBe(200);
    expect((await call(h.api, { method: "DELETE", url: `/v1/photos/${id}`, headers: admin("photo-admin") })).statusCode).toBe(204);
    const { rows } = await h.db.pool.query(`select actor_id, object_type, metadata from audit_event where action = 'admin.photo.deleted' and object_id = $1`, [id]);
    expect(rows).toEqual([{ actor_id: "photo-admin", object_type: "photo", metadata: expect.objectContaining({ uploaderId: owner, previousStatus: "ready" }) }]);
    const { rows: events } = await h.db.pool.query(`select payload from outbox_event where type = 'events.photo.deleted.v1' and payload->>'photoId' = $1`, [id]);
    expect(events[0].payload).toMatchObject({ uploaderId: owner, deletedBy: "photo-admin", parentType: "lost_report", parentId: reportId });
  });
});

/** A PNG whose chunks are all there, with pixel data that is not zlib: its header reads fine, its pixels do not. */
function corruptPixelsPng(): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, "latin1");
    data.copy(out, 8);
    return out;
  };
  const ihdr = Buffer.from([0, 0, 0, 64, 0, 0, 0, 64, 8, 2, 0, 0, 0]);
  const garbage = Buffer.concat([deflateSync(Buffer.alloc(10, 0)).subarray(0, 2), Buffer.alloc(300, 0xab)]);
  return Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), chunk("IHDR", ihdr), chunk("IDAT", garbage), chunk("IEND", Buffer.alloc(0))]);
}

describe("processing that cannot succeed", () => {
  it("marks an image whose pixels cannot be decoded failed at once, with a reason the owner and admins see; the original goes", async () => {
    const owner = freshActor("corrupt");
    const reportId = await createLostReport(h.api, owner);
    const res = await upload(h.api, `/v1/safety/lost-reports/${reportId}/photos`, owner, corruptPixelsPng(), "broken.png");
    expect(res.statusCode, res.body).toBe(202);
    const { id } = res.json();
    const originals = localObjectCount(TEST_PHOTO_DIR, "originals");
    await processNow(id);
    const seen = (await get(`/v1/photos/${id}`, as(owner))).json();
    expect(seen).toMatchObject({ status: "failed", failureReason: expect.stringMatching(/^unreadable: /), thumbUrl: null });
    expect((await get(`/v1/photos/${id}`, admin())).json().failureReason).toBe(seen.failureReason);
    expectProblemOf(await variant(id, "thumb", as(owner)), 404, "not-found");
    expect(localObjectCount(TEST_PHOTO_DIR, "originals")).toBe(originals - 1);
    const { rows } = await h.db.pool.query(`select payload from outbox_event where type = 'events.photo.failed.v1' and payload->>'photoId' = $1`, [id]);
    expect(rows[0].payload.reason).toBe(seen.failureReason);
  });

  it("is idempotent: a second run of a finished photo changes nothing", async () => {
    const owner = freshActor("twice");
    const reportId = await createLostReport(h.api, owner);
    const id = await readyPhoto(`/v1/safety/lost-reports/${reportId}/photos`, owner, 17);
    const before = await h.db.pool.query(`select * from photo where id = $1`, [id]);
    const events = await h.db.pool.query(`select count(*)::int as n from outbox_event`);
    await processNow(id, 2);
    expect((await h.db.pool.query(`select * from photo where id = $1`, [id])).rows).toEqual(before.rows);
    expect((await h.db.pool.query(`select count(*)::int as n from outbox_event`)).rows).toEqual(events.rows);
    expect((await variant(id)).statusCode).toBe(200);
  });

  it("only the owner and admins see a photo's status", async () => {
    const owner = freshActor("status");
    const reportId = await createLostReport(h.api, owner);
    const { id } = (await upload(h.api, `/v1/safety/lost-reports/${reportId}/photos`, owner, await smallJpeg(18))).json();
    expectProblemOf(await get(`/v1/photos/${id}`, as(freshActor("nosy"))), 403, "forbidden");
    expectProblemOf(await get(`/v1/photos/${crypto.randomUUID()}`, as(owner)), 404, "not-found");
    expect((await get(`/v1/photos/${id}`, as(owner))).json()).toMatchObject({ status: "processing", attempts: 0, readyAt: null });
  });
});
