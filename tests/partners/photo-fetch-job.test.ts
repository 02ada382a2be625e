import { pino } from "pino";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, type Pool } from "../../lib/db.js";
import { LocalObjectStorage } from "../../lib/storage/index.js";
import type { SupervisedWorker } from "../../lib/worker.js";
import { startPhotoWorker } from "../../jobs/photos/worker.js";
import { TEST_PHOTO_DIR } from "../helpers/app.js";
import { eventually } from "../helpers/stream.js";
import { TRICKLE_EVERY_MS, trickleBody } from "../helpers/trickle.js";
import { type Harness } from "../helpers/harness.js";
import { expectProblem } from "../safety/helpers.js";
import { asm3Animal, createPartner, login, partnerCall, publish, startPartnerHarness } from "./support.js";
import { mappedResolver, PHOTO_HOST, startHttpServer, startHttpsServer, testCertificate, type TestServer } from "./servers.js";

/**
 * The partner__photo_fetch job as the notifier's photo runner runs it: each
 * refused or unusable URL ends as a failed photo whose reason the partner
 * reads at GET /partners/v2/animals/{id}; a good one goes through the photo
 * pipeline to ready, with its metadata stripped.
 */

const EVIL_HOST = "cdn.shelter-photos.example";
let h: Harness;
let workerPool: Pool;
let worker: SupervisedWorker;
let https: TestServer;
let plain: TestServer;
let token: string;
let jpeg: Buffer;

beforeAll(async () => {
  h = await startPartnerHarness();
  token = await login(h, await createPartner(h));
  jpeg = await sharp({ create: { width: 320, height: 240, channels: 3, background: "#336699" } })
    .withMetadata({ exif: { IFD0: { Artist: "Shelter staff camera" } } })
    .jpeg()
    .toBuffer();
  const serve = (request: import("node:http").IncomingMessage, response: import("node:http").ServerResponse) => {
    // The same photo under any query: the cap test's URLs differ by ?n= and must each be fetched, not fail.
    if (request.url?.split("?")[0] === "/photo.jpg") {
      response.writeHead(200, { "content-type": "image/jpeg" });
      response.end(jpeg);
    } else if (request.url === "/page.html") {
      response.writeHead(200, { "content-type": "text/html" });
      response.end("<html>not a photo</html>");
    } else if (request.url === "/trickle") {
      // A photo's head at once, then one byte every 3 s, for ever.
      trickleBody(response, 200, TRICKLE_EVERY_MS);
    } else if (request.url === "/to-metadata") {
      response.writeHead(302, { location: "https://169.254.169.254/latest/meta-data/" });
      response.end();
    } else {
      response.writeHead(404);
      response.end();
    }
  };
  https = await startHttpsServer(serve);
  plain = await startHttpServer(serve);
  workerPool = createPool({ connectionString: h.db.url, max: 3, applicationName: "partner-fetch-test", logger: pino({ level: "silent" }) });
  worker = await startPhotoWorker(
    {
      pool: workerPool,
      storage: new LocalObjectStorage(TEST_PHOTO_DIR),
      logger: pino({ level: "silent" }),
      // Only PHOTO_HOST is allow-listed; EVIL_HOST is a public-looking name this test's resolver points at loopback.
      partnerPhotoFetch: {
        allowHosts: [PHOTO_HOST],
        resolve: mappedResolver({ [PHOTO_HOST]: "127.0.0.1", [EVIL_HOST]: "127.0.0.1" }),
        ca: testCertificate().cert,
        // PARTNER_PHOTO_FETCH_DEADLINE_MS, short: past the second byte of a 3 s trickle.
        timeoutMs: 4_000,
      },
    },
    2,
  );
});

afterAll(async () => {
  await worker?.stop();
  await workerPool?.end();
  await https?.close();
  await plain?.close();
  await h?.close();
});

const photoStates = (id: string, count: number) =>
  eventually(async () => {
    const res = await partnerCall(h, { method: "GET", url: `/partners/v2/animals/${id}`, token });
    const list = res.json().photos as { url: string; status: string; reason?: string }[];
    return list.length === count && list.every((p) => p.status === "ready" || p.status === "failed") ? list : undefined;
  }, 20_000);

