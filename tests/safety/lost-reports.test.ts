import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuditAction } from "../../lib/audit.js";
import { EventType } from "../../lib/events.js";
import { coarsen } from "../../lib/geo.js";
import { admin, as, buildTestApi, devEnv } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, createFoundReport, createLostReport, expectProblem, foundReportBody, freshActor, lostReportBody, moderate } from "./helpers.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

const lostRows = (reporter: string) => count(h.db, `select 1 from safety_lost_report where reporter_id = $1`, [reporter]);

describe("POST /v1/safety/lost-reports creates an open report and its outbox event in one transaction", () => {
  it("returns 201 {id, createdAt} with a Location header, stores status open and emits events.animal.lost_reported.v1", async () => {
    const actor = freshActor();
    const res = await call(h.api, { method: "POST", url: "/v1/safety/lost-reports", headers: as(actor), payload: lostReportBody() });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(["createdAt", "id"]);
    expect(res.headers.location).toBe(`/v1/safety/lost-reports/${body.id}`);
    const { rows } = await h.db.pool.query(`select status, reporter_id from safety_lost_report where id = $1`, [body.id]);
    expect(rows).toEqual([{ status: "open", reporter_id: actor }]);
    const outbox = await h.db.pool.query(`select type, payload from outbox_event where payload->>'reportId' = $1`, [body.id]);
    expect(outbox.rows).toHaveLength(1);
    expect(outbox.rows[0].type).toBe(EventType.AnimalLostReported);
    expect(outbox.rows[0].payload.location).toEqual(coarsen({ lat: 48.8566, lon: 2.3522 }));
  });

  it.each([
    ["latitude out of range", { location: { lat: 91, lon: 0 } }],
    ["longitude out of range", { location: { lat: 0, lon: 181 } }],
    ["unknown species", { animal: { species: "dragon" } }],
    ["too many colours", { animal: { species: "dog", colors: Array.from({ length: 11 }, (_, i) => `c${i}`) } }],
    ["a description over 5000 characters", { description: "x".repeat(5001) }],
    ["lastSeenAt in the future", { lastSeenAt: new Date(Date.now() + 86_400_000).toISOString() }],
    ["lastSeenAt not a timestamp", { lastSeenAt: "yesterday" }],
  ])("refuses %s with 400 validation-failed and writes nothing", async (_name, overrides) => {
    const actor = freshActor();
    const res = await call(h.api, {
      method: "POST",
      url: "/v1/safety/lost-reports",
      headers: as(actor),
      payload: lostReportBody(overrides),
    });
    expectProblem(res, 400, "validation-failed");
    expect(res.json().errors.length).toBeGreaterThan(0);
    expect(await lostRows(actor)).toBe(0);
  });

  it("refuses a caller without a credential with 401 and writes nothing", async () => {
    const before = await count(h.db, `select 1 from safety_lost_report`);
    const res = await call(h.api, { method: "POST", url: "/v1/safety/lost-reports", payload: lostReportBody() });
    expectProblem(res, 401, "unauthenticated");
    expect(await count(h.db, `select 1 from safety_lost_report`)).toBe(before);
  });
});

