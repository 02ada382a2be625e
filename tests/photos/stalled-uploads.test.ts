import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadApiConfig } from "../../lib/config.js";
import { as, devEnv, TEST_PHOTO_DIR } from "../helpers/app.js";
import { sampleValue, scrapeApi } from "../helpers/exposition.js";
import { openSlowClient, requestHead, type RawAnswer, type SlowClient } from "../helpers/slow-client.js";
import { eventually } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createLostReport, freshActor } from "../safety/helpers.js";
import { closeServed, footprint, localObjectCount, multipart, paddedJpeg, photoPart, serveApi, smallJpeg, upload, uploadRequest } from "./support.js";
import type { Footprint, Served } from "./support.js";

/**
 * A stalled upload holds nothing: an upload takes one of the
 * API_PHOTO_UPLOAD_CONCURRENCY slots only once its photo's first 64 KiB have
 * arrived, so clients that send their headers and a few bytes and stop leave
 * every slot to others; a body silent for API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS is
 * cut off (408) and gives back its slot; and an actor has one upload in
 * flight at a time (429). The stalled clients are real sockets.
 */
let h: Harness;
/** Three slots, as by default; an idle body is cut after 4 s, long after the other upload's 2 s. */
let three: Served;
/** One slot and a 1 s idle limit: a stalled holder of the slot is cut quickly. */
let one: Served;

beforeAll(async () => {
  h = await startHarness();
  three = await serveApi(devEnv(h.db.url, h.bus.url, { API_PHOTO_UPLOAD_CONCURRENCY: "3", API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS: "4000" }));
  one = await serveApi(devEnv(h.db.url, h.bus.url, { API_PHOTO_UPLOAD_CONCURRENCY: "1", API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS: "1000" }));
});
afterAll(async () => {
  await closeServed(three, one);
  await h?.close();
  rmSync(TEST_PHOTO_DIR, { recursive: true, force: true });
});

const stored = () => footprint(h.db.pool, async () => localObjectCount(TEST_PHOTO_DIR));
const BOUNDARY = "----ass-stalled-upload";
/** The first 3 bytes of any JPEG. */
const JPEG_START = Buffer.from([0xff, 0xd8, 0xff]);
const PART_HEAD = `--${BOUNDARY}\r\ncontent-disposition: form-data; name="photo"; filename="cat.jpg"\r\ncontent-type: image/jpeg\r\n\r\n`;

/** A lost report of a new actor, and its upload URL. */
async function reporter(prefix: string): Promise<{ actor: string; url: string }> {
  const actor = freshActor(prefix);
  return { actor, url: `/v1/safety/lost-reports/${await createLostReport(h.api, actor)}/photos` };
}

/** An upload over a real socket that declares a 1 MiB body, sends its headers and then `body`, and stops. */
async function stalled(served: Served, { actor, url }: { actor: string; url: string }, body: string | Buffer): Promise<SlowClient> {
  const client = await openSlowClient(served.port);
  const headers = { ...as(actor), "content-type": `multipart/form-data; boundary=${BOUNDARY}`, "content-length": String(1024 * 1024) };
  client.send(requestHead("POST", url, headers));
  client.send(body);
  return client;
}

function expectProblem(answer: RawAnswer, status: number, slug: string): Record<string, unknown> {
  expect(answer.status, answer.body).toBe(status);
  expect(answer.headers["content-type"]).toMatch(/^application\/problem\+json/);
  const problem = JSON.parse(answer.body);
  expect(problem).toMatchObject({ status, type: expect.stringMatching(new RegExp(`/${slug}$`)), detail: expect.any(String) });
  return problem;
}

