import { pino } from "pino";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, type Pool } from "../../lib/db.js";
import { LocalObjectStorage } from "../../lib/storage/index.js";
import type { SupervisedWorker } from "../../lib/worker.js";
import { inAppDeliverer } from "../../jobs/delivery/deliverers/in-app.js";
import type { Deliverer } from "../../jobs/delivery/deliverers/types.js";
import { startPhotoWorker } from "../../jobs/photos/worker.js";
import type { DeliverableNotification } from "../../jobs/delivery/store.js";
import { as, TEST_PHOTO_DIR } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { eventually } from "../helpers/stream.js";
import { type Harness } from "../helpers/harness.js";
import { call, lostReportBody } from "../safety/helpers.js";
import { Asm3Shelter, IDTYPE_PETCOLOVELOST, type AsmAnimal, type HttpRequest } from "./asm3-publisher.js";
import { API_KEY, createPartner, startPartnerHarness, type TestPartner } from "./support.js";
import { mappedResolver, PHOTO_HOST, startHttpsServer, testCertificate, type TestServer } from "./servers.js";

/**
 * A shelter's week with ASM3's found-animal publisher, run() for run()
 * (tests/partners/asm3-publisher.ts replays it statement for statement, at
 * the commit it names), pointed at /partners from one address: the first
 * publish, an edit (PATCH), the photos purged and posted again on every
 * change, an animal that left (DELETE), and the failure path of a create
 * that is refused, after which the publisher calls /v2/animals//photos.
 * Each answer is read as the publisher reads it: a raise is an animal it
 * counts as failed and never records as published.
 */

const SHELTER_IP = "203.0.113.50";
const DAY = 86_400_000;

let h: Harness;
let pipeline: Pipeline;
let workerPool: Pool;
let photoWorker: SupervisedWorker;
let photos: TestServer;
let partner: TestPartner;
let shelter: Asm3Shelter;
const storage = new LocalObjectStorage(TEST_PHOTO_DIR);
const emails: DeliverableNotification[] = [];
const emailDeliverer: Deliverer = { deliver: async (n) => void emails.push(n) };
/** Every call the publisher made, with its answer, in order. */
const wire: { request: HttpRequest; status: number; body: string }[] = [];
const jpegs = new Map<string, Buffer>();

/** A distinct JPEG per ASM3 media id, as its media_image service serves it. */
async function jpegOf(mediaId: string): Promise<Buffer> {
  let jpeg = jpegs.get(mediaId);
  if (!jpeg) {
    const shade = (Number(mediaId) * 37) % 200;
    jpeg = await sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 160, g: 112 + (shade % 40), b: shade } } })
      .composite([{ input: Buffer.from(`<svg width="800" height="600"><circle cx="${200 + shade}" cy="300" r="180" fill="#fff"/></svg>`), top: 0, left: 0 }])
      .jpeg()
      .toBuffer();
    jpegs.set(mediaId, jpeg);
  }
  return jpeg;
}

const now = Date.now();
/** The week: Monday five days ago, each run at 08:00 of its day. */
const at = (day: number) => new Date(now - (5 - day) * DAY);

function animal(overrides: Partial<AsmAnimal> & Pick<AsmAnimal, "ID" | "SHELTERCODE" | "ANIMALNAME" | "SPECIESNAME">): AsmAnimal {
  return {
    BREEDNAME1: "Beagle",
    BREEDNAME2: "",
    IDENTICHIPNUMBER: "",
    IDENTICHIP2NUMBER: "",
    DATEOFBIRTH: new Date("2021-03-14T00:00:00Z"),
    DATEBROUGHTIN: new Date(at(0).toISOString().slice(0, 10)),
    WEIGHT: 26.5,
    PICKUPADDRESS: "12 Rue Cler, 75007",
    ANIMALCOMMENTS: "Found wandering near the park, friendly.",
    SIZE: "Medium",
    NEUTERED: 1,
    DECLAWED: 0,
    SEX: 1,
    LASTCHANGEDDATE: new Date(at(0).getTime() - 3_600_000),
    ARCHIVED: 0,
    EXTRAIDS: {},
    media: [],
    ...overrides,
  };
}

let biscuit: AsmAnimal;
let minou: AsmAnimal;
let rex: AsmAnimal;