describe("lost and found creation share one 5-per-hour throttle per actor, kept in Postgres", () => {
  it("gives the 6th creation in an hour 429 rate-limited with Retry-After, counting found reports too", async () => {
    const actor = freshActor();
    for (let i = 0; i < 3; i++) await createLostReport(h.api, actor);
    for (let i = 0; i < 2; i++) await createFoundReport(h.api, actor);
    const sixth = await call(h.api, { method: "POST", url: "/v1/safety/found-reports", headers: as(actor), payload: foundReportBody() });
    expectProblem(sixth, 429, "rate-limited");
    expect(Number(sixth.headers["retry-after"])).toBeGreaterThan(0);
    const lost = await call(h.api, { method: "POST", url: "/v1/safety/lost-reports", headers: as(actor), payload: lostReportBody() });
    expectProblem(lost, 429, "rate-limited");
    expect(await lostRows(actor)).toBe(3);
    // another actor is not affected
    await createLostReport(h.api, freshActor());
  });

  it("lets exactly 5 of 12 concurrent creations by one actor succeed", async () => {
    const actor = freshActor();
    const results = await Promise.all(
      Array.from({ length: 12 }, () =>
        call(h.api, { method: "POST", url: "/v1/safety/lost-reports", headers: as(actor), payload: lostReportBody() }),
      ),
    );
    expect(results.filter((r) => r.statusCode === 201)).toHaveLength(5);
    expect(results.filter((r) => r.statusCode === 429)).toHaveLength(7);
    expect(await lostRows(actor)).toBe(5);
  });

  it("holds across two API instances and across a restart", async () => {
    const actor = freshActor();
    const second = await buildTestApi(devEnv(h.db.url, h.bus.url));
    try {
      const both = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          call(i % 2 === 0 ? h.api : second, {
            method: "POST",
            url: "/v1/safety/lost-reports",
            headers: as(actor),
            payload: lostReportBody(),
          }),
        ),
      );
      expect(both.filter((r) => r.statusCode === 201)).toHaveLength(5);
    } finally {
      await second.close();
    }
    const restarted = await buildTestApi(devEnv(h.db.url, h.bus.url));
    try {
      const after = await call(restarted, { method: "POST", url: "/v1/safety/lost-reports", headers: as(actor), payload: lostReportBody() });
      expectProblem(after, 429, "rate-limited");
    } finally {
      await restarted.close();
    }
    expect(await lostRows(actor)).toBe(5);
  });
});

describe("POST /v1/safety/found-reports creates an open found report with its event", () => {
  it("returns 201 {id, createdAt} with a Location header and emits events.animal.found_reported.v1", async () => {
    const res = await call(h.api, { method: "POST", url: "/v1/safety/found-reports", headers: as(freshActor()), payload: foundReportBody() });
    expect(res.statusCode).toBe(201);
    const { id } = res.json();
    expect(res.headers.location).toBe(`/v1/safety/found-reports/${id}`);
    const outbox = await h.db.pool.query(`select type from outbox_event where payload->>'reportId' = $1`, [id]);
    expect(outbox.rows).toEqual([{ type: EventType.AnimalFoundReported }]);
  });

  it("refuses an animal name (found reports have none) and a bad point with 400, writing nothing", async () => {
    const actor = freshActor();
    for (const payload of [
      foundReportBody({ location: { lat: -91, lon: 0 } }),
      foundReportBody({ foundAt: "not a date" }),
      { ...foundReportBody(), animal: { species: "cat", colors: "black" } },
    ]) {
      const res = await call(h.api, { method: "POST", url: "/v1/safety/found-reports", headers: as(actor), payload });
      expectProblem(res, 400, "validation-failed");
    }
    expect(await count(h.db, `select 1 from safety_found_report where reporter_id = $1`, [actor])).toBe(0);
  });

  it("refuses a caller without a credential with 401", async () => {
    expectProblem(await call(h.api, { method: "POST", url: "/v1/safety/found-reports", payload: foundReportBody() }), 401, "unauthenticated");
  });
});

