import { rmSync } from "node:fs";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_UPLOAD_BYTES } from "../../lib/photos.js";
import { as, devEnv, TEST_PHOTO_DIR } from "../helpers/app.js";
import { startPartialUpload, type PartialAnswer } from "../helpers/partial-upload.js";
import { scrapeApi } from "../helpers/exposition.js";
import { eventually } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createLostReport, freshActor } from "../safety/helpers.js";
import {
  closeServed,
  expectProblemOf,
  footprint,
  localObjectCount,
  paddedJpeg,
  photoPart,
  serveApi,
  smallJpeg,
  upload,
  uploadRequest,
  type Footprint,
  type Served,
} from "./support.js";

/**
 * The upload limits that keep the API's memory bounded: one slot here
 * (API_PHOTO_UPLOAD_CONCURRENCY=1), so a second upload waits for it; a
 * declared length past the cap is refused from the headers; a body that does
 * not arrive in time is cut off; and every way an upload can fail gives its
 * slot back. The slot gauges of /metrics say who holds or waits for a slot.
 */
let h: Harness;
/** Waits 200 ms for a slot and gives a body 3 s. */
let impatient: Served;
/** Waits and reads for a minute: only a client going away ends its wait or its upload. */
let patient: Served;

const serve = (env: Record<string, string>) => serveApi(devEnv(h.db.url, h.bus.url, { API_PHOTO_UPLOAD_CONCURRENCY: "1", ...env }));

beforeAll(async () => {
  h = await startHarness();
  impatient = await serve({ API_PHOTO_UPLOAD_WAIT_MS: "200", API_PHOTO_UPLOAD_BODY_TIMEOUT_MS: "3000" });
  patient = await serve({ API_PHOTO_UPLOAD_WAIT_MS: "60000", API_PHOTO_UPLOAD_BODY_TIMEOUT_MS: "60000" });
});
afterAll(async () => {
  await closeServed(impatient, patient);
  await h?.close();
  rmSync(TEST_PHOTO_DIR, { recursive: true, force: true });
});

const stored = () => footprint(h.db.pool, async () => localObjectCount(TEST_PHOTO_DIR));

/** A gauge of the API's /metrics, as a scrape of its metrics server reads it. */
async function gauge(served: Served, name: string): Promise<number> {
  const res = await scrapeApi(served.api);
  const line = res.body.split("\n").find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return Number(line!.split(" ").at(-1));
}

const until = (served: Served, name: string, value: number) =>
  eventually(async () => ((await gauge(served, name)) === value ? true : undefined), 20_000);

const BOUNDARY = "----ass-partial-upload";

/** An upload over a real socket that sends the photo part's headers and `send` bytes of a body declared `declared` long, then stalls. */
function stalledUpload(served: Served, url: string, actor: string, declared: number, send: number) {
  const prefix = Buffer.from(`--${BOUNDARY}\r\ncontent-disposition: form-data; name="photo"; filename="big.jpg"\r\ncontent-type: image/jpeg\r\n\r\n`);
  const headers = { ...as(actor), "content-type": `multipart/form-data; boundary=${BOUNDARY}`, "content-length": String(declared) };
  return startPartialUpload(served.port, url, headers, send, prefix);
}

function expectAnswer(answer: PartialAnswer, status: number, slug: string): void {
  expect(answer.status, answer.body).toBe(status);
  expect(answer.headers["content-type"]).toMatch(/^application\/problem\+json/);
  expect(JSON.parse(answer.body)).toMatchObject({ status, type: expect.stringMatching(new RegExp(`/${slug}$`)), detail: expect.any(String) });
}

