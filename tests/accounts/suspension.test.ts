import type { InjectOptions } from "fastify";
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

// Each request from an address of its own: on a fast machine this file's requests outrun one address's
// bucket of the per-IP limiter (40, then 20 a second), which would answer 429 before any route runs.
let requests = 0;
const inject = (options: InjectOptions) => t.api.app.inject({ remoteAddress: `10.77.${(requests >> 8) & 255}.${requests++ & 255}`, ...options });

const inOneHour = () => new Date(Date.now() + 3_600_000).toISOString();
const suspension = { reasonCode: "scam", reasonDetail: "asked finders for a reward up front" };

function suspend(userId: string, body: object = suspension, by = admin()) {
  return inject({ method: "POST", url: `/v1/admin/accounts/${userId}/suspend`, headers: by, payload: body });
}

function restore(userId: string, body: object = { reason: "appeal upheld" }, by = admin()) {
  return inject({ method: "POST", url: `/v1/admin/accounts/${userId}/restore`, headers: by, payload: body });
}

async function auditFor(objectId: string) {
  const { rows } = await t.db.pool.query(
    `select actor_id, action, object_type, metadata from audit_event where object_id = $1 order by occurred_at`,
    [objectId],
  );
  return rows;
}

async function accountRow(userId: string) {
  const { rows } = await t.db.pool.query(`select * from account where user_id = $1`, [userId]);
  return rows[0];
}

const lostReport = {
  animal: { species: "cat", name: "Mia" },
  lastSeenAt: "2026-11-20T08:00:00Z",
  location: { lat: 48.85, lon: 2.35 },
};

describe("suspend records the suspension and audits it in the same transaction", () => {
  it("returns the suspension state and writes admin.account_suspended with the reason", async () => {
    const expiresAt = inOneHour();
    const res = await suspend("user-s1", { ...suspension, expiresAt });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      userId: "user-s1",
      status: "suspended",
      reasonCode: "scam",
      reasonDetail: suspension.reasonDetail,
      expiresAt: new Date(expiresAt).toISOString(),
      suspendedBy: "admin-1",
      suspendedAt: expect.any(String),
    });
    const row = await accountRow("user-s1");
    expect(row).toMatchObject({ suspended_by: "admin-1", suspension_reason_code: "scam", restored_at: null });
    expect(await auditFor("user-s1")).toEqual([
      {
        actor_id: "admin-1",
        action: "admin.account_suspended",
        object_type: "account",
        metadata: { ...suspension, expiresAt: new Date(expiresAt).toISOString(), previousStatus: "active" },
      },
    ]);
    const read = await inject({ url: "/v1/admin/accounts/user-s1", headers: admin() });
    expect(read.json()).toEqual(res.json());
  });

  it("replaces an existing suspension and audits the change again", async () => {
    await suspend("user-s2");
    const res = await suspend("user-s2", { reasonCode: "abuse", reasonDetail: "threats", expiresAt: inOneHour() }, admin("admin-2"));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: "suspended", reasonCode: "abuse", suspendedBy: "admin-2" });
    const audit = await auditFor("user-s2");
    expect(audit.map((a) => a.metadata.previousStatus)).toEqual(["active", "suspended"]);
  });

  it.each([
    ["reasonCode missing", { reasonDetail: "x" }],
    ["reasonDetail missing", { reasonCode: "spam" }],
    ["reasonDetail blank", { reasonCode: "spam", reasonDetail: "   " }],
    ["reasonCode not a code", { reasonCode: "Spam!", reasonDetail: "x" }],
    ["expiresAt in the past", { ...suspension, expiresAt: "2020-01-01T00:00:00Z" }],
    ["expiresAt not a timestamp", { ...suspension, expiresAt: "tomorrow" }],
  ])("refuses %s with 400 validation-failed and writes nothing", async (_name, body) => {
    const res = await suspend("user-invalid", body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/validation-failed$/), errors: expect.any(Array) });
    expect(await accountRow("user-invalid")).toBeUndefined();
    expect(await auditFor("user-invalid")).toEqual([]);
  });

  it("refuses a userId that is not an actor id with 400", async () => {
    const res = await suspend("not%20an%20id");
    expect(res.statusCode).toBe(400);
  });
});

describe("an admin cannot suspend their own account", () => {
  it("answers 409 self-suspension with the exact detail and changes nothing", async () => {
    const res = await suspend("admin-self", suspension, admin("admin-self"));
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({
      type: expect.stringMatching(/\/self-suspension$/),
      status: 409,
      detail: "an admin cannot suspend their own account",
    });
    expect(await accountRow("admin-self")).toBeUndefined();
    expect(await auditFor("admin-self")).toEqual([]);
  });

  it("lets a second platform_admin suspend that admin", async () => {
    expect((await suspend("admin-self", suspension, admin("admin-other"))).statusCode).toBe(200);
  });
});

