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
import { API_KEY, createPartner, startPartnerHarness, type TestPartner } from "./support.js";
import { mappedResolver, PHOTO_HOST, startHttpsServer, testCertificate, type TestServer } from "./servers.js";

/**
 * A replay of ASM3's found-animal publisher (sheltermanager/asm3,
 * src/asm3/publishers/petcolovelost.py) pointed at https://<host>/partners:
 * each call with the method, path, headers and body that publisher sends,
 * in its order, and each answer read the way it reads it (accessToken,
 * pets[].metadata.system_animal_id, pets[].id, the 201 and its id).
 *
 * Its HTTP helpers (asm3.utils) shape the requests: post_json serialises
 * with Python's json.dumps (", " and ": " separators) and sets Content-Type
 * application/json on the caller's headers dict, which the photo call then
 * reuses; get_url is requests.get; removeAnimal's post_data sends an empty
 * body with DELETE, to which urllib adds Content-Type
 * application/x-www-form-urlencoded and Content-Length 0.
 */

/** Python's json.dumps(obj): ", " between items and ": " after keys. */
const pyJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(pyJson).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${pyJson(v)}`).join(", ")}}`;
  }
  return JSON.stringify(value);
};
const PYTHON_URLLIB = { "user-agent": "Python-urllib/3.12", "accept-encoding": "identity", connection: "close" };
const PYTHON_REQUESTS = { "user-agent": "python-requests/2.32.3", "accept-encoding": "gzip, deflate", accept: "*/*", connection: "keep-alive" };
const SHELTER_IP = "203.0.113.50";

let h: Harness;
let pipeline: Pipeline;
let workerPool: Pool;
let photoWorker: SupervisedWorker;
let photos: TestServer;
let partner: TestPartner;
const emails: DeliverableNotification[] = [];
const emailDeliverer: Deliverer = { deliver: async (n) => void emails.push(n) };

/** The shelter's ASM3 animal record, as getAnimalDataQuery selects it (a US shelter: weights in lb, dates MM/DD/YYYY). */
const animalRecord = {
  ID: 1742,
  SHELTERCODE: "D2025110042",
  ANIMALNAME: "Biscuit",
  BREEDNAME1: "Beagle",
  BREEDNAME2: "",
  IDENTICHIPNUMBER: "250268500123456",
  IDENTICHIP2NUMBER: "981020000654321",
  DATEOFBIRTH: "03/14/2021",
  DATEBROUGHTIN: "11/20/2025",
  WEIGHT: 26.5,
  PICKUPADDRESS: "12 Rue Cler, 75007",
  ANIMALCOMMENTS: "Found wandering near the park, friendly, brown and white.",
  SPECIESNAME: "Dog",
  SIZE: "Medium",
  NEUTERED: 1,
  SEX: 1,
};

/** processAnimal's body, field for field and in its order. */
function processAnimal(an: typeof animalRecord, shelterId: string) {
  const chip = an.IDENTICHIP2NUMBER ? `${an.IDENTICHIPNUMBER} ${an.IDENTICHIP2NUMBER}` : an.IDENTICHIPNUMBER;
  const breed = an.BREEDNAME2 ? `${an.BREEDNAME1} ${an.BREEDNAME2}` : an.BREEDNAME1;
  const ro: Record<string, unknown> = {
    externalId: an.SHELTERCODE,
    displayId: an.SHELTERCODE,
    birthDate: an.DATEOFBIRTH,
    description: an.ANIMALCOMMENTS,
    address: { city: "", country: "", line1: an.PICKUPADDRESS, line2: "", postalCode: "", state: "" },
    intakeDate: an.DATEBROUGHTIN,
    name: an.ANIMALNAME,
    metadata: { system_animal_id: an.ID },
    microchip: chip,
    shelterId,
    species: an.SPECIESNAME.toLowerCase(),
    status: "found",
    size: an.SIZE.toUpperCase(),
    altered: an.NEUTERED === 1,
    breed,
    // "Weight must be an integer number of ounces": lb × 16 (a float in Python when the weight has a fraction).
    weight: an.WEIGHT * 16,
  };
  if (an.SPECIESNAME.toLowerCase() === "cat") ro.declawed = false;
  ro.sex = an.SEX === 0 ? "female" : "male";
  return ro;
}

const shelterId = "66113416-090e-468b-b484-043cd4d8413d";
let jpeg: Buffer;