beforeAll(async () => {
  h = await startPartnerHarness();
  partner = await createPartner(h, { name: "Riverside Animal Shelter", dateFormat: "YYYY-MM-DD", strayHoldDays: 7 });
  pipeline = await startPipeline(h.api.pool, h.api.nc, { deliverers: { in_app: inAppDeliverer, email: emailDeliverer } });
  photos = await startHttpsServer((request, response) => {
    const mediaId = new URL(request.url ?? "/", "https://x").searchParams.get("mediaid");
    if (!request.url?.startsWith("/service?") || !mediaId) {
      response.writeHead(404);
      response.end();
      return;
    }
    void jpegOf(mediaId).then((jpeg) => {
      response.writeHead(200, { "content-type": "image/jpeg", "content-length": jpeg.length });
      response.end(jpeg);
    });
  });
  workerPool = createPool({ connectionString: h.db.url, max: 4, applicationName: "partner-photos-test", logger: pino({ level: "silent" }) });
  // The notifier's photo runner (fetch, process, delete), with the shelter's photo host allow-listed and resolved to this
  // machine and the test certificate trusted: the fetch is real HTTPS to a local server.
  photoWorker = await startPhotoWorker(
    {
      pool: workerPool,
      storage,
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
      partnerPhotoFetch: { allowHosts: [PHOTO_HOST], resolve: mappedResolver({ [PHOTO_HOST]: "127.0.0.1" }), ca: testCertificate().cert },
    },
    2,
  );
  shelter = new Asm3Shelter(
    { email: partner.loginEmail, password: partner.password, apiKey: API_KEY, shelterId: "66113416-090e-468b-b484-043cd4d8413d" },
    `https://${PHOTO_HOST}:${photos.port}/service`,
    "riverside",
    "lb",
    async (request) => {
      const res = await h.api.app.inject({
        method: request.method,
        url: `/partners${request.path}`,
        headers: request.headers,
        payload: request.body,
        remoteAddress: SHELTER_IP,
      });
      wire.push({ request, status: res.statusCode, body: res.body });
      return { status: res.statusCode, body: res.body };
    },
  );
  biscuit = animal({
    ID: 1742,
    SHELTERCODE: "D2025110042",
    ANIMALNAME: "Biscuit",
    SPECIESNAME: "Dog",
    IDENTICHIPNUMBER: "250268500123456",
    IDENTICHIP2NUMBER: "981020000654321",
    media: [{ ID: 9001, DATE: new Date(at(0).getTime() - 7_200_000) }],
  });
  minou = animal({ ID: 1743, SHELTERCODE: "C2025110043", ANIMALNAME: "Minou", SPECIESNAME: "Cat", BREEDNAME1: "Domestic Short Hair", SEX: 0, media: [{ ID: 9002, DATE: new Date(at(0).getTime() - 7_200_000) }, { ID: 9003, DATE: new Date(at(0).getTime() - 7_200_000) }] });
  rex = animal({ ID: 1744, SHELTERCODE: "D2025110044", ANIMALNAME: "Rex", SPECIESNAME: "Dog", DATEOFBIRTH: null, BREEDNAME2: "Labrador Retriever" });
  shelter.animals.push(biscuit, minou, rex);
});

afterAll(async () => {
  await photoWorker?.stop();
  await pipeline?.stop();
  await workerPool?.end();
  await photos?.close();
  await h?.close();
});

/** The calls of one run, as `METHOD path status`. */
async function runOn(day: number): Promise<string[]> {
  const from = wire.length;
  await shelter.run(at(day));
  return wire.slice(from).map((c) => `${c.request.method} ${c.request.path} ${c.status}`);
}

const idOf = (an: AsmAnimal) => an.EXTRAIDS[IDTYPE_PETCOLOVELOST]!;

/** The animal's live photos (not deleted) and its fetches, once every fetch has settled. */
async function settledPhotos(foundReportId: string, expected: number) {
  return eventually(async () => {
    const { rows } = await h.db.pool.query<{ status: string; display_key: string | null }>(
      `select status, display_key from photo where found_report_id = $1::uuid and status <> 'deleted'`,
      [foundReportId],
    );
    return rows.length === expected && rows.every((r) => r.status === "ready") ? rows : undefined;
  }, 30_000);
}

