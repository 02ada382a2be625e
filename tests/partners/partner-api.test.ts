import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin } from "../helpers/app.js";
import { type Harness } from "../helpers/harness.js";
import { call, expectProblem } from "../safety/helpers.js";
import {
  API_KEY,
  asm3Animal,
  createPartner,
  expectPartnerProblem,
  login,
  OTHER_KEY,
  partnerBody,
  partnerCall,
  publish,
  startPartnerHarness,
  type TestPartner,
} from "./support.js";

let h: Harness;
let partner: TestPartner;
let token: string;

beforeAll(async () => {
  h = await startPartnerHarness();
  partner = await createPartner(h, { dateFormat: "MM/DD/YYYY" });
  token = await login(h, partner);
});
afterAll(() => h?.close());

const rowCounts = async () => {
  const { rows } = await h.db.pool.query<{ reports: number; events: number; fetches: number }>(
    `select (select count(*)::int from safety_found_report) as reports, (select count(*)::int from outbox_event) as events,
            (select count(*)::int from partner_photo_fetch) as fetches`,
  );
  return rows[0]!;
};

describe("integration keys and logins", () => {
  it("refuses every /partners call without a key from PARTNER_API_KEYS, or with a wrong one (401)", async () => {
    for (const key of [null, "", "not-a-key", `${API_KEY}x`]) {
      const res = await partnerCall(h, { method: "GET", url: "/partners/v2/animals?limit=25&offset=0", token, key });
      expectProblem(res, 401, "unauthenticated");
    }
    const login = await partnerCall(h, { method: "POST", url: "/partners/v2/auth/login", key: null, payload: { email: partner.loginEmail, password: partner.password } });
    expectProblem(login, 401, "unauthenticated");
  });

  it("accepts any of the configured keys", async () => {
    const res = await partnerCall(h, { method: "GET", url: "/partners/v2/animals?limit=25&offset=0", token, key: OTHER_KEY });
    expect(res.statusCode, res.body).toBe(200);
  });

  it("gives a one-hour bearer token for the right email and password, and the same 401 body for a wrong email or password", async () => {
    const ok = await partnerCall(h, { method: "POST", url: "/partners/v2/auth/login", payload: { email: partner.loginEmail.toUpperCase(), password: partner.password } });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toEqual({ accessToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expiresIn: 3600 });
    const { rows } = await h.db.pool.query(`select extract(epoch from expires_at - created_at)::int as ttl from partner_token where partner_id = $1::uuid`, [partner.id]);
    expect(rows.every((r) => r.ttl === 3600)).toBe(true);

    const wrongPassword = await partnerCall(h, { method: "POST", url: "/partners/v2/auth/login", payload: { email: partner.loginEmail, password: "wrong" } });
    const wrongEmail = await partnerCall(h, { method: "POST", url: "/partners/v2/auth/login", payload: { email: "nobody@example.org", password: partner.password } });
    expectProblem(wrongPassword, 401, "unauthenticated");
    expectProblem(wrongEmail, 401, "unauthenticated");
    expect(wrongEmail.body).toBe(wrongPassword.body);
  });

  it("allows 10 login tries a minute per client address, then 429 with Retry-After", async () => {
    const ip = "10.250.1.1";
    // All at once: one by one, each password check takes long enough on a loaded machine that
    // the minute's bucket refills a try before the eleventh.
    const tries = await Promise.all(
      Array.from({ length: 11 }, () => partnerCall(h, { method: "POST", url: "/partners/v2/auth/login", ip, payload: { email: partner.loginEmail, password: "wrong" } })),
    );
    expect(tries.map((r) => r.statusCode).sort()).toEqual([...Array(10).fill(401), 429]);
    const refused = tries.find((r) => r.statusCode === 429)!;
    expectProblem(refused, 429, "rate-limited");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    // Another address is not held back.
    const other = await partnerCall(h, { method: "POST", url: "/partners/v2/auth/login", ip: "10.250.1.2", payload: { email: partner.loginEmail, password: partner.password } });
    expect(other.statusCode).toBe(200);
  });

  it("refuses a missing, malformed or unknown bearer token (401)", async () => {
    for (const t of [undefined, "short", "A".repeat(43)]) {
      const res = await partnerCall(h, { method: "GET", url: "/partners/v2/animals", token: t });
      expectProblem(res, 401, "unauthenticated");
    }
  });

  it("POST /partners/v2/shelters answers the logged-in partner and creates nothing", async () => {
    const before = await h.db.pool.query(`select count(*)::int as n from partner`);
    const res = await partnerCall(h, {
      method: "POST",
      url: "/partners/v2/shelters",
      token,
      payload: { name: "Another name", website: "", contact: { email: "x@example.org", phone: "" }, address: { city: "", country: "", line1: "", line2: "", postalCode: "", state: "" } },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ id: partner.id, name: partner.name });
    const after = await h.db.pool.query(`select count(*)::int as n from partner`);
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });
});

