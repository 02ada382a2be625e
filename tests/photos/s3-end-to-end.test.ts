import { pino } from "pino";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadNotifierConfig } from "../../lib/config.js";
import { createObjectStorage, S3ObjectStorage, type ObjectStorage } from "../../lib/storage/index.js";
import type { SupervisedWorker } from "../../lib/worker.js";
import { createPhotoProcessor } from "../../jobs/photos/process.js";
import { as, devEnv } from "../helpers/app.js";
import { startS3Server, type TestS3Server } from "../helpers/s3-server.js";
import { eventually } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createLostReport, freshActor } from "../safety/helpers.js";
import { decompressionBombPng } from "./bomb.js";
import {
  expectProblemOf,
  footprint,
  paddedJpeg,
  phoneJpeg,
  photoPart,
  photoStatus,
  s3Keys,
  smallJpeg,
  startPhotoJobs,
  untilStatus,
  upload,
  uploadRequest,
} from "./support.js";

/**
 * The S3 backend end to end: the API and the notifier's photo jobs, both
 * configured with the four OBJECT_STORAGE_* settings, against a real
 * s3rver process on a free port.
 */
let s3: TestS3Server;
let h: Harness;
let storage: ObjectStorage;
let jobs: SupervisedWorker;

beforeAll(async () => {
  s3 = await startS3Server("photos-e2e");
  const settings = {
    OBJECT_STORAGE_ENDPOINT: s3.endpoint,
    OBJECT_STORAGE_BUCKET: s3.bucket,
    OBJECT_STORAGE_ACCESS_KEY_ID: s3.accessKeyId,
    OBJECT_STORAGE_SECRET_ACCESS_KEY: s3.secretAccessKey,
  };
  h = await startHarness(settings);
  // The notifier's own settings choose the same bucket.
  storage = createObjectStorage(loadNotifierConfig(devEnv(h.db.url, h.bus.url, settings)));
  expect(storage.kind).toBe("s3");
  jobs = await startPhotoJobs(h.api.pool, storage);
});
afterAll(async () => {
  await jobs?.stop();
  await storage?.close();
  await h?.close();
  await s3?.stop();
});

describe("photos in an S3-compatible bucket (s3rver)", () => {
  it("stores the original under originals/, makes WebP variants under variants/, deletes the original, serves the variants", async () => {
    const owner = freshActor("s3-owner");
    const reportId = await createLostReport(h.api, owner);
    const res = await upload(h.api, `/v1/safety/lost-reports/${reportId}/photos`, owner, await phoneJpeg(1600, 1200, 3));
    expect(res.statusCode, res.body).toBe(202);
    const { id } = res.json();
    await untilStatus(h.db.pool, id, "ready");
    // The original goes once the variants exist, just after the row turns ready.
    const keys = await eventually(async () => {
      const now = await s3Keys(s3);
      return now.some((k) => k.startsWith("originals/")) ? undefined : now;
    }, 15_000);
    expect(keys.filter((k) => k.startsWith("originals/"))).toEqual([]);
    const { rows } = await h.db.pool.query(`select thumb_key, display_key from photo where id = $1`, [id]);
    expect(keys).toEqual(expect.arrayContaining([rows[0].thumb_key, rows[0].display_key]));

    for (const variant of ["thumb", "display"]) {
      const got = await call(h.api, { url: `/v1/photos/${id}/${variant}` });
      expect(got.statusCode).toBe(200);
      expect(got.headers["content-type"]).toBe("image/webp");
      const meta = await sharp(got.rawPayload).metadata();
      expect([meta.exif, meta.xmp, meta.iptc]).toEqual([undefined, undefined, undefined]);
      expect(Math.max(meta.width!, meta.height!)).toBe(variant === "thumb" ? 320 : 1600);
      expect(got.rawPayload.includes("Canon")).toBe(false);
    }

    expect((await call(h.api, { method: "DELETE", url: `/v1/photos/${id}`, headers: as(owner) })).statusCode).toBe(204);
    // The delete job (on the notifier's worker) removes both objects from the bucket.
    const objectsDeleted = async () => (await h.db.pool.query(`select objects_deleted_at from photo where id = $1`, [id])).rows[0].objects_deleted_at;
    await expect.poll(objectsDeleted, { timeout: 30_000 }).not.toBeNull();
    const left = await s3Keys(s3, "variants/");
    expect(left).not.toContain(rows[0].thumb_key);
    expect(left).not.toContain(rows[0].display_key);
  });

  it("stores nothing in the bucket for refused uploads", async () => {
    const owner = freshActor("s3-hostile");
    const reportId = await createLostReport(h.api, owner);
    const url = `/v1/safety/lost-reports/${reportId}/photos`;
    const count = async () => (await s3Keys(s3)).length;
    const before = await footprint(h.db.pool, count);
    const refusals: Array<[Buffer | string, number]> = [
      ["<?php system($_GET['c']); ?>", 415],
      [(await smallJpeg()).subarray(0, 400), 422],
      [await decompressionBombPng(), 422],
      [await paddedJpeg(12 * 1024 * 1024), 413],
    ];
    for (const [bytes, status] of refusals) {
      expect((await call(h.api, uploadRequest(url, owner, [photoPart(bytes)]))).statusCode).toBe(status);
    }
    expectProblemOf(await call(h.api, uploadRequest(url, freshActor("s3-stranger"), [photoPart(await smallJpeg())])), 403, "forbidden");
    expect(await footprint(h.db.pool, count)).toEqual(before);
  });
});

describe("a processing job that keeps failing", () => {
  it("is retried (it throws), and on its last attempt marks the photo failed with a reason, when the bucket is unreachable", async () => {
    const owner = freshActor("s3-down");
    const reportId = await createLostReport(h.api, owner);
    // Upload with the photo jobs stopped, so the job waits for the processor below.
    await jobs.stop();
    const res = await upload(h.api, `/v1/safety/lost-reports/${reportId}/photos`, owner, await smallJpeg(4));
    const { id } = res.json();
    // A real S3 client on a port nothing listens on (the server is not mocked: the connection is refused).
    const down = new S3ObjectStorage({ endpoint: "http://127.0.0.1:9", bucket: s3.bucket, accessKeyId: "x", secretAccessKey: "y" });
    const processor = createPhotoProcessor({ pool: h.api.pool, storage: down, logger: pino({ level: "silent" }) });
    await expect(processor(id, { attempt: 1, maxAttempts: 3 })).rejects.toThrow();
    expect(await photoStatus(h.db.pool, id)).toEqual({ status: "processing", failure_reason: null });
    await processor(id, { attempt: 3, maxAttempts: 3 });
    const seen = (await call(h.api, { url: `/v1/photos/${id}`, headers: as(owner) })).json();
    expect(seen).toMatchObject({ status: "failed", attempts: 3, failureReason: expect.stringMatching(/failed 3 times/) });
    await down.close();
    jobs = await startPhotoJobs(h.api.pool, storage);
  });
});