describe("photos by URL", () => {
  it("refused and unusable URLs fail with a reason the partner reads; the allow-listed one is processed", async () => {
    const { id } = (await publish(h, token, asm3Animal())).json();
    const urls = [
      `https://${PHOTO_HOST}:${https.port}/photo.jpg`,
      `http://127.0.0.1:${plain.port}/photo.jpg`,
      `https://${EVIL_HOST}:${https.port}/photo.jpg`,
      `https://${PHOTO_HOST}:${https.port}/to-metadata`,
      `https://${PHOTO_HOST}:${https.port}/page.html`,
    ];
    const res = await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos: urls.map((url) => ({ url })) } });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json().photos.map((p: { status: string }) => p.status)).toEqual(Array(5).fill("fetching"));

    const states = await photoStates(id, 5);
    const byUrl = Object.fromEntries(states.map((s) => [s.url, s]));
    expect(byUrl[urls[0]!]).toMatchObject({ status: "ready" });
    expect(byUrl[urls[1]!]).toMatchObject({ status: "failed", reason: expect.stringMatching(/only https/) });
    // The name the partner gave, never the address it resolved to.
    expect(byUrl[urls[2]!]).toMatchObject({ status: "failed", reason: "refused address of cdn.shelter-photos.example: it resolves to a private, loopback, link-local or reserved address" });
    expect(byUrl[urls[3]!]).toMatchObject({ status: "failed", reason: expect.stringMatching(/169\.254\.169\.254/) });
    expect(byUrl[urls[4]!]).toMatchObject({ status: "failed", reason: expect.stringMatching(/not .*image/i) });
    // Neither the plain server nor the loopback name was ever asked; the metadata address was never reached.
    expect(plain.requests).toEqual([]);
    expect(https.requests.filter((r) => r === "/photo.jpg")).toHaveLength(1);

    // The photo went through the upload pipeline: a photo of the found report, uploaded by the partner's actor.
    const { rows } = await h.db.pool.query(`select uploader_id, status, display_key from photo where found_report_id = $1::uuid`, [id]);
    expect(rows).toEqual([{ uploader_id: expect.stringMatching(/^partner:/), status: "ready", display_key: expect.stringMatching(/^variants\//) }]);
    const events = await h.db.pool.query(`select type from outbox_event where payload->>'parentId' = $1 order by occurred_at`, [id]);
    expect(events.rows.map((e) => e.type)).toEqual(["events.photo.uploaded.v1", "events.photo.ready.v1"]);
  });

  it("a photo host that sends one byte every 3 s: the fetch is cut at its deadline and fails as a timeout", async () => {
    const { id } = (await publish(h, token, asm3Animal())).json();
    const url = `https://${PHOTO_HOST}:${https.port}/trickle`;
    const res = await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos: [{ url }] } });
    expect(res.statusCode, res.body).toBe(202);
    const [state] = await photoStates(id, 1);
    expect(state).toMatchObject({ url, status: "failed", reason: "the photo did not arrive within 4 s" });
    const { rows } = await h.db.pool.query(`select count(*)::int as n from photo where found_report_id = $1::uuid`, [id]);
    expect(rows[0].n).toBe(0);
  });

  it("at most 5 photos an animal: the URLs that fit are taken and the rest ignored, then 409; none for an animal that left custody", async () => {
    const { id } = (await publish(h, token, asm3Animal())).json();
    const urls = Array.from({ length: 51 }, (_, i) => ({ url: `https://${PHOTO_HOST}:${https.port}/photo.jpg?n=${i}` }));
    expectProblem(await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos: urls } }), 400, "validation-failed");
    const three = urls.slice(0, 3);
    expect((await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos: three } })).statusCode).toBe(202);
    const more = await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos: urls.slice(3, 6) } });
    expect(more.statusCode, more.body).toBe(202);
    expect(more.json().photos).toHaveLength(2);
    expect(more.json().ignored).toEqual([urls[5]!.url]);
    expectProblem(await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos: three } }), 409, "conflict");
    expect((await partnerCall(h, { method: "DELETE", url: `/partners/v2/animals/${id}`, token })).statusCode).toBe(204);
    expectProblem(await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos: three.slice(0, 1) } }), 409, "conflict");
    const { rows } = await h.db.pool.query(`select count(*)::int as n from partner_photo_fetch where found_report_id = $1::uuid`, [id]);
    expect(rows[0].n).toBe(5);
  });
});