describe("stalled uploads", () => {
  it("cuts an upload's body off after 10 s of silence unless API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS says otherwise", () => {
    const env = devEnv(h.db.url, h.bus.url);
    expect(loadApiConfig(env).API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS).toBe(10_000);
    expect(loadApiConfig({ ...env, API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS: "2500" }).API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS).toBe(2_500);
    expect(() => loadApiConfig({ ...env, API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS: "0" })).toThrow(expect.objectContaining({ setting: "API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS" }));
  });

  it("states the rules on the upload routes in the OpenAPI document", async () => {
    const doc = (await one.api.app.inject({ url: "/openapi.json" })).json();
    for (const path of ["/v1/safety/lost-reports/{id}/photos", "/v1/safety/found-reports/{id}/photos", "/v1/animals/{id}/photos"]) {
      const post = doc.paths[path].post;
      expect(post.description).toMatch(/One upload at a time per caller[^.]*429/);
      expect(post.description).toMatch(/first 64 KiB/);
      expect(post.description).toMatch(/API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS \(10 s\)[^.]*408/);
      expect(Object.keys(post.responses)).toContain("429");
    }
  });

  it("three uploads that send headers and 3 bytes and stop hold no slot: another user's upload is taken while they wait, and they get 408", async () => {
    const before: Footprint = await stored();
    const stallers = await Promise.all(["stall-a", "stall-b", "stall-c"].map(reporter));
    // The first sends 3 bytes of the form; the others the photo part's head and 3 bytes of the photo itself.
    const clients = await Promise.all(stallers.map((s, i) => stalled(three, s, i === 0 ? "--" + BOUNDARY[0] : Buffer.concat([Buffer.from(PART_HEAD), JPEG_START]))));
    const cut: number[] = [];
    clients.forEach((client, i) => void client.answer.then(() => cut.push(i)));
    // Time for each to get past its checks and into reading its body. Kept: a body read without
    // a slot shows no sign outside the route, and that is what is under test. Were they not there
    // yet, the upload below would take a free slot and pass all the same.
    await new Promise((r) => setTimeout(r, 500));

    const other = await reporter("not-stalled");
    const taken = await call(three.api, uploadRequest(other.url, other.actor, [photoPart(await paddedJpeg(256 * 1024))]));
    expect(taken.statusCode, taken.body).toBe(202);
    // Taken while all three still held their connections: none had to be cut off to make room.
    expect(cut).toEqual([]);

    for (const client of clients) {
      const answer = await client.answer;
      const problem = expectProblem(answer, 408, "request-timeout");
      expect(problem.detail).toMatch(/sent nothing for 4 s/);
      // 4 s after their reading began (which followed the headers by a few milliseconds), not before.
      expect(answer.answeredAtMs).toBeGreaterThanOrEqual(4_000);
    }
    const after = await stored();
    expect(after.photos).toBe(before.photos + 1);
  });

  it("cuts off a body that took its slot and went silent, and hands the slot to the upload waiting for it", async () => {
    const before = await stored();
    const holder = await reporter("slot-holder");
    const waiter = await reporter("slot-waiter");
    const photo = await paddedJpeg(256 * 1024, 1);
    // 100 KiB of the photo: past the first 64 KiB, so it takes the one slot; then nothing.
    const client = await stalled(one, holder, Buffer.concat([Buffer.from(PART_HEAD), Buffer.alloc(100 * 1024, 0x20)]));
    await eventually(async () => (sampleValue((await scrapeApi(one.api)).body, "photo_upload_slots_in_use") === 1 ? true : undefined));

    const order: string[] = [];
    const cutOff = client.answer.then((answer) => (order.push("holder cut off"), answer));
    const taken = await call(one.api, uploadRequest(waiter.url, waiter.actor, [photoPart(photo)]));
    order.push("waiter taken");
    const cut = await cutOff;
    expectProblem(cut, 408, "request-timeout");
    expect(JSON.parse(cut.body).detail).toMatch(/sent nothing for 1 s/);
    expect(taken.statusCode, taken.body).toBe(202);
    // It waited for the slot until the silent holder was cut off.
    expect(order).toEqual(["holder cut off", "waiter taken"]);
    expect((await stored()).photos).toBe(before.photos + 1);
  });

  it("lets an actor have one upload in flight at a time: a second one is 429 with Retry-After, the next after it ends is taken", async () => {
    const before = await stored();
    const actor = await reporter("one-at-a-time");
    // Two uploads of the actor at once, both stalled: whichever the server reads second is refused
    // at once, and the other stays in flight until its body is cut off.
    const both = [await stalled(one, actor, "--" + BOUNDARY[0]), await stalled(one, actor, "--" + BOUNDARY[0])];
    const { answer: second, other: first } = await Promise.race(both.map((client, i) => client.answer.then((answer) => ({ answer, other: both[1 - i]! }))));
    const problem = expectProblem(second, 429, "rate-limited");
    expect(problem.detail).toMatch(/in flight/);
    expect(Number(second.headers["retry-after"])).toBeGreaterThan(0);
    // Another actor is not held back by it.
    const other = await reporter("one-at-a-time-other");
    expect((await upload(one.api, other.url, other.actor, await smallJpeg(4))).statusCode).toBe(202);

    expectProblem(await first.answer, 408, "request-timeout");
    const third = await upload(one.api, actor.url, actor.actor, await smallJpeg(5));
    expect(third.statusCode, third.body).toBe(202);
    expect((await stored()).photos).toBe(before.photos + 2);
  });

  it("keeps a slow upload whose pieces come within the idle limit", async () => {
    const actor = await reporter("slow-but-steady");
    const form = multipart([photoPart(await paddedJpeg(300 * 1024, 2))]);
    const client = await openSlowClient(one.port);
    client.send(requestHead("POST", actor.url, { ...as(actor.actor), ...form.headers, "content-length": String(form.payload.length) }));
    await client.sendInPieces(form.payload, 4, 600);
    const answer = await client.answer;
    expect(answer.status, answer.body).toBe(202);
    client.destroy();
  });
});