describe("public report views show a location coarsened to about 1 km and nothing private", () => {
  it("shows the lost report with the cell centre, without reporter, microchip id or verificationDetail", async () => {
    const actor = freshActor();
    const id = await createLostReport(h.api, actor);
    const res = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}` });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    const cell = coarsen({ lat: 48.8566, lon: 2.3522 });
    expect(body.location).toEqual({ ...cell, precisionMeters: 1000 });
    expect(body).toMatchObject({ id, status: "open", animal: { name: "Rex", species: "dog", colors: ["brown", "white"] } });
    expect(res.body).not.toContain("scar under the left ear");
    expect(res.body).not.toContain("CHIP-12345");
    expect(res.body).not.toContain(actor);
    expect(res.body).not.toContain("48.8566");
    expect(body.moderationState).toBeUndefined();
  });

  it("shows the found report the same way, without its reporter", async () => {
    const actor = freshActor("finder");
    const id = await createFoundReport(h.api, actor, { animal: { species: "cat", microchipId: "FOUND-999" } });
    const res = await call(h.api, { method: "GET", url: `/v1/safety/found-reports/${id}` });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.location).toEqual({ ...coarsen({ lat: 48.86, lon: 2.35 }), precisionMeters: 1000 });
    expect(Object.keys(body).sort()).toEqual(["animal", "closedReason", "createdAt", "expiresAt", "foundAt", "id", "location", "photos", "resolvedAt", "shareUrl", "shortUrl", "status"]);
    expect(Object.keys(body).filter((key) => /reporter/i.test(key))).toEqual([]);
    expect(res.body).not.toContain(actor);
    expect(res.body).not.toContain("FOUND-999");
  });

  it("answers 404 for an unknown id and 400 for a malformed one", async () => {
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${crypto.randomUUID()}` }), 404, "not-found");
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/found-reports/${crypto.randomUUID()}` }), 404, "not-found");
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/not-a-uuid` }), 400, "validation-failed");
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/found-reports/not-a-uuid` }), 400, "validation-failed");
  });
});

describe("quarantined or removed reports are 404 on public views, but their reporter and admins see them marked", () => {
  it("hides a moderated lost report from the public and shows it to its reporter and an admin with moderationState", async () => {
    const actor = freshActor();
    const id = await createLostReport(h.api, actor);
    await moderate(h.db, "lost_report", id, "removed");
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}` }), 404, "not-found");
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}`, headers: as("stranger") }), 404, "not-found");
    for (const headers of [as(actor), admin()]) {
      const res = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}`, headers });
      expect(res.statusCode).toBe(200);
      expect(res.json().moderationState).toBe("removed");
    }
  });

  it("hides a moderated found report from the public", async () => {
    const actor = freshActor();
    const id = await createFoundReport(h.api, actor);
    await moderate(h.db, "found_report", id);
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/found-reports/${id}` }), 404, "not-found");
    const own = await call(h.api, { method: "GET", url: `/v1/safety/found-reports/${id}`, headers: as(actor) });
    expect(own.json().moderationState).toBe("quarantined");
  });
});

describe("the private view gives the precise location to the reporter or a platform admin and is audited", () => {
  it("returns every field to the reporter and writes safety.precise_location_viewed", async () => {
    const actor = freshActor();
    const id = await createLostReport(h.api, actor);
    const res = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}/private`, headers: as(actor) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      id,
      reporterId: actor,
      location: { lat: 48.8566, lon: 2.3522 },
      verificationDetail: "scar under the left ear",
      animal: { microchipId: "CHIP-12345" },
      flag: null,
      moderationState: null,
    });
    const audit = await h.db.pool.query(`select actor_id, object_type, metadata from audit_event where action = $1 and object_id = $2`, [
      AuditAction.PreciseLocationViewed,
      id,
    ]);
    expect(audit.rows).toEqual([{ actor_id: actor, object_type: "lost_report", metadata: { viewerRole: "reporter" } }]);
  });

  it("returns it to a platform admin, audited under the admin's id", async () => {
    const id = await createLostReport(h.api, freshActor());
    const res = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}/private`, headers: admin("admin-7") });
    expect(res.statusCode).toBe(200);
    expect(await count(h.db, `select 1 from audit_event where action = $1 and object_id = $2 and actor_id = 'admin-7'`, [
      AuditAction.PreciseLocationViewed,
      id,
    ])).toBe(1);
  });

  it("refuses another actor with 403, without credential 401, unknown id 404, and audits none of them", async () => {
    const id = await createLostReport(h.api, freshActor());
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}/private`, headers: as("someone-else") }), 403, "forbidden");
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}/private` }), 401, "unauthenticated");
    expectProblem(
      await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${crypto.randomUUID()}/private`, headers: as("x") }),
      404,
      "not-found",
    );
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/nope/private`, headers: as("x") }), 400, "validation-failed");
    expect(await count(h.db, `select 1 from audit_event where object_id = $1`, [id])).toBe(0);
  });
});

const kinds = [
  { kind: "lost", path: "lost-reports", table: "safety_lost_report", create: createLostReport, event: EventType.LostReportResolved, idField: "lostReportId" },
  { kind: "found", path: "found-reports", table: "safety_found_report", create: createFoundReport, event: EventType.FoundReportResolved, idField: "foundReportId" },
];

describe.each(kinds)("the reporter resolves a $kind report as reunited or closed", ({ path, table, create, event, idField }) => {
  const resolve = (id: string, headers: Record<string, string>, payload: object = { outcome: "closed" }) =>
    call(h.api, { method: "POST", url: `/v1/safety/${path}/${id}/resolve`, headers, payload });
  const events = (id: string) =>
    h.db.pool.query(`select payload from outbox_event where type = $1 and payload->>$2 = $3`, [event, idField, id]);

  it(`returns 200 with the new status, emits ${event} and refuses a second resolve with 409`, async () => {
    const actor = freshActor();
    const id = await create(h.api, actor);
    const res = await resolve(id, as(actor), { outcome: "reunited" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id, status: "reunited", resolvedAt: expect.any(String) });
    const { rows } = await h.db.pool.query(`select status, resolved_at from ${table} where id = $1`, [id]);
    expect(rows[0].status).toBe("reunited");
    expect(rows[0].resolved_at.toISOString()).toBe(res.json().resolvedAt);
    expect((await events(id)).rows).toEqual([
      { payload: { [idField]: id, reporterId: actor, outcome: "reunited", resolvedAt: res.json().resolvedAt } },
    ]);
    expectProblem(await resolve(id, as(actor)), 409, "conflict");
    expect((await events(id)).rows).toHaveLength(1);
    const view = await call(h.api, { method: "GET", url: `/v1/safety/${path}/${id}` });
    expect(view.json()).toMatchObject({ status: "reunited", resolvedAt: res.json().resolvedAt });
  });

  it("refuses a bad outcome with 400, another actor or an admin with 403, no credential with 401, and changes nothing", async () => {
    const actor = freshActor();
    const id = await create(h.api, actor);
    expectProblem(await resolve(id, as(actor), { outcome: "found" }), 400, "validation-failed");
    expectProblem(await resolve(id, as(actor), {}), 400, "validation-failed");
    expectProblem(await resolve(id, as("other")), 403, "forbidden");
    expectProblem(await resolve(id, admin()), 403, "forbidden");
    expectProblem(await resolve(id, {}), 401, "unauthenticated");
    expectProblem(await resolve(crypto.randomUUID(), as(actor)), 404, "not-found");
    expectProblem(await resolve("not-a-uuid", as(actor)), 400, "validation-failed");
    const { rows } = await h.db.pool.query(`select status, resolved_at from ${table} where id = $1`, [id]);
    expect(rows).toEqual([{ status: "open", resolved_at: null }]);
    expect((await events(id)).rows).toEqual([]);
  });
});

describe("lost reports, found reports and contact messages have no soft-delete", () => {
  it("has no deleted/archived column on those tables", async () => {
    const { rows } = await h.db.pool.query(
      `select table_name, column_name from information_schema.columns
       where table_name in ('safety_lost_report', 'safety_found_report', 'safety_relay_message')
         and (column_name like '%delete%' or column_name like '%archiv%' or column_name = 'is_active')`,
    );
    expect(rows).toEqual([]);
  });
});