beforeAll(async () => {
  h = await startPartnerHarness();
  partner = await createPartner(h, { name: "Riverside Animal Shelter", dateFormat: "MM/DD/YYYY" });
  pipeline = await startPipeline(h.api.pool, h.api.nc, { deliverers: { in_app: inAppDeliverer, email: emailDeliverer } });
  jpeg = await sharp({ create: { width: 800, height: 600, channels: 3, background: "#a0703c" } })
    .composite([{ input: Buffer.from('<svg width="800" height="600"><circle cx="400" cy="300" r="180" fill="#fff"/></svg>'), top: 0, left: 0 }])
    .jpeg()
    .toBuffer();
  photos = await startHttpsServer((request, response) => {
    if (request.url?.startsWith("/image?")) {
      response.writeHead(200, { "content-type": "image/jpeg", "content-length": jpeg.length });
      response.end(jpeg);
    } else {
      response.writeHead(404);
      response.end();
    }
  });
  workerPool = createPool({ connectionString: h.db.url, max: 4, applicationName: "partner-photos-test", logger: pino({ level: "silent" }) });
  // The notifier's photo runner, with the shelter's photo host allow-listed (PARTNER_PHOTO_FETCH_ALLOW) and resolved to this
  // machine, and the test certificate trusted: the fetch is real HTTPS to a local server.
  photoWorker = await startPhotoWorker(
    {
      pool: workerPool,
      storage: new LocalObjectStorage(TEST_PHOTO_DIR),
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
      partnerPhotoFetch: { allowHosts: [PHOTO_HOST], resolve: mappedResolver({ [PHOTO_HOST]: "127.0.0.1" }), ca: testCertificate().cert },
    },
    2,
  );
});

afterAll(async () => {
  await photoWorker?.stop();
  await pipeline?.stop();
  await workerPool?.end();
  await photos?.close();
  await h?.close();
});

/** A request as the shelter's server sends it, through the API's HTTP handling (inject), from the shelter's address. */
const send = (options: { method: "GET" | "POST" | "DELETE"; url: string; headers: Record<string, string>; body?: string }) =>
  h.api.app.inject({ method: options.method, url: options.url, headers: options.headers, payload: options.body, remoteAddress: SHELTER_IP });

const BASE = "/partners";
let accessToken = "";
let published: [number, string][] = [];

/** The publisher's list call at the start of each run (requests.get, its first page). */
const listAnimals = () =>
  send({
    method: "GET",
    url: `${BASE}/v2/animals/?limit=25&offset=0`,
    headers: { ...PYTHON_REQUESTS, "x-api-key": API_KEY, authorization: `Bearer ${accessToken}` },
  });
let pcllid = "";

