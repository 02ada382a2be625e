import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { revokeEmergencyProfile } from "../../api/admin/emergency/store.js";
import { withTransaction } from "../../lib/db.js";
import { admin, as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { eventually } from "../helpers/stream.js";

/**
 * An admin's revocation of an emergency profile holds until an admin lifts
 * it: the owner cannot undo it by issuing a fresh token. Lifting makes
 * nothing public; it lets the owner's next PUT issue a token again.
 */
let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await t?.close();
});

let owners = 0;

async function ownedProfile(): Promise<{ owner: Record<string, string>; ownerId: string; animalId: string; token: string }> {
  const ownerId = `sticky-owner-${++owners}`;
  const owner = as(ownerId);
  const created = await t.api.app.inject({ method: "POST", url: "/v1/animals", headers: owner, payload: { name: "Nala", species: "cat" } });
  expect(created.statusCode).toBe(201);
  const animalId = created.json().id as string;
  const put = await putProfile(owner, animalId, { showName: true, medicalNotes: "allergic to penicillin" });
  expect(put.statusCode).toBe(200);
  return { owner, ownerId, animalId, token: put.json().token };
}

const putProfile = (owner: Record<string, string>, animalId: string, body: object) =>
  t.api.app.inject({ method: "PUT", url: `/v1/animals/${animalId}/emergency-profile`, headers: owner, payload: body });

const adminPost = (animalId: string, action: "revoke" | "lift-revocation", reason = "token posted on a scam page", by = admin()) =>
  t.api.app.inject({ method: "POST", url: `/v1/admin/animals/${animalId}/emergency-profile/${action}`, headers: by, payload: { reason } });

const publicStatus = async (token: string) => (await t.api.app.inject({ url: `/emergency/${token}` })).statusCode;

async function profileRow(animalId: string) {
  const { rows } = await t.db.pool.query(`select * from emergency_profile where animal_id = $1`, [animalId]);
  return rows[0];
}

async function audits(animalId: string) {
  const { rows } = await t.db.pool.query(`select actor_id, action, metadata from audit_event where object_id = $1 order by occurred_at, id`, [animalId]);
  return rows;
}

function expectConflict(res: { statusCode: number; headers: Record<string, unknown>; json(): { type: string; detail: string } }): void {
  expect(res.statusCode).toBe(409);
  expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
  expect(res.json().type).toMatch(/\/conflict$/);
}

