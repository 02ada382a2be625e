import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, expectProblem, freshActor } from "../safety/helpers.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ API_PUBLIC_BASE_URL: "https://pets.example.org" });
});

afterAll(async () => {
  await h?.close();
});

const animalBody = { name: "Biscuit", species: "dog", breed: "Corgi", colors: ["tan", "white"] };
const profileBody = { medicalNotes: "Diabetic: insulin twice a day", instructions: "Call the number on the collar", showName: true };

async function registerAnimal(owner: string): Promise<string> {
  const res = await call(h.api, { method: "POST", url: "/v1/animals", headers: as(owner), payload: animalBody });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

const putProfile = (animalId: string, actor: string | null, payload: object = profileBody) =>
  call(h.api, {
    method: "PUT",
    url: `/v1/animals/${animalId}/emergency-profile`,
    headers: actor ? as(actor) : {},
    payload,
  });

const publicProfile = (token: string) => call(h.api, { method: "GET", url: `/emergency/${token}` });

describe("POST /v1/animals registers an animal owned by the caller", () => {
  it("returns 201 {id} and stores the caller as owner", async () => {
    const owner = freshActor("owner");
    const res = await call(h.api, { method: "POST", url: "/v1/animals", headers: as(owner), payload: animalBody });
    expect(res.statusCode).toBe(201);
    expect(Object.keys(res.json())).toEqual(["id"]);
    const { rows } = await h.db.pool.query(`select owner_id, name, species from animal where id = $1`, [res.json().id]);
    expect(rows).toEqual([{ owner_id: owner, name: "Biscuit", species: "dog" }]);
  });

  it.each([
    ["a missing name", { species: "dog" }],
    ["an unknown species", { name: "X", species: "unicorn" }],
    ["too many colours", { name: "X", species: "cat", colors: Array.from({ length: 11 }, () => "red") }],
    ["a name over 100 characters", { name: "x".repeat(101), species: "cat" }],
  ])("refuses %s with 400 validation-failed and writes nothing", async (_name, payload) => {
    const owner = freshActor("invalid");
    expectProblem(await call(h.api, { method: "POST", url: "/v1/animals", headers: as(owner), payload }), 400, "validation-failed");
    expect(await count(h.db, `select 1 from animal where owner_id = $1`, [owner])).toBe(0);
  });

  it("refuses a caller without a credential with 401", async () => {
    expectProblem(await call(h.api, { method: "POST", url: "/v1/animals", payload: animalBody }), 401, "unauthenticated");
  });
});

describe("PUT emergency-profile issues a fresh random token each time and stores only its hash", () => {
  it("returns {token, url} with a 256-bit base64url token, and stores sha256(token), never the token", async () => {
    const owner = freshActor("owner");
    const animalId = await registerAnimal(owner);
    const res = await putProfile(animalId, owner);
    expect(res.statusCode).toBe(200);
    const { token, url } = res.json();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token, "base64url")).toHaveLength(32);
    expect(url).toBe(`https://pets.example.org/emergency/${token}`);
    const { rows } = await h.db.pool.query(`select * from emergency_profile where animal_id = $1`, [animalId]);
    expect(rows).toHaveLength(1);
    expect(rows[0].token_hash).toEqual(createHash("sha256").update(token).digest());
    expect(JSON.stringify(rows[0])).not.toContain(token);
  });

  it("invalidates the previous token on every PUT: the old one is 404, the new one works", async () => {
    const owner = freshActor("owner");
    const animalId = await registerAnimal(owner);
    const first = (await putProfile(animalId, owner)).json().token;
    expect((await publicProfile(first)).statusCode).toBe(200);
    const second = (await putProfile(animalId, owner, { ...profileBody, medicalNotes: "updated" })).json().token;
    expect(second).not.toBe(first);
    expectProblem(await publicProfile(first), 404, "not-found");
    const res = await publicProfile(second);
    expect(res.statusCode).toBe(200);
    expect(res.json().medicalNotes).toBe("updated");
  });

  it("refuses another actor with 403, no credential with 401, an unknown animal with 404, and issues nothing", async () => {
    const owner = freshActor("owner");
    const animalId = await registerAnimal(owner);
    expectProblem(await putProfile(animalId, "intruder"), 403, "forbidden");
    expectProblem(await putProfile(animalId, null), 401, "unauthenticated");
    expectProblem(await putProfile(crypto.randomUUID(), owner), 404, "not-found");
    expect(await count(h.db, `select 1 from emergency_profile where animal_id = $1`, [animalId])).toBe(0);
  });

  it.each([
    ["a missing showName", { medicalNotes: "x" }],
    ["medicalNotes over 2000 characters", { showName: true, medicalNotes: "x".repeat(2001) }],
    ["showName not a boolean", { showName: "yes" }],
  ])("refuses %s with 400 validation-failed and keeps the current token", async (_name, payload) => {
    const owner = freshActor("owner");
    const animalId = await registerAnimal(owner);
    const token = (await putProfile(animalId, owner)).json().token;
    expectProblem(await putProfile(animalId, owner, payload), 400, "validation-failed");
    expect((await publicProfile(token)).statusCode).toBe(200);
  });
});