describe("a shelter's week, as ASM3's publisher runs it", () => {
  it("Monday, the first run: login, then each animal created, its photos purged and posted; every answer read without a raise", async () => {
    const calls = await runOn(0);
    expect(shelter.log.errors).toEqual([]);
    const [b, m, r] = [idOf(biscuit), idOf(minou), idOf(rex)];
    for (const id of [b, m, r]) expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(calls).toEqual([
      "POST /v2/auth/login 200",
      "POST /v2/animals 201",
      `DELETE /v2/animals/${b}/photos 204`,
      `POST /v2/animals/${b}/photos 202`,
      "POST /v2/animals 201",
      `DELETE /v2/animals/${m}/photos 204`,
      `POST /v2/animals/${m}/photos 202`,
      "POST /v2/animals 201",
      `DELETE /v2/animals/${r}/photos 204`,
    ]);
    // The photo answer has an id, so every animal with photos is counted as published (the raise on `message` is gone).
    expect(shelter.log.info.filter((line) => line.startsWith("Successfully processed"))).toHaveLength(2);
    expect([...shelter.published.keys()].sort()).toEqual([1742, 1743, 1744]);
    // The DELETE went as requests sends it: no body, no Content-Type, Content-Length 0.
    const purge = wire.find((c) => c.request.method === "DELETE")!.request;
    expect(purge.body).toBeUndefined();
    expect(purge.headers["content-type"]).toBeUndefined();
    expect(purge.headers["content-length"]).toBe("0");

    const { rows } = await h.db.pool.query(
      `select id, reporter_id, status, species, breed, sex, microchip_id, found_at, partner_external_id, partner_animal
       from safety_found_report where partner_id = $1::uuid order by partner_external_id`,
      [partner.id],
    );
    expect(rows.map((row) => row.partner_external_id)).toEqual(["C2025110043", "D2025110042", "D2025110044"]);
    const dog = rows.find((row) => row.id === b);
    expect(dog).toMatchObject({ reporter_id: `partner:${partner.id}`, status: "open", species: "dog", breed: "Beagle", sex: "male", microchip_id: "250268500123456" });
    expect(dog.found_at.toISOString()).toBe(`${at(0).toISOString().slice(0, 10)}T00:00:00.000Z`);
    expect(dog.partner_animal).toMatchObject({ weightOunces: 424, microchips: ["250268500123456", "981020000654321"], birthDate: "2021-03-14", size: "MEDIUM", name: "Biscuit", altered: true });
    expect(rows.find((row) => row.id === r).partner_animal).toMatchObject({ birthDate: null });
    expect(rows.find((row) => row.id === m)).toMatchObject({ species: "cat", sex: "female", breed: "Domestic Short Hair" });

    await settledPhotos(b, 1);
    await settledPhotos(m, 2);
    expect(photos.requests.filter((path) => path.includes("mediaid=9001"))).toHaveLength(1);
    // The public view lists the processed photos, with the partner holding the animal and until when.
    const view = await call(h.api, { method: "GET", url: `/v1/safety/found-reports/${m}` });
    expect(view.json().photos).toHaveLength(2);
    expect(view.json().partner).toMatchObject({ name: "Riverside Animal Shelter", kind: "shelter" });
    expect(view.json().heldUntil).toMatch(/T23:59:59\.999Z$/);
  });

  it("Tuesday: Biscuit's record changed (weight, 6,000 characters of comments): PATCH, then its photos purged and posted again", async () => {
    const before = await settledPhotos(idOf(biscuit), 1);
    biscuit.WEIGHT = 27;
    biscuit.ANIMALCOMMENTS = Array.from({ length: 1000 }, (_, i) => `friendly${i % 7}`).join(" ").slice(0, 6000);
    biscuit.LASTCHANGEDDATE = new Date(at(1).getTime() - 3_600_000);
    // A better photo replaces the first.
    biscuit.media = [{ ID: 9006, DATE: new Date(at(1).getTime() - 3_600_000) }];
    // Rex has not changed, but has a new photo: its photos go again without an update.
    rex.media.push({ ID: 9004, DATE: new Date(at(1).getTime() - 7_200_000) });
    const b = idOf(biscuit);
    const calls = await runOn(1);
    expect(shelter.log.errors).toEqual([]);
    expect(calls).toEqual([
      "POST /v2/auth/login 200",
      `PATCH /v2/animals/${b} 200`,
      `DELETE /v2/animals/${b}/photos 204`,
      `POST /v2/animals/${b}/photos 202`,
      `DELETE /v2/animals/${idOf(rex)}/photos 204`,
      `POST /v2/animals/${idOf(rex)}/photos 202`,
    ]);
    // The PATCH carried the create's body less shelterId and species.
    const patch = JSON.parse(wire.find((c) => c.request.method === "PATCH")!.request.body!);
    expect(patch.shelterId).toBeUndefined();
    expect(patch.species).toBeUndefined();
    const { rows } = await h.db.pool.query(`select species, description, partner_animal from safety_found_report where id = $1::uuid`, [b]);
    expect(rows[0].species).toBe("dog");
    expect(rows[0].partner_animal.weightOunces).toBe(432);
    // The comments are kept up to the report's 5,000 characters, cut at a word and marked.
    expect(rows[0].description.length).toBeLessThanOrEqual(5000);
    expect(rows[0].description).toMatch(/friendly\d…$/);
    // One photo again, not two: the purge deleted the first, with its stored variants.
    const [now1] = await settledPhotos(b, 1);
    expect(now1!.display_key).not.toBeNull();
    await eventually(async () => ((await storage.get(before[0]!.display_key!)) === null ? true : undefined), 20_000);
    await settledPhotos(idOf(rex), 1);
  });

  it("the rest of the week: each day's change purges and re-posts, and the set never grows (no 409)", async () => {
    for (const day of [2, 3, 4]) {
      biscuit.WEIGHT += 0.5;
      biscuit.LASTCHANGEDDATE = new Date(at(day).getTime() - 3_600_000);
      const calls = await runOn(day);
      expect(calls.filter((c) => !c.startsWith("POST /v2/auth/login"))).toEqual([
        `PATCH /v2/animals/${idOf(biscuit)} 200`,
        `DELETE /v2/animals/${idOf(biscuit)}/photos 204`,
        `POST /v2/animals/${idOf(biscuit)}/photos 202`,
      ]);
      await settledPhotos(idOf(biscuit), 1);
    }
    expect(shelter.log.errors).toEqual([]);
    const { rows } = await h.db.pool.query(`select count(*)::int as n from photo where found_report_id = $1::uuid and status = 'deleted'`, [idOf(biscuit)]);
    expect(rows[0].n).toBe(4);
  });

  it("Saturday: Minou went home (archived), so the publisher removes it: DELETE, 204, closed left_custody", async () => {
    minou.ARCHIVED = 1;
    const m = idOf(minou);
    const calls = await runOn(5);
    expect(calls).toEqual(["POST /v2/auth/login 200", `DELETE /v2/animals/${m} 204`]);
    const { rows } = await h.db.pool.query(`select status, closed_reason from safety_found_report where id = $1::uuid`, [m]);
    expect(rows[0]).toEqual({ status: "closed", closed_reason: "left_custody" });
    expect(idOf(minou)).toBe("");
    // Its page no longer says a shelter holds it.
    expect((await call(h.api, { method: "GET", url: `/v1/safety/found-reports/${m}` })).json().partner).toBeUndefined();
  });

  it("a create it cannot make: 400 with message; then /v2/animals//photos twice, each a 400 with message; nothing written", async () => {
    const counts = async () =>
      (
        await h.db.pool.query(
          `select (select count(*)::int from safety_found_report) as reports, (select count(*)::int from partner_photo_fetch) as fetches,
                  (select count(*)::int from photo where status = 'deleted') as deleted, (select count(*)::int from outbox_event) as events`,
        )
      ).rows[0];
    const before = await counts();
    // Comments past the 100,000 characters the partner API takes.
    const tiny = animal({ ID: 1745, SHELTERCODE: "D2025110045", ANIMALNAME: "Tiny", SPECIESNAME: "Dog", ANIMALCOMMENTS: "x".repeat(100_001), LASTCHANGEDDATE: at(5), media: [{ ID: 9005, DATE: at(5) }] });
    shelter.animals.push(tiny);
    const calls = await runOn(5.5);
    expect(calls).toEqual(["POST /v2/auth/login 200", "POST /v2/animals 400", "DELETE /v2/animals//photos 400", "POST /v2/animals//photos 400"]);
    for (const c of wire.slice(-3)) {
      const body = JSON.parse(c.body);
      expect(body.message).toBe(body.detail);
      expect(body.type).toMatch(/\/validation-failed$/);
    }
    expect(JSON.parse(wire.at(-1)!.body).message).toMatch(/never created/);
    // It read `message` and went on, as it does: no raise.
    expect(shelter.log.errors).toEqual([expect.stringMatching(/^Error: HTTP 400/)]);
    expect(shelter.log.info.at(-1)).toMatch(/^Error processing photo\(s\): params\.id/);
    expect(await counts()).toEqual(before);
  });
});