describe("an admin's emergency-profile revocation sticks until an admin lifts it", () => {
  it("refuses the owner's PUT with 409 conflict, writing nothing, and shows the owner the revocation", async () => {
    const { owner, animalId, token } = await ownedProfile();
    expect((await adminPost(animalId, "revoke")).statusCode).toBe(204);
    const before = await profileRow(animalId);

    const res = await putProfile(owner, animalId, { showName: false, medicalNotes: "changed" });
    expectConflict(res);
    expect(res.json().detail).toMatch(/until an administrator lifts the revocation/);
    expect(await profileRow(animalId)).toEqual(before);
    expect(before).toMatchObject({ token_hash: null, revoked_by: "admin-1", medical_notes: "allergic to penicillin", revocation_lifted_at: null });
    expect(await publicStatus(token)).toBe(404);

    const shown = await t.api.app.inject({ url: `/v1/animals/${animalId}`, headers: owner });
    expect(shown.json().emergencyProfile.revokedAt).toEqual(expect.any(String));
  });

  it("lifting makes nothing public; the owner's next PUT issues a live token and clears the revocation", async () => {
    const { owner, ownerId, animalId, token } = await ownedProfile();
    await adminPost(animalId, "revoke");
    const revoked = await profileRow(animalId);

    const lift = await adminPost(animalId, "lift-revocation", "the owner proved the page was not theirs", admin("admin-2"));
    expect(lift.statusCode).toBe(204);
    expect(await profileRow(animalId)).toMatchObject({ token_hash: null, revoked_at: revoked.revoked_at, revocation_lifted_at: expect.any(Date) });
    expect(await publicStatus(token)).toBe(404);
    expect((await audits(animalId)).at(-1)).toEqual({
      actor_id: "admin-2",
      action: "admin.emergency_profile.revocation_lifted",
      metadata: {
        reason: "the owner proved the page was not theirs",
        ownerId,
        revocation: { revokedAt: revoked.revoked_at.toISOString(), revokedBy: "admin-1", reason: "token posted on a scam page" },
        alreadyLifted: false,
      },
    });

    const reissued = await putProfile(owner, animalId, { showName: true });
    expect(reissued.statusCode).toBe(200);
    expect(await publicStatus(reissued.json().token)).toBe(200);
    expect(await publicStatus(token)).toBe(404);
    expect(await profileRow(animalId)).toMatchObject({ revoked_at: null, revoked_by: null, revoke_reason: null, revocation_lifted_at: null });
  });

  it("a revocation after a lift sticks again, and a second lift is a 204 no-op that is still audited", async () => {
    const { owner, animalId } = await ownedProfile();
    await adminPost(animalId, "revoke");
    expect((await adminPost(animalId, "lift-revocation")).statusCode).toBe(204);
    const lifted = await profileRow(animalId);
    expect((await adminPost(animalId, "lift-revocation", "again")).statusCode).toBe(204);
    expect(await profileRow(animalId)).toEqual(lifted);
    expect((await audits(animalId)).map((a) => a.metadata.alreadyLifted)).toEqual([undefined, false, true]);

    expect((await adminPost(animalId, "revoke", "posted again")).statusCode).toBe(204);
    expect((await audits(animalId)).at(-1)!.metadata.alreadyRevoked).toBe(false);
    expect(await profileRow(animalId)).toMatchObject({ revoke_reason: "posted again", revocation_lifted_at: null });
    expectConflict(await putProfile(owner, animalId, { showName: true }));
  });

  it("answers 409 to lifting a profile that is not revoked and 404 without a profile, writing nothing", async () => {
    const { animalId } = await ownedProfile();
    const before = await profileRow(animalId);
    expectConflict(await adminPost(animalId, "lift-revocation"));
    expect(await profileRow(animalId)).toEqual(before);

    const bare = await t.api.app.inject({ method: "POST", url: "/v1/animals", headers: as("sticky-bare"), payload: { name: "Rex", species: "dog" } });
    for (const id of [bare.json().id as string, crypto.randomUUID()]) {
      const res = await adminPost(id, "lift-revocation");
      expect(res.statusCode).toBe(404);
      expect(await audits(id)).toEqual([]);
    }
    expect(await audits(animalId)).toEqual([]);
  });

  it("is an admin's to lift: the owner and other actors get 403", async () => {
    const { owner, ownerId, animalId } = await ownedProfile();
    await adminPost(animalId, "revoke");
    for (const by of [owner, as("sticky-stranger"), as(ownerId, ["moderator"])]) {
      expect((await adminPost(animalId, "lift-revocation", "let me", by)).statusCode).toBe(403);
    }
    expect((await profileRow(animalId)).revocation_lifted_at).toBeNull();
  });

  it("a revocation that commits while the owner's PUT waits on the row is not overwritten", async () => {
    const { owner, animalId, token } = await ownedProfile();
    let put: ReturnType<typeof putProfile> | undefined;
    await withTransaction(t.db.pool, async (client) => {
      await revokeEmergencyProfile(client, animalId, "admin-race", "revoked mid-request");
      put = putProfile(owner, animalId, { showName: true });
      // The PUT's upsert waits for this transaction's row lock.
      await eventually(async () => {
        const { rows } = await t.db.pool.query(
          `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%emergency_profile%'`,
        );
        return rows.length > 0 ? true : undefined;
      });
    });
    expectConflict(await put!);
    expect(await profileRow(animalId)).toMatchObject({ token_hash: null, revoked_by: "admin-race" });
    expect(await publicStatus(token)).toBe(404);
  });
});