describe("animals", () => {
  it("creates a found report in custody at the partner's location, foundAt = intakeDate, with the found_reported event (201)", async () => {
    const body = asm3Animal({ intakeDate: "11/20/2025" });
    const res = await publish(h, token, body);
    expect(res.statusCode, res.body).toBe(201);
    const { id } = res.json();
    const { rows } = await h.db.pool.query(
      `select reporter_id, status, species, breed, sex, microchip_id, found_at, st_y(location::geometry) as lat, st_x(location::geometry) as lon,
              partner_id, partner_external_id, partner_animal, partner_metadata::text as metadata
       from safety_found_report where id = $1::uuid`,
      [id],
    );
    const row = rows[0];
    expect(row).toMatchObject({
      reporter_id: `partner:${partner.id}`,
      status: "open",
      species: "dog",
      breed: "Beagle Labrador Retriever",
      sex: "male",
      microchip_id: "250268500123456",
      partner_id: partner.id,
      partner_external_id: body.externalId,
    });
    expect(row.found_at.toISOString()).toBe("2025-11-20T00:00:00.000Z");
    expect(row.lat).toBeCloseTo(48.8584, 6);
    expect(row.lon).toBeCloseTo(2.2945, 6);
    expect(row.partner_animal).toMatchObject({ weightOunces: 423, microchips: ["250268500123456", "981020000654321"], birthDate: "2021-03-14", altered: true, size: "MEDIUM" });
    expect(JSON.parse(row.metadata)).toEqual(body.metadata);
    const events = await h.db.pool.query(`select type, payload from outbox_event where payload->>'reportId' = $1`, [id]);
    expect(events.rows.map((e) => e.type)).toEqual(["events.animal.found_reported.v1"]);
    expect(events.rows[0].payload).toMatchObject({ reporterId: `partner:${partner.id}`, species: "dog", foundAt: "2025-11-20T00:00:00.000Z" });
  });

  it("updates the same externalId's report and answers 200 with the same id", async () => {
    const body = asm3Animal();
    const first = await publish(h, token, body);
    expect(first.statusCode).toBe(201);
    const again = await publish(h, token, { ...body, breed: "Beagle", metadata: { system_animal_id: 42, note: "re-published" } });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().id).toBe(first.json().id);
    const { rows } = await h.db.pool.query(`select breed, partner_metadata::text as m from safety_found_report where id = $1::uuid`, [first.json().id]);
    expect(rows[0].breed).toBe("Beagle");
    expect(rows[0].m).toBe('{"system_animal_id":42,"note":"re-published"}');
    const updated = await h.db.pool.query(`select payload from outbox_event where type = 'events.safety.report_updated.v1' and payload->>'reportId' = $1`, [first.json().id]);
    expect(updated.rows[0].payload.changed).toEqual(["animal.breed"]);
  });

  it("lists the partner's open animals with metadata as sent, paged by limit and offset", async () => {
    const own = await createPartner(h);
    const ownToken = await login(h, own);
    const ids = [];
    for (let i = 0; i < 3; i++) {
      const res = await publish(h, ownToken, asm3Animal({ metadata: { system_animal_id: 500 + i, tags: ["a", i] } }));
      expect(res.statusCode, res.body).toBe(201);
      ids.push(res.json().id);
    }
    const page = await partnerCall(h, { method: "GET", url: "/partners/v2/animals/?limit=2&offset=0", token: ownToken });
    expect(page.statusCode, page.body).toBe(200);
    expect(page.json().total).toBe(3);
    expect(page.json().pets.map((p: { id: string }) => p.id)).toEqual(ids.slice(0, 2));
    expect(page.json().pets[1]).toEqual({ id: ids[1], externalId: expect.any(String), status: "open", metadata: { system_animal_id: 501, tags: ["a", 1] } });
    const rest = await partnerCall(h, { method: "GET", url: "/partners/v2/animals?limit=2&offset=2", token: ownToken });
    expect(rest.json().pets.map((p: { id: string }) => p.id)).toEqual([ids[2]]);
  });

  it("closes a deleted animal with closedReason left_custody (204), through the found_report_resolved event", async () => {
    const { id } = (await publish(h, token, asm3Animal())).json();
    const res = await partnerCall(h, { method: "DELETE", url: `/partners/v2/animals/${id}`, token });
    expect(res.statusCode, res.body).toBe(204);
    const { rows } = await h.db.pool.query(`select status, closed_reason from safety_found_report where id = $1::uuid`, [id]);
    expect(rows[0]).toEqual({ status: "closed", closed_reason: "left_custody" });
    const events = await h.db.pool.query(`select payload from outbox_event where type = 'events.safety.found_report_resolved.v1' and payload->>'foundReportId' = $1`, [id]);
    expect(events.rows[0].payload).toMatchObject({ outcome: "closed", reporterId: `partner:${partner.id}` });
    const detail = await partnerCall(h, { method: "GET", url: `/partners/v2/animals/${id}`, token });
    expect(detail.json()).toMatchObject({ status: "closed", closedReason: "left_custody" });
    const list = await partnerCall(h, { method: "GET", url: "/partners/v2/animals?limit=200", token });
    expect(list.json().pets.map((p: { id: string }) => p.id)).not.toContain(id);
    const publicView = await call(h.api, { method: "GET", url: `/v1/safety/found-reports/${id}` });
    expect(publicView.json()).toMatchObject({ status: "closed", closedReason: "left_custody" });
    expect(publicView.json().partner).toBeUndefined();
  });

  it("answers 404 for another partner's animal or an unknown one, on every animal route", async () => {
    const other = await createPartner(h);
    const otherToken = await login(h, other);
    const { id } = (await publish(h, token, asm3Animal())).json();
    for (const target of [id, crypto.randomUUID()]) {
      expectProblem(await partnerCall(h, { method: "GET", url: `/partners/v2/animals/${target}`, token: otherToken }), 404, "not-found");
      expectProblem(await partnerCall(h, { method: "DELETE", url: `/partners/v2/animals/${target}`, token: otherToken }), 404, "not-found");
      expectProblem(
        await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${target}/photos`, token: otherToken, payload: { photos: [{ url: "https://example.org/a.jpg" }] } }),
        404,
        "not-found",
      );
    }
    const { rows } = await h.db.pool.query(`select status from safety_found_report where id = $1::uuid`, [id]);
    expect(rows[0].status).toBe("open");
  });

  it("the public found-report view says which partner holds the animal, with its public contact", async () => {
    const { id } = (await publish(h, token, asm3Animal())).json();
    const res = await call(h.api, { method: "GET", url: `/v1/safety/found-reports/${id}` });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().partner).toEqual({
      name: partner.name,
      kind: "shelter",
      phone: "+33 1 23 45 67 89",
      email: expect.stringMatching(/@riverside-shelter\.example$/),
      address: "1 Quai Branly, Paris",
      website: "https://riverside-shelter.example",
    });
    // Still only the coarse point, no microchip, no reporter id, and none of the partner's own fields (its login, the pickup address).
    expect(res.body).not.toContain("250268500123456");
    expect(res.body).not.toContain(`partner:${partner.id}`);
    expect(res.body).not.toContain(partner.loginEmail);
    expect(res.body).not.toContain("Rue Cler");
    expect(res.body).not.toContain("system_animal_id");
    expect(res.json().location).not.toEqual({ lat: 48.8584, lon: 2.2945 });
  });
});

describe("ASM3's other calls: PATCH, the photos' DELETE, and what it reads of every answer", () => {
  it("PATCH updates the fields it carries and keeps the rest; a change matching reads emits report_updated", async () => {
    const body = asm3Animal({ description: "Brown and white." });
    const { id } = (await publish(h, token, body)).json();
    // What ASM3 sends: the create's body less shelterId and species.
    const { shelterId: _s, species: _sp, ...update } = { ...body, breed: "Beagle", size: "LARGE", weight: 440, name: "Biscuit II" };
    const res = await partnerCall(h, { method: "PATCH", url: `/partners/v2/animals/${id}`, token, payload: update });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ id });
    const { rows } = await h.db.pool.query(`select species, breed, description, partner_animal from safety_found_report where id = $1::uuid`, [id]);
    expect(rows[0]).toMatchObject({ species: "dog", breed: "Beagle", description: "Brown and white." });
    expect(rows[0].partner_animal).toMatchObject({ size: "LARGE", weightOunces: 440, name: "Biscuit II", shelterId: body.shelterId });
    const events = await h.db.pool.query(`select payload from outbox_event where type = 'events.safety.report_updated.v1' and payload->>'reportId' = $1`, [id]);
    expect(events.rows.map((e) => e.payload.changed)).toEqual([["animal.breed", "animal.size"]]);
    // Only a name: nothing matching reads changed, so no event.
    expect((await partnerCall(h, { method: "PATCH", url: `/partners/v2/animals/${id}`, token, payload: { name: "Biscuit" } })).statusCode).toBe(200);
    const after = await h.db.pool.query(`select count(*)::int as n from outbox_event where type = 'events.safety.report_updated.v1' and payload->>'reportId' = $1`, [id]);
    expect(after.rows[0].n).toBe(1);
  });

  it("PATCH of another partner's or an unknown animal is 404, of a closed one 409, with a bad date 400; none writes", async () => {
    const other = await login(h, await createPartner(h));
    const { id } = (await publish(h, token, asm3Animal())).json();
    const before = await rowCounts();
    for (const target of [id, crypto.randomUUID()]) {
      expectPartnerProblem(await partnerCall(h, { method: "PATCH", url: `/partners/v2/animals/${target}`, token: other, payload: { name: "x" } }), 404, "not-found");
    }
    expectPartnerProblem(await partnerCall(h, { method: "PATCH", url: `/partners/v2/animals/${id}`, token, payload: { intakeDate: "31/31/2025" } }), 400, "validation-failed");
    expectPartnerProblem(await partnerCall(h, { method: "PATCH", url: `/partners/v2/animals/${id}`, token, payload: { species: "dragon" } }), 400, "validation-failed");
    expect(await rowCounts()).toEqual(before);
    expect((await partnerCall(h, { method: "DELETE", url: `/partners/v2/animals/${id}`, token })).statusCode).toBe(204);
    const closed = await rowCounts();
    expectPartnerProblem(await partnerCall(h, { method: "PATCH", url: `/partners/v2/animals/${id}`, token, payload: { name: "x" } }), 409, "conflict");
    expect(await rowCounts()).toEqual(closed);
  });

  it("DELETE of the photos is 204 with no body and no Content-Type, empties the set, and is 204 again", async () => {
    const { id } = (await publish(h, token, asm3Animal())).json();
    const five = Array.from({ length: 5 }, (_, i) => ({ url: `https://photos.shelter.example/${i}.jpg` }));
    const posted = await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos: five } });
    expect(posted.statusCode, posted.body).toBe(202);
    expect(posted.json()).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), photos: expect.any(Array), ignored: [] });
    expectPartnerProblem(await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos: five.slice(0, 1) } }), 409, "conflict");
    // As requests sends it: no body, Content-Length 0, no Content-Type.
    const purge = await partnerCall(h, { method: "DELETE", url: `/partners/v2/animals/${id}/photos`, token, headers: { "content-length": "0" } });
    expect(purge.statusCode, purge.body).toBe(204);
    expect(purge.body).toBe("");
    const { rows } = await h.db.pool.query(`select count(*)::int as n from partner_photo_fetch where found_report_id = $1::uuid`, [id]);
    expect(rows[0].n).toBe(0);
    expect((await partnerCall(h, { method: "GET", url: `/partners/v2/animals/${id}`, token })).json().photos).toEqual([]);
    expect((await partnerCall(h, { method: "DELETE", url: `/partners/v2/animals/${id}/photos`, token })).statusCode).toBe(204);
    const again = await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos: five } });
    expect(again.statusCode, again.body).toBe(202);
    expect(again.json().id).not.toBe(posted.json().id);
    const other = await login(h, await createPartner(h));
    expectPartnerProblem(await partnerCall(h, { method: "DELETE", url: `/partners/v2/animals/${id}/photos`, token: other }), 404, "not-found");
  });

  it("takes an animal's first 5 photos of the 7 ASM3 sends, preferred first, lists the other 2 as ignored, and fetches only the 5", async () => {
    const { id } = (await publish(h, token, asm3Animal())).json();
    const seven = Array.from({ length: 7 }, (_, i) => ({ url: `https://photos.shelter.example/${i}.jpg` }));
    const posted = await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos: seven } });
    expect(posted.statusCode, posted.body).toBe(202);
    expect(posted.json().photos.map((p: { url: string }) => p.url)).toEqual(seven.slice(0, 5).map((p) => p.url));
    expect(posted.json().ignored).toEqual(seven.slice(5).map((p) => p.url));
    const { rows } = await h.db.pool.query(`select url from partner_photo_fetch where found_report_id = $1::uuid order by url`, [id]);
    expect(rows.map((r) => r.url)).toEqual(seven.slice(0, 5).map((p) => p.url));
    // A set that is full already: nothing fits, 409, nothing written.
    expectPartnerProblem(await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos: seven } }), 409, "conflict");
    expect((await h.db.pool.query(`select count(*)::int as n from partner_photo_fetch where found_report_id = $1::uuid`, [id])).rows[0].n).toBe(5);
  });

  it("an unknown path under /partners is 404 with message, whatever its credentials, and so is every other error", async () => {
    for (const [method, url] of [
      ["GET", "/partners/v2/pets"],
      ["POST", "/partners/v3/animals"],
      ["PUT", "/partners/v2/animals"],
      ["GET", "/partners"],
    ] as const) {
      expectPartnerProblem(await partnerCall(h, { method, url, token, payload: method === "GET" ? undefined : {} }), 404, "not-found");
      expectPartnerProblem(await partnerCall(h, { method, url, key: null }), 404, "not-found");
    }
    expectPartnerProblem(await partnerCall(h, { method: "GET", url: "/partners/v2/animals", key: null }), 401, "unauthenticated");
    expectPartnerProblem(await partnerCall(h, { method: "GET", url: "/partners/v2/animals" }), 401, "unauthenticated");
    expectPartnerProblem(await publish(h, token, asm3Animal({ species: "dragon" })), 400, "validation-failed");
    expectPartnerProblem(
      await partnerCall(h, { method: "POST", url: "/partners/v2/animals", token, headers: { "content-type": "text/xml" }, payload: "<animal/>" }),
      415,
      "unsupported-media-type",
    );
    // Elsewhere the problem has no message: it is the partner API's.
    const elsewhere = await call(h.api, { method: "GET", url: "/v1/safety/lost-reports/nope" });
    expect(elsewhere.json().message).toBeUndefined();
  });

  it("after a create it could not make, ASM3 calls /v2/animals//photos: a 400 with message that writes nothing", async () => {
    const before = await rowCounts();
    const purge = await partnerCall(h, { method: "DELETE", url: "/partners/v2/animals//photos", token });
    expectPartnerProblem(purge, 400, "validation-failed");
    expect(purge.json().message).toMatch(/never created/);
    const post = await partnerCall(h, { method: "POST", url: "/partners/v2/animals//photos", token, payload: { photos: [{ url: "https://photos.shelter.example/a.jpg" }] } });
    expectPartnerProblem(post, 400, "validation-failed");
    expect(await rowCounts()).toEqual(before);
  });

  it("takes a description of up to 100,000 characters, cut at a word boundary with … past the report's 5,000", async () => {
    const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i % 10}`).join(" ");
    const long = words(1200); // about 6,000 characters
    const res = await publish(h, token, asm3Animal({ description: long }));
    expect(res.statusCode, res.body).toBe(201);
    const { rows } = await h.db.pool.query(`select description from safety_found_report where id = $1::uuid`, [res.json().id]);
    const kept: string = rows[0].description;
    expect(kept.length).toBeLessThanOrEqual(5000);
    expect(kept.endsWith("…")).toBe(true);
    expect(long.startsWith(kept.slice(0, -1))).toBe(true);
    // Cut between words: what is kept ends with a whole word.
    expect(kept.slice(0, -1)).toMatch(/ word\d$/);
    const most = "é".repeat(100_000);
    const accepted = await publish(h, token, asm3Animal({ description: most }));
    expect(accepted.statusCode, accepted.body.slice(0, 300)).toBe(201);
    const before = await rowCounts();
    expectPartnerProblem(await publish(h, token, asm3Animal({ description: `${most}é` })), 400, "validation-failed");
    expect(await rowCounts()).toEqual(before);
  });

  it("creates at most 500 animals an hour per partner (429 with message, nothing written); updates still pass", async () => {
    const p = await createPartner(h);
    const t = await login(h, p);
    const body = asm3Animal();
    expect((await publish(h, t, body)).statusCode).toBe(201);
    // The hour's 500 are spent.
    await h.db.pool.query(`update rate_limit_bucket set tokens = 0, updated_at = clock_timestamp() where key = $1`, [`partner-animal-create:${p.id}`]);
    const before = await rowCounts();
    const refused = await publish(h, t, asm3Animal());
    expectPartnerProblem(refused, 429, "rate-limited");
    expect(refused.json().message).toMatch(/500 animals an hour/);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(await rowCounts()).toEqual(before);
    expect((await publish(h, t, { ...body, name: "Renamed" })).statusCode).toBe(200);
  });
});

describe("bad input is a problem+json 400 that writes nothing", () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ["an unknown species, with the accepted list", { species: "dragon" }, /dog, cat, bird, rabbit, other/],
    ["an intake date that is not a date", { intakeDate: "not a date" }, /intakeDate/],
    ["an impossible calendar day", { intakeDate: "02/30/2025" }, /intakeDate/],
    ["a date in another order than the partner's", { intakeDate: "20.11.2025" }, /intakeDate/],
    ["a birth date that is not a date", { birthDate: "yesterday" }, /birthDate/],
    ["metadata over 2 KB", { metadata: { system_animal_id: 1, blob: "x".repeat(2100) } }, /metadata/],
    ["metadata that is not an object", { metadata: [1, 2] }, /metadata/],
    ["three microchips", { microchip: "111111 222222 333333" }, /microchip/],
    ["a status other than found", { status: "adoptable" }, /status/],
    ["a weight that is not a number", { weight: "12kg" }, /weight/],
    ["no externalId", { externalId: undefined }, /externalId/],
  ];
  for (const [what, change, detail] of cases) {
    it(what, async () => {
      const before = await rowCounts();
      const res = await publish(h, token, asm3Animal(change));
      expectProblem(res, 400, "validation-failed");
      expect(JSON.stringify(res.json())).toMatch(detail);
      expect(await rowCounts()).toEqual(before);
    });
  }

  it("malformed JSON, and photos that are not URLs", async () => {
    const before = await rowCounts();
    const res = await partnerCall(h, { method: "POST", url: "/partners/v2/animals", token, headers: { "content-type": "application/json" }, payload: "{nope" });
    expectProblem(res, 400, "validation-failed");
    const { id } = (await publish(h, token, asm3Animal())).json();
    const mid = await rowCounts();
    for (const photos of [[{ url: "not a url" }], [{ url: "ftp://example.org/a.jpg" }], [], [{}]]) {
      expectProblem(await partnerCall(h, { method: "POST", url: `/partners/v2/animals/${id}/photos`, token, payload: { photos } }), 400, "validation-failed");
    }
    expect(await rowCounts()).toEqual(mid);
    expect(mid.reports).toBe(before.reports + 1);
  });

  it("accepts ISO dates from any partner, and the partner's own format", async () => {
    expect((await publish(h, token, asm3Animal({ intakeDate: "2025-11-21", birthDate: "" }))).statusCode).toBe(201);
    const european = await createPartner(h, { dateFormat: "DD.MM.YYYY" });
    const t = await login(h, european);
    const res = await publish(h, t, asm3Animal({ intakeDate: "21.11.2025", birthDate: "14.03.2021" }));
    expect(res.statusCode, res.body).toBe(201);
    const { rows } = await h.db.pool.query(`select found_at from safety_found_report where id = $1::uuid`, [res.json().id]);
    expect(rows[0].found_at.toISOString()).toBe("2025-11-21T00:00:00.000Z");
    expectProblem(await publish(h, t, asm3Animal({ intakeDate: "11/21/2025" })), 400, "validation-failed");
  });
});

describe("the admin resource", () => {
  it("creates, lists, rotates, suspends and restores partners, each audited; only platform_admin may", async () => {
    const body = partnerBody({ kind: "vet", dateFormat: undefined });
    expectProblem(await call(h.api, { method: "POST", url: "/v1/admin/partners", headers: { "x-debug-actor": "someone" }, payload: body }), 403, "forbidden");
    const created = await call(h.api, { method: "POST", url: "/v1/admin/partners", headers: admin("admin-7"), payload: body });
    expect(created.statusCode, created.body).toBe(201);
    const { id, password } = created.json();
    expect(password).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const stored = await h.db.pool.query(`select password_hash from partner where id = $1::uuid`, [id]);
    expect(stored.rows[0].password_hash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(stored.rows[0].password_hash).not.toContain(password);

    const duplicate = await call(h.api, { method: "POST", url: "/v1/admin/partners", headers: admin(), payload: { ...partnerBody(), loginEmail: body.loginEmail } });
    expectProblem(duplicate, 409, "conflict");
    expectProblem(await call(h.api, { method: "POST", url: "/v1/admin/partners", headers: admin(), payload: { ...partnerBody(), kind: "zoo" } }), 400, "validation-failed");

    const list = await call(h.api, { method: "GET", url: "/v1/admin/partners?limit=200", headers: admin() });
    expect(list.statusCode).toBe(200);
    expect(list.json().items.find((p: { id: string }) => p.id === id)).toMatchObject({ id, actorId: `partner:${id}`, kind: "vet", status: "active", dateFormat: "YYYY-MM-DD" });
    expect(JSON.stringify(list.json())).not.toContain("scrypt");

    const p: TestPartner = { id, password, loginEmail: body.loginEmail as string, name: body.name as string };
    const oldToken = await login(h, p);
    const rotated = await call(h.api, { method: "POST", url: `/v1/admin/partners/${id}/rotate-password`, headers: admin("admin-7") });
    expect(rotated.statusCode, rotated.body).toBe(200);
    expect(rotated.json().password).not.toBe(password);
    expectProblem(await partnerCall(h, { method: "GET", url: "/partners/v2/animals", token: oldToken }), 401, "unauthenticated");
    expectProblem(await partnerCall(h, { method: "POST", url: "/partners/v2/auth/login", payload: { email: p.loginEmail, password } }), 401, "unauthenticated");
    p.password = rotated.json().password;
    const liveToken = await login(h, p);

    const suspended = await call(h.api, {
      method: "POST",
      url: `/v1/admin/partners/${id}/suspend`,
      headers: admin("admin-7"),
      payload: { reasonCode: "abuse", reasonDetail: "published animals it does not hold" },
    });
    expect(suspended.statusCode, suspended.body).toBe(200);
    expect(suspended.json().status).toBe("suspended");
    // 403 on every call, the login included.
    expectProblem(await partnerCall(h, { method: "GET", url: "/partners/v2/animals", token: liveToken }), 403, "account-suspended");
    expectProblem(await publish(h, liveToken, asm3Animal()), 403, "account-suspended");
    expectProblem(await partnerCall(h, { method: "POST", url: "/partners/v2/shelters", token: liveToken, payload: {} }), 403, "account-suspended");
    expectProblem(await partnerCall(h, { method: "POST", url: "/partners/v2/auth/login", payload: { email: p.loginEmail, password: p.password } }), 403, "account-suspended");

    const restored = await call(h.api, { method: "POST", url: `/v1/admin/partners/${id}/restore`, headers: admin("admin-7"), payload: { reason: "checked" } });
    expect(restored.statusCode, restored.body).toBe(200);
    expect(restored.json().status).toBe("active");
    expectProblem(await call(h.api, { method: "POST", url: `/v1/admin/partners/${id}/restore`, headers: admin(), payload: { reason: "again" } }), 409, "conflict");
    // The token died with the suspension; a new login works.
    expectProblem(await partnerCall(h, { method: "GET", url: "/partners/v2/animals", token: liveToken }), 401, "unauthenticated");
    expect((await partnerCall(h, { method: "GET", url: "/partners/v2/animals", token: await login(h, p) })).statusCode).toBe(200);

    const audit = await h.db.pool.query(`select action, actor_id from audit_event where object_type = 'partner' and object_id = $1 order by occurred_at, id`, [id]);
    expect(audit.rows).toEqual([
      { action: "admin.partner.created", actor_id: "admin-7" },
      { action: "admin.partner.password_rotated", actor_id: "admin-7" },
      { action: "admin.partner.suspended", actor_id: "admin-7" },
      { action: "admin.partner.restored", actor_id: "admin-7" },
    ]);
    expectProblem(await call(h.api, { method: "POST", url: `/v1/admin/partners/${crypto.randomUUID()}/rotate-password`, headers: admin() }), 404, "not-found");
  });

  it("makes the partner's public email its address for match email", async () => {
    const p = await createPartner(h);
    const { rows } = await h.db.pool.query(`select email, email_kinds from notification_preference where actor_id = $1`, [`partner:${p.id}`]);
    expect(rows[0]).toEqual({ email: expect.stringMatching(/@riverside-shelter\.example$/), email_kinds: ["match"] });
  });
});

describe("limits: per partner once authenticated, per address before", () => {
  it("holds a partner's calls past 600 for their tokens, up to 10 s of them, and answers the rest 429 with Retry-After; other partners go on", async () => {
    const busy = await createPartner(h);
    const busyToken = await login(h, busy);
    // All from one address, far past the per-address limiter's burst of 40: only the partner's bucket counts.
    const started = performance.now();
    const calls = await Promise.all(
      Array.from({ length: 800 }, () => partnerCall(h, { method: "GET", url: "/partners/v2/animals?limit=1", token: busyToken, ip: "203.0.113.77" })),
    );
    const refilled = Math.ceil(((performance.now() - started) / 1000) * 10);
    const passed = calls.filter((r) => r.statusCode === 200).length;
    const refused = calls.filter((r) => r.statusCode === 429);
    const statuses: Record<number, number> = {};
    for (const r of calls) statuses[r.statusCode] = (statuses[r.statusCode] ?? 0) + 1;
    expect(passed + refused.length, JSON.stringify(statuses)).toBe(800);
    // 600 at once, and the 100 next tokens (10 s at 10 a second) booked and waited for.
    expect(passed).toBeGreaterThanOrEqual(700);
    expect(passed).toBeLessThanOrEqual(700 + refilled + 1);
    expect(refused.length).toBeGreaterThan(0);
    expectProblem(refused[0]!, 429, "rate-limited");
    expect(refused[0]!.json().message).toBe(refused[0]!.json().detail);
    expect(Number(refused[0]!.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect((await partnerCall(h, { method: "GET", url: "/partners/v2/animals?limit=1", token, ip: "203.0.113.77" })).statusCode).toBe(200);
  });

  it("counts calls that are not authenticated against their client address: 40 at once, then 429", async () => {
    const calls = await Promise.all(
      Array.from({ length: 60 }, () => partnerCall(h, { method: "GET", url: "/partners/v2/animals", token, key: "not-a-key", ip: "203.0.113.78" })),
    );
    const statuses = calls.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(40);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    const refused = calls.find((r) => r.statusCode === 429)!;
    expectProblem(refused, 429, "rate-limited");
    expect(refused.json().message).toBe(refused.json().detail);
  });
});