describe("a suspended actor is rejected on every endpoint from its next request on", () => {
  it("refuses actor, public and admin routes with 403 account-suspended once suspended, with no delay", async () => {
    const victim = as("user-live", ["platform_admin"]);
    expect((await inject({ method: "POST", url: "/v1/safety/lost-reports", headers: victim, payload: lostReport })).statusCode).toBe(201);
    expect((await inject({ url: "/v1/admin/audit-events", headers: victim })).statusCode).toBe(200);

    expect((await suspend("user-live")).statusCode).toBe(200);

    const attempts = [
      { method: "POST" as const, url: "/v1/safety/lost-reports", payload: lostReport },
      // The suspension check runs before validation: a bad body still gets 403, not 400.
      { method: "POST" as const, url: "/v1/safety/lost-reports", payload: { nonsense: true } },
      { method: "GET" as const, url: "/v1/admin/audit-events" },
      { method: "GET" as const, url: "/healthz" },
      { method: "GET" as const, url: "/openapi.json" },
      { method: "GET" as const, url: "/no/such/route" },
    ];
    for (const attempt of attempts) {
      const res = await inject({ ...attempt, headers: victim });
      expect(res.statusCode, attempt.url).toBe(403);
      expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/account-suspended$/), status: 403 });
    }
    const { rows } = await t.db.pool.query(`select count(*)::int as n from safety_lost_report where reporter_id = 'user-live'`);
    expect(rows[0].n).toBe(1);
  });

  it("still serves public routes to a caller who presents no credential", async () => {
    expect((await inject({ url: "/healthz" })).statusCode).toBe(200);
  });

  it("lets the actor back in on the request after a restore", async () => {
    await suspend("user-back");
    expect((await inject({ url: "/healthz", headers: as("user-back") })).statusCode).toBe(403);
    expect((await restore("user-back")).statusCode).toBe(200);
    expect((await inject({ url: "/healthz", headers: as("user-back") })).statusCode).toBe(200);
  });
});

describe("the report creates refuse a suspended actor in their own statement, in the same order", () => {
  const foundReport = { animal: { species: "dog" }, foundAt: "2026-11-20T08:00:00Z", location: { lat: 48.85, lon: 2.35 } };
  // Each from an address of its own: these cases alone would empty one address's per-IP bucket (burst 40) for the file's later cases.
  let address = 0;
  const create = (actor: string, url: string, payload: unknown, headers: Record<string, string> = {}) =>
    inject({
      method: "POST",
      url,
      headers: { ...as(actor), ...headers },
      payload: payload as string,
      remoteAddress: `198.18.0.${++address}`,
    });
  const rowsOf = async (actor: string) => {
    const { rows } = await t.db.pool.query(
      `select (select count(*)::int from safety_lost_report where reporter_id = $1) as lost,
              (select count(*)::int from safety_found_report where reporter_id = $1) as found,
              (select count(*)::int from outbox_event where payload->>'reporterId' = $1) as events,
              (select tokens from rate_limit_bucket where key = 'report-create:' || $1) as tokens`,
      [actor],
    );
    return rows[0];
  };

  it("answers 403 to a lost and a found report, writing no report, no event and taking no token", async () => {
    expect((await create("creator-1", "/v1/safety/lost-reports", lostReport)).statusCode).toBe(201);
    const before = await rowsOf("creator-1");
    expect(before).toMatchObject({ lost: 1, found: 0, events: 1 });
    await suspend("creator-1");
    for (const [url, payload] of [["/v1/safety/lost-reports", lostReport], ["/v1/safety/found-reports", foundReport]] as const) {
      const res = await create("creator-1", url, payload);
      expect(res.statusCode, url).toBe(403);
      expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/account-suspended$/), status: 403 });
    }
    expect(await rowsOf("creator-1")).toEqual(before);
  });

  it("answers 403, not 429, once the actor's throttle is empty", async () => {
    for (let i = 0; i < 5; i++) expect((await create("creator-2", "/v1/safety/lost-reports", lostReport)).statusCode).toBe(201);
    expect((await create("creator-2", "/v1/safety/found-reports", foundReport)).statusCode).toBe(429);
    await suspend("creator-2");
    const res = await create("creator-2", "/v1/safety/found-reports", foundReport);
    expect(res.statusCode).toBe(403);
    expect(res.headers["retry-after"]).toBeUndefined();
  });

  it("answers 403 before anything about the request itself: a bad body, bad JSON, another media type, a body too large", async () => {
    await suspend("creator-3");
    const attempts = [
      { payload: { animal: { species: "unicorn" } } },
      { payload: "{not json", headers: { "content-type": "application/json" } },
      { payload: "a lost cat", headers: { "content-type": "text/plain" } },
      { payload: JSON.stringify({ ...lostReport, description: "x".repeat(100_000) }), headers: { "content-type": "application/json" } },
    ];
    for (const attempt of attempts) {
      const res = await create("creator-3", "/v1/safety/lost-reports", attempt.payload, attempt.headers);
      expect(res.statusCode, JSON.stringify(attempt).slice(0, 80)).toBe(403);
      expect(res.json().type).toMatch(/\/account-suspended$/);
    }
    expect(await rowsOf("creator-3")).toMatchObject({ lost: 0, events: 0, tokens: null });
  });

  it("still answers an active actor's bad body with 400 and an empty throttle with 429", async () => {
    const bad = await create("creator-4", "/v1/safety/lost-reports", { animal: { species: "unicorn" } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().type).toMatch(/\/validation-failed$/);
    for (let i = 0; i < 5; i++) await create("creator-4", "/v1/safety/found-reports", foundReport);
    const refused = await create("creator-4", "/v1/safety/lost-reports", lostReport);
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
  });
});