describe("GET /emergency/{token} shows the public profile without auth; unknown or revoked tokens are 404", () => {
  it("shows name (when showName), species, breed, colours, medical notes and instructions, uncached", async () => {
    const owner = freshActor("owner");
    const animalId = await registerAnimal(owner);
    const token = (await putProfile(animalId, owner)).json().token;
    const res = await publicProfile(token);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      name: "Biscuit",
      species: "dog",
      breed: "Corgi",
      colors: ["tan", "white"],
      medicalNotes: profileBody.medicalNotes,
      instructions: profileBody.instructions,
      photos: [],
    });
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(res.body).not.toContain(owner);
  });

  it("leaves the name out when showName is false", async () => {
    const owner = freshActor("owner");
    const animalId = await registerAnimal(owner);
    const token = (await putProfile(animalId, owner, { showName: false })).json().token;
    const body = (await publicProfile(token)).json();
    expect(body.name).toBeUndefined();
    expect(body.species).toBe("dog");
  });

  it("answers 404 once an admin has revoked the profile, and a new PUT issues a working token once an admin lifts it", async () => {
    const owner = freshActor("owner");
    const animalId = await registerAnimal(owner);
    const token = (await putProfile(animalId, owner)).json().token;
    await h.db.pool.query(
      `update emergency_profile set revoked_at = now(), revoked_by = 'admin-1', revoke_reason = 'leaked' where animal_id = $1`,
      [animalId],
    );
    expectProblem(await publicProfile(token), 404, "not-found");
    expectProblem(await putProfile(animalId, owner), 409, "conflict");
    const lift = await call(h.api, {
      method: "POST",
      url: `/v1/admin/animals/${animalId}/emergency-profile/lift-revocation`,
      headers: as("admin-1", ["platform_admin"]),
      payload: { reason: "the leak was a test page" },
    });
    expect(lift.statusCode).toBe(204);
    const fresh = (await putProfile(animalId, owner)).json().token;
    expect((await publicProfile(fresh)).statusCode).toBe(200);
    expectProblem(await publicProfile(token), 404, "not-found");
  });

  it.each([
    ["an unknown well-formed token", "A".repeat(43)],
    ["a short token", "abc"],
    ["a token with characters outside base64url", "%27%20or%201%3D1--"],
    ["a 200-character token", "x".repeat(200)],
  ])("answers %s with 404 not-found, never 400 or 500", async (_name, token) => {
    expectProblem(await publicProfile(token), 404, "not-found");
  });

  it("refuses a token longer than the router's maxParamLength (200) before the route runs, never with 500", async () => {
    const res = await publicProfile("y".repeat(5000));
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
  });
});

describe("GET /v1/animals/{id} shows the owner the animal and its profile state, never the token", () => {
  it("returns the animal with issuedAt/revokedAt to the owner and 403 to anyone else", async () => {
    const owner = freshActor("owner");
    const animalId = await registerAnimal(owner);
    const before = await call(h.api, { method: "GET", url: `/v1/animals/${animalId}`, headers: as(owner) });
    expect(before.json()).toMatchObject({ id: animalId, name: "Biscuit", emergencyProfile: null });
    const token = (await putProfile(animalId, owner)).json().token;
    const after = await call(h.api, { method: "GET", url: `/v1/animals/${animalId}`, headers: as(owner) });
    expect(after.statusCode).toBe(200);
    expect(after.json().emergencyProfile).toMatchObject({ showName: true, revokedAt: null, issuedAt: expect.any(String) });
    expect(after.body).not.toContain(token);
    expectProblem(await call(h.api, { method: "GET", url: `/v1/animals/${animalId}`, headers: as("nosy") }), 403, "forbidden");
    expectProblem(await call(h.api, { method: "GET", url: `/v1/animals/${animalId}` }), 401, "unauthenticated");
    expectProblem(await call(h.api, { method: "GET", url: `/v1/animals/${crypto.randomUUID()}`, headers: as(owner) }), 404, "not-found");
    expectProblem(await call(h.api, { method: "GET", url: `/v1/animals/not-a-uuid`, headers: as(owner) }), 400, "validation-failed");
  });
});
