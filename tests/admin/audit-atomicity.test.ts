import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { admin, as } from "../helpers/app.js";
import { withFailingAuditInsert } from "../helpers/db.js";
import { startHarness, type Harness } from "../helpers/harness.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await t?.close();
});

/**
 * Every admin mutation writes its audit event in the same transaction as the
 * change. With the audit insert made to fail, each one must answer a bare 500
 * and leave its domain row exactly as it was.
 */

const post = (url: string, payload?: object) =>
  t.api.app.inject({ method: "POST", url, headers: admin(), ...(payload ? { payload } : {}) });

const row = async (sql: string, params: unknown[]) => (await t.db.pool.query(sql, params)).rows[0];

async function moderationItem(claimedBy: string | null = null): Promise<string> {
  const { rows } = await t.db.pool.query(
    `insert into moderation_report (reporter_id, target_type, target_id, reason, status, claimed_by, claimed_at)
     values ('reporter-1', 'sighting', gen_random_uuid(), 'scam', $1, $2, case when $2::text is not null then now() end)
     returning id`,
    [claimedBy ? "claimed" : "open", claimedBy],
  );
  return rows[0].id;
}

/** A registered animal with a live emergency token, made through the API. */
async function animalWithToken(): Promise<{ animalId: string; token: string }> {
  const owner = as("owner-atomic");
  const created = await t.api.app.inject({ method: "POST", url: "/v1/animals", headers: owner, payload: { name: "Rex", species: "dog" } });
  const animalId = created.json().id;
  const put = await t.api.app.inject({
    method: "PUT",
    url: `/v1/animals/${animalId}/emergency-profile`,
    headers: owner,
    payload: { showName: true },
  });
  return { animalId, token: put.json().token };
}

interface Mutation<K> {
  /** Set-up, before the audit insert is made to fail; returns what the call and the check need. */
  arrange(): Promise<K>;
  act(key: K): ReturnType<typeof post>;
  /** The domain state, read before and after the failed call: it must not change. */
  state(key: K): Promise<unknown>;
}

/** Keeps each case's key type checked while the table holds them all. */
const mutation = <K>(m: Mutation<K>) => m as Mutation<unknown>;

const moderationState = async (id: string) => ({
  report: await row(`select status, claimed_by, claimed_at, resolution, resolved_at from moderation_report where id = $1`, [id]),
  contentStates: (await t.db.pool.query(`select 1 from moderation_content_state where moderation_report_id = $1`, [id])).rowCount,
});

const mutations: Record<string, Mutation<unknown>> = {
  "account suspend": mutation({
    arrange: async () => "user-atomic-suspend",
    act: (userId) => post(`/v1/admin/accounts/${userId}/suspend`, { reasonCode: "spam", reasonDetail: "fake reports" }),
    state: (userId) => row(`select * from account where user_id = $1`, [userId]),
  }),
  "account restore": mutation({
    arrange: async () => {
      const userId = "user-atomic-restore";
      expect((await post(`/v1/admin/accounts/${userId}/suspend`, { reasonCode: "spam", reasonDetail: "x" })).statusCode).toBe(200);
      return userId;
    },
    act: (userId) => post(`/v1/admin/accounts/${userId}/restore`, { reason: "appeal upheld" }),
    state: (userId) => row(`select * from account where user_id = $1`, [userId]),
  }),
  "moderation claim": mutation({
    arrange: () => moderationItem(),
    act: (id) => post(`/v1/admin/moderation/${id}/claim`),
    state: moderationState,
  }),
  "moderation action quarantine": mutation({
    arrange: () => moderationItem("admin-1"),
    act: (id) => post(`/v1/admin/moderation/${id}/action`, { action: "quarantine" }),
    state: moderationState,
  }),
  "moderation action remove": mutation({
    arrange: () => moderationItem("admin-1"),
    act: (id) => post(`/v1/admin/moderation/${id}/action`, { action: "remove" }),
    state: moderationState,
  }),
  "emergency profile revoke": mutation({
    arrange: animalWithToken,
    act: ({ animalId }) => post(`/v1/admin/animals/${animalId}/emergency-profile/revoke`, { reason: "scam page" }),
    state: async ({ animalId, token }) => {
      const profile = await row(`select token_hash, revoked_at, revoked_by from emergency_profile where animal_id = $1`, [animalId]);
      const publicLink = (await t.api.app.inject({ url: `/emergency/${token}` })).statusCode;
      return { profile, publicLink };
    },
  }),
  "outbox requeue": mutation({
    arrange: async (): Promise<string> => {
      const { rows } = await t.db.pool.query(
        `insert into outbox_event (type, payload, occurred_at) values ($1, '{}', now() - interval '1 hour') returning id`,
        [EventType.ContactMessageReceived],
      );
      return rows[0].id;
    },
    act: (id) => post(`/v1/admin/outbox/${id}/requeue`),
    state: (id) => row(`select requeue_count, published_at from outbox_event where id = $1`, [id]),
  }),
};

describe("an admin mutation whose audit event cannot be written changes nothing and answers a bare 500", () => {
  it.each(Object.keys(mutations))("%s", async (name) => {
    const mutation = mutations[name]!;
    const key = await mutation.arrange();
    const before = await mutation.state(key);
    const audits = (await t.db.pool.query(`select count(*)::int as n from audit_event`)).rows[0].n;

    const res = await withFailingAuditInsert(t.db.pool, () => mutation.act(key));

    expect(res.statusCode, res.body).toBe(500);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/internal$/), status: 500 });
    expect(res.body).not.toMatch(/audit write failed|audit_event|insert into|trigger|\bat \S+:\d+/i);
    expect(await mutation.state(key)).toEqual(before);
    expect((await t.db.pool.query(`select count(*)::int as n from audit_event`)).rows[0].n).toBe(audits);
  });
});