describe("a suspension with expiresAt ends by itself; one without lasts until a restore", () => {
  it("treats the account as active once expiresAt has passed", async () => {
    await suspend("user-exp", { ...suspension, expiresAt: inOneHour() });
    expect((await inject({ url: "/healthz", headers: as("user-exp") })).statusCode).toBe(403);
    await t.db.pool.query(`update account set suspension_expires_at = now() - interval '1 second' where user_id = 'user-exp'`);
    expect((await inject({ url: "/healthz", headers: as("user-exp") })).statusCode).toBe(200);
    const state = await inject({ url: "/v1/admin/accounts/user-exp", headers: admin() });
    expect(state.json()).toMatchObject({ userId: "user-exp", status: "active" });
  });

  it("keeps an indefinite suspension however old it is", async () => {
    await suspend("user-forever");
    await t.db.pool.query(`update account set suspended_at = now() - interval '5 years' where user_id = 'user-forever'`);
    expect((await inject({ url: "/healthz", headers: as("user-forever") })).statusCode).toBe(403);
    const state = await inject({ url: "/v1/admin/accounts/user-forever", headers: admin() });
    expect(state.json()).toMatchObject({ status: "suspended" });
    expect(state.json().expiresAt).toBeUndefined();
  });
});

describe("restore requires a reason, ends the suspension and audits it", () => {
  it("returns the active state and writes admin.account_restored", async () => {
    await suspend("user-r1");
    const res = await restore("user-r1", { reason: "identity verified by phone" }, admin("admin-2"));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      userId: "user-r1",
      status: "active",
      restoredBy: "admin-2",
      restoredAt: expect.any(String),
      restoreReason: "identity verified by phone",
    });
    expect(await accountRow("user-r1")).toMatchObject({ suspended_at: null, restored_by: "admin-2" });
    const audit = await auditFor("user-r1");
    expect(audit.at(-1)).toEqual({
      actor_id: "admin-2",
      action: "admin.account_restored",
      object_type: "account",
      metadata: { reason: "identity verified by phone", suspendedBy: "admin-1", suspensionReasonCode: "scam" },
    });
  });

  it.each([
    ["no body field", {}],
    ["blank reason", { reason: " " }],
  ])("refuses %s with 400 and keeps the suspension", async (_name, body) => {
    await suspend("user-r2");
    const res = await restore("user-r2", body);
    expect(res.statusCode).toBe(400);
    expect(await accountRow("user-r2")).toMatchObject({ suspended_at: expect.any(Date) });
    expect((await auditFor("user-r2")).map((a) => a.action)).not.toContain("admin.account_restored");
  });

  it("refuses to restore an account that is not suspended with 409 conflict and writes nothing", async () => {
    const res = await restore("user-never");
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/conflict$/) });
    expect(await accountRow("user-never")).toBeUndefined();
    expect(await auditFor("user-never")).toEqual([]);
  });
});

describe("the change and its audit event commit together or not at all", () => {
  it("leaves the account untouched when its audit event cannot be written", async () => {
    await t.db.pool.query(`
      create function test_reject_audit() returns trigger language plpgsql as $$
      begin
        if new.object_id = 'user-atomic' then raise exception 'audit write failed'; end if;
        return new;
      end $$;
      create trigger test_reject_audit before insert on audit_event for each row execute function test_reject_audit();
    `);
    try {
      const res = await suspend("user-atomic");
      expect(res.statusCode).toBe(500);
      expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/internal$/) });
      expect(await accountRow("user-atomic")).toBeUndefined();
      expect((await inject({ url: "/healthz", headers: as("user-atomic") })).statusCode).toBe(200);
    } finally {
      await t.db.pool.query(`drop trigger test_reject_audit on audit_event; drop function test_reject_audit();`);
    }
  });
});