describe("the owner looking for Biscuit", () => {
  const owner = "owner-of-biscuit";
  let lostId = "";

  it("files a lost report nearby and is told of the animal at the shelter, until when it is held, and its contact", async () => {
    const res = await call(h.api, {
      method: "POST",
      url: "/v1/safety/lost-reports",
      headers: as(owner),
      payload: lostReportBody({
        animal: { name: "Biscuit", species: "dog", breed: "Beagle", colors: ["brown", "white"], sex: "male", microchipId: "250268500123456" },
        lastSeenAt: new Date(at(0).getTime() - DAY).toISOString(),
        location: { lat: 48.8566, lon: 2.3022 },
      }),
    });
    expect(res.statusCode, res.body).toBe(201);
    lostId = res.json().id;
    const match = await eventually(async () => {
      const r = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${lostId}/matches`, headers: as(owner) });
      return r.json().items?.find((m: { targetId: string }) => m.targetId === idOf(biscuit));
    }, 20_000);
    expect(match).toMatchObject({ kind: "found_report", status: "suggested" });
    const notes = await eventually(async () => {
      const { rows } = await h.db.pool.query(`select body, data from notification where recipient_actor_id = $1 and kind = 'match' and channel = 'in_app'`, [owner]);
      return rows.some((r) => r.data.foundReportId === idOf(biscuit)) ? rows : undefined;
    });
    // Biscuit's own notification; another candidate nearby may be told in the owner's digest beside it.
    const note = notes.find((n: { data: { foundReportId?: string } }) => n.data.foundReportId === idOf(biscuit));
    expect(note?.data).toMatchObject({ lostReportId: lostId, foundReportId: idOf(biscuit) });
    const heldUntil = `${new Date(at(0).getTime() + 7 * DAY).toISOString().slice(0, 10)}T23:59:59.999Z`;
    expect(note.data.partner).toMatchObject({ name: "Riverside Animal Shelter", kind: "shelter", phone: "+33 1 23 45 67 89", heldUntil });
    expect(note.body).toMatch(/at Riverside Animal Shelter \(\+33 1 23 45 67 89.*\) until /);
  });

  it("the shelter's animal has a public page that says where it is and until when", async () => {
    const res = await call(h.api, { method: "GET", url: `/found/${idOf(biscuit)}`, headers: { accept: "text/html" } });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("At Riverside Animal Shelter until ");
    expect(res.body).toContain("+33 1 23 45 67 89");
  });

  it("confirms the match, and the shelter is told in the app and by email to its public address", async () => {
    const { items } = (await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${lostId}/matches`, headers: as(owner) })).json();
    const match = items.find((m: { targetId: string }) => m.targetId === idOf(biscuit));
    const res = await call(h.api, { method: "POST", url: `/v1/safety/matches/${match.id}/confirm`, headers: as(owner) });
    expect(res.statusCode, res.body).toBe(200);
    const rows = await eventually(async () => {
      const { rows } = await h.db.pool.query(
        `select channel, status, subject, body, data from notification where recipient_actor_id = $1 and kind = 'match' and source_key = $2 order by channel`,
        [`partner:${partner.id}`, `match:${match.id}:confirmed`],
      );
      return rows.length === 2 && rows.every((r) => r.status === "sent") ? rows : undefined;
    }, 20_000);
    expect(rows.map((r) => r.channel)).toEqual(["email", "in_app"]);
    const email = emails.find((n) => n.recipientActorId === `partner:${partner.id}` && /confirmed/i.test(n.subject));
    expect(email?.email).toMatch(/^desk\d+@riverside-shelter\.example$/);
    expect(rows[1].data.lostReportShareUrl).toMatch(new RegExp(`/lost/${lostId}$`));
    expect(rows[1].body).toContain(rows[1].data.lostReportShareUrl);
  });
});