describe("ASM3's found-animal publisher, replayed call for call", () => {
  it("getAuthDetails: POST {url}/v2/auth/login with x-api-key and Content-Type; reads accessToken", async () => {
    const res = await send({
      method: "POST",
      url: `${BASE}/v2/auth/login`,
      headers: { ...PYTHON_URLLIB, "x-api-key": API_KEY, "content-type": "application/json" },
      body: pyJson({ email: partner.loginEmail, password: partner.password }),
    });
    expect(res.statusCode, res.body).toBe(200);
    accessToken = JSON.parse(res.body).accessToken;
    expect(accessToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("create_shelter: POST {url}/v2/shelters with the organisation's details; answers the partner", async () => {
    const payload = {
      address: { city: "Paris", country: "France", line1: "1 Quai Branly", line2: "", postalCode: "75007", state: "" },
      contact: { email: "desk@riverside-shelter.example", phone: "+33 1 23 45 67 89" },
      name: "Riverside Animal Shelter",
      website: "https://riverside-shelter.example",
    };
    const res = await send({
      method: "POST",
      url: `${BASE}/v2/shelters`,
      headers: { ...PYTHON_URLLIB, "x-api-key": API_KEY, authorization: `Bearer ${accessToken}`, "content-type": "application/json" },
      body: pyJson(payload),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ id: partner.id, name: "Riverside Animal Shelter" });
  });

  it("run: GET {url}/v2/animals/?limit=25&offset=0 (requests.get); reads pets[].metadata.system_animal_id and pets[].id", async () => {
    const res = await listAnimals();
    expect(res.statusCode, res.body).toBe(200);
    const cjson = JSON.parse(res.body);
    published = cjson.pets.map((pa: { metadata: { system_animal_id: number }; id: string }) => [pa.metadata.system_animal_id, pa.id]);
    expect(published).toEqual([]);
  });

  it("run: POST {url}/v2/animals with processAnimal's body (MM/DD/YYYY dates, two chips, ounces); 201 and its id", async () => {
    const res = await send({
      method: "POST",
      url: `${BASE}/v2/animals`,
      headers: { ...PYTHON_URLLIB, "x-api-key": API_KEY, authorization: `Bearer ${accessToken}`, "content-type": "application/json" },
      body: pyJson(processAnimal(animalRecord, shelterId)),
    });
    expect(res.statusCode, res.body).toBe(201);
    pcllid = JSON.parse(res.body).id;
    const { rows } = await h.db.pool.query(
      `select reporter_id, status, species, breed, sex, microchip_id, found_at, partner_external_id, partner_animal
       from safety_found_report where id = $1::uuid`,
      [pcllid],
    );
    expect(rows[0]).toMatchObject({
      reporter_id: `partner:${partner.id}`,
      status: "open",
      species: "dog",
      breed: "Beagle",
      sex: "male",
      microchip_id: "250268500123456",
      partner_external_id: "D2025110042",
    });
    expect(rows[0].found_at.toISOString()).toBe("2025-11-20T00:00:00.000Z");
    expect(rows[0].partner_animal).toMatchObject({
      weightOunces: 424,
      microchips: ["250268500123456", "981020000654321"],
      birthDate: "2021-03-14",
      size: "MEDIUM",
      name: "Biscuit",
      altered: true,
    });
  });

  it("run: POST {url}/v2/animals/{id}/photos with the image URL (same headers dict); 202, then fetched and processed", async () => {
    const imageurl = `https://${PHOTO_HOST}:${photos.port}/image?db=asmtestdbdb&mode=animal&id=${animalRecord.ID}`;
    const res = await send({
      method: "POST",
      url: `${BASE}/v2/animals/${pcllid}/photos`,
      headers: { ...PYTHON_URLLIB, "x-api-key": API_KEY, authorization: `Bearer ${accessToken}`, "content-type": "application/json" },
      body: pyJson({ photos: [{ url: `${imageurl}&something=.jpg` }] }),
    });
    expect(res.statusCode, res.body).toBe(202);
    const detail = await eventually(async () => {
      const r = await send({ method: "GET", url: `${BASE}/v2/animals/${pcllid}`, headers: { "x-api-key": API_KEY, authorization: `Bearer ${accessToken}` } });
      const body = JSON.parse(r.body);
      return body.photos?.[0]?.status === "ready" ? body : undefined;
    }, 20_000);
    expect(detail.photos).toEqual([{ id: expect.any(String), url: `${imageurl}&something=.jpg`, status: "ready" }]);
    expect(photos.requests).toEqual([`/image?db=asmtestdbdb&mode=animal&id=${animalRecord.ID}&something=.jpg`]);
    // The public view lists the processed photo, with the partner holding the animal.
    const view = await call(h.api, { method: "GET", url: `/v1/safety/found-reports/${pcllid}` });
    expect(view.json().photos).toHaveLength(1);
    expect(view.json().partner).toMatchObject({ name: "Riverside Animal Shelter", kind: "shelter" });
  });

  it("the next run: the list shows the animal by its system_animal_id, so ASM3 skips it", async () => {
    const res = await listAnimals();
    expect(res.statusCode, res.body).toBe(200);
    const cjson = JSON.parse(res.body);
    published = cjson.pets.map((pa: { metadata: { system_animal_id: number }; id: string }) => [pa.metadata.system_animal_id, pa.id]);
    expect(published).toEqual([[animalRecord.ID, pcllid]]);
    expect(cjson.total).toBe(1);
  });

  it("a re-publish of the same animal (its record changed) updates the report: 200 and the same id, no second report", async () => {
    const res = await send({
      method: "POST",
      url: `${BASE}/v2/animals`,
      headers: { ...PYTHON_URLLIB, "x-api-key": API_KEY, authorization: `Bearer ${accessToken}`, "content-type": "application/json" },
      body: pyJson(processAnimal({ ...animalRecord, WEIGHT: 27 }, shelterId)),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ id: pcllid });
    const { rows } = await h.db.pool.query(`select count(*)::int as n, max((partner_animal->>'weightOunces')::int) as oz from safety_found_report where partner_id = $1::uuid`, [partner.id]);
    expect(rows[0]).toEqual({ n: 1, oz: 432 });
  });
});

describe("the owner looking for that animal", () => {
  const owner = "owner-of-biscuit";
  let lostId = "";

  it("files a lost report nearby and is told of the animal at the shelter", async () => {
    const res = await call(h.api, {
      method: "POST",
      url: "/v1/safety/lost-reports",
      headers: as(owner),
      payload: lostReportBody({
        animal: { name: "Biscuit", species: "dog", breed: "Beagle", colors: ["brown", "white"], sex: "male", microchipId: "250268500123456" },
        lastSeenAt: "2025-11-19T17:00:00Z",
        location: { lat: 48.8566, lon: 2.3022 },
      }),
    });
    expect(res.statusCode, res.body).toBe(201);
    lostId = res.json().id;
    const match = await eventually(async () => {
      const r = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${lostId}/matches`, headers: as(owner) });
      return r.json().items?.find((m: { targetId: string }) => m.targetId === pcllid);
    }, 20_000);
    expect(match).toMatchObject({ kind: "found_report", targetId: pcllid, status: "suggested" });
    const notes = await eventually(async () => {
      const { rows } = await h.db.pool.query(`select data from notification where recipient_actor_id = $1 and kind = 'match' and channel = 'in_app'`, [owner]);
      return rows.length > 0 ? rows : undefined;
    });
    expect(notes[0].data).toMatchObject({ lostReportId: lostId, foundReportId: pcllid });
    // The shelter's public contact comes with it, so the owner can call the shelter at once.
    expect(notes[0].data.partner).toMatchObject({ name: "Riverside Animal Shelter", kind: "shelter", phone: "+33 1 23 45 67 89" });
    const mine = await call(h.api, { method: "GET", url: "/v1/me/notifications", headers: as(owner) });
    expect(mine.json().items.find((n: { kind: string }) => n.kind === "match")?.body).toMatch(/at Riverside Animal Shelter \(\+33 1 23 45 67 89/);
  });

  it("the shelter's animal has a public page that says where it is", async () => {
    const res = await call(h.api, { method: "GET", url: `/found/${pcllid}`, headers: { accept: "text/html" } });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("Riverside Animal Shelter");
    expect(res.body).toContain("+33 1 23 45 67 89");
  });

  it("confirms the match, and the shelter is told in the app and by email to its public address", async () => {
    const { items } = (await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${lostId}/matches`, headers: as(owner) })).json();
    const match = items.find((m: { targetId: string }) => m.targetId === pcllid);
    const res = await call(h.api, { method: "POST", url: `/v1/safety/matches/${match.id}/confirm`, headers: as(owner) });
    expect(res.statusCode, res.body).toBe(200);
    const rows = await eventually(async () => {
      const { rows } = await h.db.pool.query(
        `select channel, status, subject from notification where recipient_actor_id = $1 and kind = 'match' and source_key = $2 order by channel`,
        [`partner:${partner.id}`, `match:${match.id}:confirmed`],
      );
      return rows.length === 2 && rows.every((r) => r.status === "sent") ? rows : undefined;
    }, 20_000);
    expect(rows.map((r) => r.channel)).toEqual(["email", "in_app"]);
    const email = emails.find((n) => n.recipientActorId === `partner:${partner.id}` && /confirmed/i.test(n.subject));
    expect(email?.email).toMatch(/^desk\d+@riverside-shelter\.example$/);
    // The partner reads it in the app like any recipient: its in_app row is there.
    expect(rows.find((r) => r.channel === "in_app")?.subject).toMatch(/confirmed/i);
    // With the owner's page, the shelter's only way to the lost report.
    const { rows: data } = await h.db.pool.query(`select body, data from notification where recipient_actor_id = $1 and source_key = $2 and channel = 'in_app'`, [
      `partner:${partner.id}`,
      `match:${match.id}:confirmed`,
    ]);
    expect(data[0].data.lostReportShareUrl).toMatch(new RegExp(`/lost/${lostId}$`));
    expect(data[0].body).toContain(data[0].data.lostReportShareUrl);
  });
});

describe("the animal leaves the shelter", () => {
  it("removeAnimal: DELETE {url}/v2/animals/{id} with an empty body (urllib's form content type); 204, closed left_custody", async () => {
    const res = await send({
      method: "DELETE",
      url: `${BASE}/v2/animals/${pcllid}`,
      headers: {
        ...PYTHON_URLLIB,
        "x-api-key": API_KEY,
        authorization: `Bearer ${accessToken}`,
        "content-type": "application/x-www-form-urlencoded",
        "content-length": "0",
      },
      body: "",
    });
    expect(res.statusCode, res.body).toBe(204);
    const { rows } = await h.db.pool.query(`select status, closed_reason from safety_found_report where id = $1::uuid`, [pcllid]);
    expect(rows[0]).toEqual({ status: "closed", closed_reason: "left_custody" });
    const list = await listAnimals();
    expect(JSON.parse(list.body)).toEqual({ pets: [], total: 0 });
  });
});