describe("photo upload limits", () => {
  let owner: string;
  let url: string;
  let before: Footprint;

  beforeAll(async () => {
    owner = freshActor("limits-owner");
    url = `/v1/safety/lost-reports/${await createLostReport(h.api, owner)}/photos`;
  });

  it("refuses a declared Content-Length over the cap with 413 from the headers, before the body is read", async () => {
    before = await stored();
    const answer = await stalledUpload(impatient, url, owner, MAX_UPLOAD_BYTES + 1024 * 1024, 64 * 1024).answer;
    expectAnswer(answer, 413, "payload-too-large");
    expect(answer.bytesSent).toBeLessThan(MAX_UPLOAD_BYTES);
    expect(await gauge(impatient, "photo_upload_slots_in_use")).toBe(0);
    expect(await stored()).toEqual(before);
  });

  it("makes the next upload wait while the slot is held, then answers 503 with Retry-After; a body too slow gets 408", async () => {
    // Another actor's photo, past the first 64 KiB that an upload reads before it needs a slot (one actor has one upload in flight).
    const other = freshActor("limits-waiter");
    const otherUrl = `/v1/safety/lost-reports/${await createLostReport(h.api, other)}/photos`;
    before = await stored();
    const holder = stalledUpload(impatient, url, owner, 5 * 1024 * 1024, 256 * 1024);
    await until(impatient, "photo_upload_slots_in_use", 1);

    const refused = await call(impatient.api, uploadRequest(otherUrl, other, [photoPart(await paddedJpeg(256 * 1024, 1))]));
    expectProblemOf(refused, 503, "service-unavailable");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);

    const cutOff = await holder.answer;
    expectAnswer(cutOff, 408, "request-timeout");
    expect(JSON.parse(cutOff.body).detail).toMatch(/did not arrive within 3 s/);
    await until(impatient, "photo_upload_slots_in_use", 0);
    expect(await stored()).toEqual(before);

    const taken = await call(impatient.api, uploadRequest(url, owner, [photoPart(await smallJpeg(2))]));
    expect(taken.statusCode, taken.body).toBe(202);
  });

  it("gives the slot back after every kind of failed upload: each next one is read, none waits into a 503", async () => {
    const truncated = (await sharp({ create: { width: 400, height: 300, channels: 3, background: "#246" } }).jpeg().toBuffer()).subarray(0, 500);
    const failures: Array<[string, () => Promise<{ statusCode: number }>, number]> = [
      ["a script", () => upload(impatient.api, url, owner, "#!/bin/sh\n", "cat.jpg"), 415],
      ["a truncated JPEG", () => upload(impatient.api, url, owner, truncated), 422],
      ["12 MiB", async () => upload(impatient.api, url, owner, await paddedJpeg(12 * 1024 * 1024)), 413],
      ["two files", async () => call(impatient.api, uploadRequest(url, owner, [photoPart(await smallJpeg()), photoPart(await smallJpeg(), "b.jpg")])), 400],
      ["someone else's report", async () => upload(impatient.api, url, freshActor("stranger"), await smallJpeg()), 403],
    ];
    for (const [what, send, status] of failures) {
      before = await stored();
      expect((await send()).statusCode, what).toBe(status);
      expect(await gauge(impatient, "photo_upload_slots_in_use"), what).toBe(0);
      expect(await stored(), what).toEqual(before);
    }
    const other = freshActor("limits-after-failures");
    const res = await upload(impatient.api, `/v1/safety/lost-reports/${await createLostReport(h.api, other)}/photos`, other, await smallJpeg(3));
    expect(res.statusCode, res.body).toBe(202);
  });

  it("lets a waiting client that goes away leave the queue, and frees the slot of one that goes away mid-upload", async () => {
    // Another actor's, past the first 64 KiB, so it waits for the slot.
    const leaver = freshActor("limits-leaver");
    const leaverUrl = `/v1/safety/lost-reports/${await createLostReport(h.api, leaver)}/photos`;
    before = await stored();
    const holder = stalledUpload(patient, url, owner, 5 * 1024 * 1024, 256 * 1024);
    await until(patient, "photo_upload_slots_in_use", 1);
    const waiter = stalledUpload(patient, leaverUrl, leaver, 1024 * 1024, 128 * 1024);
    await until(patient, "photo_uploads_waiting", 1);

    waiter.request.destroy();
    await until(patient, "photo_uploads_waiting", 0);
    holder.request.destroy();
    await until(patient, "photo_upload_slots_in_use", 0);
    expect(await stored()).toEqual(before);

    const other = freshActor("limits-after-abort");
    const res = await upload(patient.api, `/v1/safety/lost-reports/${await createLostReport(h.api, other)}/photos`, other, await smallJpeg(4));
    expect(res.statusCode, res.body).toBe(202);
  });
});
