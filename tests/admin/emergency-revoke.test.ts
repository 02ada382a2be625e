import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await t?.close();
});

async function animalWithProfile(ownerId: string, withProfile = true): Promise<string> {
  const { rows } = await t.db.pool.query(
    `insert into animal (owner_id, name, species) values ($1, 'Rex', 'dog') returning id`,
    [ownerId],
  );
  const animalId = rows[0].id;
  if (withProfile) {
    const tokenHash = createHash("sha256").update(`token-${animalId}`).digest();
    await t.db.pool.query(
      `insert into emergency_profile (animal_id, token_hash, medical_notes, instructions, show_name)
       values ($1, $2, 'diabetic', 'call the vet', true)`,
      [animalId, tokenHash],
    );
  }
  return animalId;
}

const revoke = (animalId: string, body: object = { reason: "token posted on a scam page" }, by = admin()) =>
  t.api.app.inject({ method: "POST", url: `/v1/admin/animals/${animalId}/emergency-profile/revoke`, headers: by, payload: body });

async function profile(animalId: string) {
  const { rows } = await t.db.pool.query(`select * from emergency_profile where animal_id = $1`, [animalId]);
  return rows[0];
}

async function audits(animalId: string) {
  const { rows } = await t.db.pool.query(`select actor_id, action, metadata from audit_event where object_id = $1`, [animalId]);
  return rows;
}

describe("emergency revoke invalidates the public token only, and is audited", () => {
  it("drops the token hash, records who revoked it and why, and answers 204", async () => {
    const animalId = await animalWithProfile("owner-1");
    const res = await revoke(animalId);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe("");
    expect(await profile(animalId)).toMatchObject({
      token_hash: null,
      revoked_at: expect.any(Date),
      revoked_by: "admin-1",
      revoke_reason: "token posted on a scam page",
      medical_notes: "diabetic",
      instructions: "call the vet",
    });
    expect(await audits(animalId)).toEqual([
      {
        actor_id: "admin-1",
        action: "admin.emergency_profile.revoked",
        metadata: { reason: "token posted on a scam page", ownerId: "owner-1", alreadyRevoked: false },
      },
    ]);
  });

  it("leaves the owner's account and animal untouched", async () => {
    const animalId = await animalWithProfile("owner-2");
    const animalBefore = (await t.db.pool.query(`select * from animal where id = $1`, [animalId])).rows[0];
    await revoke(animalId);
    expect((await t.db.pool.query(`select * from animal where id = $1`, [animalId])).rows[0]).toEqual(animalBefore);
    expect((await t.db.pool.query(`select * from account where user_id = 'owner-2'`)).rows).toEqual([]);
    expect((await t.api.app.inject({ url: "/healthz", headers: as("owner-2") })).statusCode).toBe(200);
  });

  it("makes the public link answer 404 while the owner keeps using the API, and can issue a fresh token once an admin lifts it", async () => {
    const owner = as("owner-e2e");
    const created = await t.api.app.inject({
      method: "POST",
      url: "/v1/animals",
      headers: owner,
      payload: { name: "Nala", species: "cat" },
    });
    expect(created.statusCode).toBe(201);
    const animalId = created.json().id;
    const put = (body: object) =>
      t.api.app.inject({ method: "PUT", url: `/v1/animals/${animalId}/emergency-profile`, headers: owner, payload: body });
    const { token } = (await put({ showName: true, medicalNotes: "allergic to penicillin" })).json();
    expect((await t.api.app.inject({ url: `/emergency/${token}` })).statusCode).toBe(200);

    expect((await revoke(animalId)).statusCode).toBe(204);
    expect((await t.api.app.inject({ url: `/emergency/${token}` })).statusCode).toBe(404);
    expect((await put({ showName: true })).statusCode).toBe(409);

    const lift = await t.api.app.inject({
      method: "POST",
      url: `/v1/admin/animals/${animalId}/emergency-profile/lift-revocation`,
      headers: admin(),
      payload: { reason: "owner proved the scam page was not theirs" },
    });
    expect(lift.statusCode).toBe(204);
    const reissued = await put({ showName: true });
    expect(reissued.statusCode).toBe(200);
    expect((await t.api.app.inject({ url: `/emergency/${reissued.json().token}` })).statusCode).toBe(200);
    expect((await t.api.app.inject({ url: `/emergency/${token}` })).statusCode).toBe(404);
  });

  it("is a 204 no-op on an already revoked profile that keeps the first revocation and is still audited", async () => {
    const animalId = await animalWithProfile("owner-3");
    await revoke(animalId);
    const first = await profile(animalId);
    const res = await revoke(animalId, { reason: "again" }, admin("admin-2"));
    expect(res.statusCode).toBe(204);
    expect(await profile(animalId)).toEqual(first);
    expect((await audits(animalId)).map((a) => [a.actor_id, a.metadata.alreadyRevoked])).toEqual([
      ["admin-1", false],
      ["admin-2", true],
    ]);
  });

  it("answers 404 for an animal without a profile and for an unknown animal, writing nothing", async () => {
    const bare = await animalWithProfile("owner-4", false);
    for (const animalId of [bare, crypto.randomUUID()]) {
      const res = await revoke(animalId);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/not-found$/) });
      expect(await audits(animalId)).toEqual([]);
    }
  });

  it.each([
    ["no reason", {}],
    ["a blank reason", { reason: "" }],
  ])("refuses %s with 400 and keeps the token", async (_name, body) => {
    const animalId = await animalWithProfile("owner-5");
    const res = await revoke(animalId, body);
    expect(res.statusCode).toBe(400);
    expect((await profile(animalId)).token_hash).not.toBeNull();
    expect(await audits(animalId)).toEqual([]);
  });
});
