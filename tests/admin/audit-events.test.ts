import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await t?.close();
});

interface Seed {
  actor: string;
  action: string;
  objectType: string;
  objectId: string;
  at: string;
}

const seeds: Seed[] = [
  { actor: "admin-a", action: "admin.account_suspended", objectType: "account", objectId: "u1", at: "2026-03-02T10:00:00.000500Z" },
  { actor: "admin-a", action: "admin.account_restored", objectType: "account", objectId: "u1", at: "2026-03-02T10:00:00.000900Z" },
  { actor: "admin-b", action: "admin.account_suspended", objectType: "account", objectId: "u2", at: "2026-03-03T10:00:00Z" },
  { actor: "admin-b", action: "admin.outbox.requeued", objectType: "outbox_event", objectId: "e1", at: "2026-03-04T10:00:00Z" },
  { actor: "user-c", action: "safety.report_flagged", objectType: "lost_report", objectId: "r1", at: "2026-03-05T10:00:00Z" },
];
const ids = new Map<Seed, string>();

beforeAll(async () => {
  for (const seed of seeds) {
    const { rows } = await t.db.pool.query(
      `insert into audit_event (actor_id, action, object_type, object_id, occurred_at, metadata)
       values ($1, $2, $3, $4, $5, '{"seeded": true}') returning id`,
      [seed.actor, seed.action, seed.objectType, seed.objectId, seed.at],
    );
    ids.set(seed, rows[0].id);
  }
});

async function list(query: string) {
  const res = await t.api.app.inject({ url: `/v1/admin/audit-events?${query}`, headers: admin() });
  return res;
}

const idsOf = (body: { items: { id: string }[] }) => body.items.map((i) => i.id);
const expected = (pick: (s: Seed) => boolean) =>
  seeds
    .filter(pick)
    .reverse()
    .map((s) => ids.get(s)!);

describe("GET /v1/admin/audit-events filters by actor, action, object and time window, newest first", () => {
  it("returns every event newest first with its fields", async () => {
    const res = await list("to=2026-04-01T00:00:00Z");
    expect(res.statusCode).toBe(200);
    expect(idsOf(res.json())).toEqual(expected(() => true));
    expect(res.json().items[0]).toEqual({
      id: ids.get(seeds[4]!),
      actorId: "user-c",
      action: "safety.report_flagged",
      objectType: "lost_report",
      objectId: "r1",
      occurredAt: "2026-03-05T10:00:00.000Z",
      metadata: { seeded: true },
    });
  });

  it.each([
    ["actorId=admin-b", (s: Seed) => s.actor === "admin-b"],
    ["action=admin.account_suspended", (s: Seed) => s.action === "admin.account_suspended"],
    ["objectType=account&objectId=u1", (s: Seed) => s.objectId === "u1"],
    ["actorId=admin-a&action=admin.account_restored", (s: Seed) => s.actor === "admin-a" && s.action === "admin.account_restored"],
    ["objectType=outbox_event", (s: Seed) => s.objectType === "outbox_event"],
    ["objectId=u1", (s: Seed) => s.objectId === "u1"],
    // from is inclusive, to exclusive.
    ["from=2026-03-02T10:00:00Z&to=2026-03-04T10:00:00Z", (s: Seed) => s.at >= "2026-03-02" && s.at < "2026-03-04"],
    ["from=2026-03-03T10:00:00Z", (s: Seed) => seeds.indexOf(s) >= 2],
    ["from=2026-03-02T10:00:00.000900Z", (s: Seed) => seeds.indexOf(s) >= 1],
    ["from=2026-01-01T00:00:00Z&to=2026-03-03T10:00:00Z", (s: Seed) => seeds.indexOf(s) <= 1],
    ["from=2026-01-01T00:00:00Z&to=2026-03-02T10:00:00.000900Z", (s: Seed) => seeds.indexOf(s) === 0],
  ])("filters by %s", async (query, pick) => {
    const res = await list(query);
    expect(res.statusCode).toBe(200);
    expect(idsOf(res.json())).toEqual(expected(pick));
  });

  // The 2nd and 1st seeds share a millisecond: a page edge between them must not skip the older one.
  it("pages with an opaque cursor, without repeating or skipping, down to microsecond timestamps", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await list(`to=2026-04-01T00:00:00Z&limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      seen.push(...idsOf(res.json()));
      cursor = res.json().nextCursor;
    } while (cursor);
    expect(seen).toEqual(expected(() => true));
  });

  it("keeps rows with the same timestamp apart by id across pages", async () => {
    const at = "2025-01-01T00:00:00Z";
    const tied: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { rows } = await t.db.pool.query(
        `insert into audit_event (actor_id, action, object_type, object_id, occurred_at) values ('tie', 'x', 'y', 'z', $1) returning id`,
        [at],
      );
      tied.push(rows[0].id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await list(`actorId=tie&limit=1${cursor ? `&cursor=${cursor}` : ""}`);
      seen.push(...idsOf(res.json()));
      cursor = res.json().nextCursor;
    } while (cursor);
    expect(seen).toEqual([...tied].sort().reverse());
  });

  it.each([
    ["from=yesterday", "a time that is not RFC 3339"],
    ["from=2026-03-05T00:00:00Z&to=2026-03-01T00:00:00Z", "to before from"],
    ["limit=500", "limit over 200"],
    ["limit=", "a blank limit"],
    ["cursor=abc", "a cursor it did not issue"],
  ])("refuses %s (%s) with 400 validation-failed", async (query) => {
    const res = await list(query);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/validation-failed$/) });
  });
});

describe("audit_event stays append-only", () => {
  it("refuses update and delete in the database", async () => {
    await expect(t.db.pool.query(`update audit_event set action = 'tampered'`)).rejects.toThrow(/append-only/);
    await expect(t.db.pool.query(`delete from audit_event`)).rejects.toThrow(/append-only/);
  });

  it("offers no route that changes an audit event", async () => {
    const id = ids.get(seeds[0]!)!;
    for (const method of ["DELETE", "PUT", "PATCH"] as const) {
      const res = await t.api.app.inject({ method, url: `/v1/admin/audit-events/${id}`, headers: admin() });
      expect(res.statusCode).toBe(404);
    }
    const { rows } = await t.db.pool.query(`select count(*)::int as n from audit_event where action = 'tampered'`);
    expect(rows[0].n).toBe(0);
  });
});
