import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuditAction } from "../../lib/audit.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, createLostReport, expectProblem, freshActor } from "./helpers.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

const flag = (id: string, actor: string | null, reason: unknown) =>
  call(h.api, {
    method: "POST",
    url: `/v1/safety/lost-reports/${id}/flag`,
    headers: actor ? as(actor) : {},
    payload: { reason },
  });

describe("an actor can flag a lost report once; a second flag by the same actor is 409 already-flagged", () => {
  it("returns 204, then 409 already-flagged for the same actor, and keeps one flag row", async () => {
    const id = await createLostReport(h.api, freshActor());
    const first = await flag(id, "flagger-a", "looks like a scam");
    expect(first.statusCode).toBe(204);
    expect(first.body).toBe("");
    expectProblem(await flag(id, "flagger-a", "still a scam"), 409, "already-flagged");
    expect(await count(h.db, `select 1 from safety_report_flag where lost_report_id = $1`, [id])).toBe(1);
  });

  it("lets only one of several concurrent flags by the same actor succeed", async () => {
    const id = await createLostReport(h.api, freshActor());
    const results = await Promise.all(Array.from({ length: 5 }, () => flag(id, "racer", "spam")));
    expect(results.filter((r) => r.statusCode === 204)).toHaveLength(1);
    expect(results.filter((r) => r.statusCode === 409)).toHaveLength(4);
    expect(await count(h.db, `select 1 from audit_event where action = $1 and object_id = $2`, [AuditAction.ReportFlagged, id])).toBe(1);
  });
});

describe("the flag fields are one slot that the newest flag overwrites", () => {
  it("holds the second actor's reason after two flags", async () => {
    const id = await createLostReport(h.api, freshActor());
    expect((await flag(id, "first-flagger", "reason one")).statusCode).toBe(204);
    expect((await flag(id, "second-flagger", "reason two")).statusCode).toBe(204);
    const { rows } = await h.db.pool.query(`select flagged, flagged_reason, flagged_by, flagged_at from safety_lost_report where id = $1`, [id]);
    expect(rows[0]).toMatchObject({ flagged: true, flagged_reason: "reason two", flagged_by: "second-flagger" });
    expect(rows[0].flagged_at).toBeInstanceOf(Date);
  });
});

describe("every flag writes its own safety.report_flagged audit event with the reason in metadata", () => {
  it("writes one audit event per successful flag and none for the refused one", async () => {
    const id = await createLostReport(h.api, freshActor());
    await flag(id, "auditor-1", "first reason");
    await flag(id, "auditor-2", "second reason");
    await flag(id, "auditor-1", "refused reason");
    const { rows } = await h.db.pool.query(
      `select actor_id, object_type, metadata from audit_event where action = $1 and object_id = $2 order by occurred_at`,
      [AuditAction.ReportFlagged, id],
    );
    expect(rows).toEqual([
      { actor_id: "auditor-1", object_type: "lost_report", metadata: { reason: "first reason" } },
      { actor_id: "auditor-2", object_type: "lost_report", metadata: { reason: "second reason" } },
    ]);
  });
});

describe("a flag never hides the report", () => {
  it("leaves the report open, on its public view and in nearby alerts", async () => {
    const id = await createLostReport(h.api, freshActor(), { location: { lat: -33.8688, lon: 151.2093 } });
    for (let i = 0; i < 3; i++) expect((await flag(id, `hider-${i}`, "hide it")).statusCode).toBe(204);
    const view = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}` });
    expect(view.statusCode).toBe(200);
    expect(view.json().status).toBe("open");
    const alerts = await call(h.api, { method: "GET", url: `/v1/safety/alerts?lat=-33.8688&lon=151.2093&radiusKm=5` });
    expect(alerts.json().items.map((a: { id: string }) => a.id)).toContain(id);
  });

  it("shows the reporter the latest flag in the private view but not who flagged; an admin sees who", async () => {
    const owner = freshActor();
    const id = await createLostReport(h.api, owner);
    await flag(id, "whistleblower", "duplicate report");
    const own = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}/private`, headers: as(owner) });
    expect(own.json().flag).toMatchObject({ reason: "duplicate report" });
    expect(own.json().flag.flaggedBy).toBeUndefined();
    const adm = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}/private`, headers: as("adm", ["platform_admin"]) });
    expect(adm.json().flag.flaggedBy).toBe("whistleblower");
  });
});

describe("flag input, auth and target are checked before anything is written", () => {
  it.each([
    ["an empty reason", ""],
    ["a reason over 500 characters", "x".repeat(501)],
    ["a reason that is not a string", 42],
  ])("refuses %s with 400 validation-failed", async (_name, reason) => {
    const id = await createLostReport(h.api, freshActor());
    expectProblem(await flag(id, "validator", reason), 400, "validation-failed");
    expect(await count(h.db, `select 1 from safety_report_flag where lost_report_id = $1`, [id])).toBe(0);
    expect(await count(h.db, `select 1 from audit_event where object_id = $1`, [id])).toBe(0);
  });

  it("refuses a caller without a credential with 401 and an unknown report with 404", async () => {
    const id = await createLostReport(h.api, freshActor());
    expectProblem(await flag(id, null, "anonymous"), 401, "unauthenticated");
    expectProblem(await flag(crypto.randomUUID(), "someone", "ghost"), 404, "not-found");
    expect(await count(h.db, `select 1 from safety_report_flag where lost_report_id = $1`, [id])).toBe(0);
  });
});
