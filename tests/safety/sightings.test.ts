import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { coarsen } from "../../lib/geo.js";
import { admin, as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, createLostReport, expectProblem, freshActor, moderate } from "./helpers.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

const sightingBody = (lostReportId?: string, overrides: Record<string, unknown> = {}) => ({
  ...(lostReportId ? { lostReportId } : {}),
  location: { lat: 48.8601, lon: 2.3401 },
  seenAt: "2025-11-21T10:00:00Z",
  note: "Running towards the river",
  ...overrides,
});

async function reportSighting(actor: string, lostReportId?: string): Promise<string> {
  const res = await call(h.api, { method: "POST", url: "/v1/safety/sightings", headers: as(actor), payload: sightingBody(lostReportId) });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

async function listing(reportId: string, query = "", headers: Record<string, string> = {}) {
  return call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${reportId}/sightings${query}`, headers });
}

describe("POST /v1/safety/sightings records a sighting and emits its event", () => {
  it("returns 201 {id, createdAt} and writes events.safety.sighting_reported.v1 addressed to the report owner", async () => {
    const owner = freshActor("owner");
    const reportId = await createLostReport(h.api, owner);
    const res = await call(h.api, { method: "POST", url: "/v1/safety/sightings", headers: as("spotter"), payload: sightingBody(reportId) });
    expect(res.statusCode).toBe(201);
    const { id } = res.json();
    expect(Object.keys(res.json()).sort()).toEqual(["createdAt", "id"]);
    const { rows } = await h.db.pool.query(`select lost_report_id, reporter_id, note from safety_sighting where id = $1`, [id]);
    expect(rows).toEqual([{ lost_report_id: reportId, reporter_id: "spotter", note: "Running towards the river" }]);
    const outbox = await h.db.pool.query(`select type, payload from outbox_event where payload->>'sightingId' = $1`, [id]);
    expect(outbox.rows).toHaveLength(1);
    expect(outbox.rows[0].type).toBe(EventType.SightingReported);
    expect(outbox.rows[0].payload).toMatchObject({ lostReportId: reportId, recipientActorId: owner, reporterId: "spotter" });
    expect(outbox.rows[0].payload.location).toEqual(coarsen({ lat: 48.8601, lon: 2.3401 }));
  });

  it("accepts a sighting not linked to any report", async () => {
    const id = await reportSighting("spotter");
    expect(await count(h.db, `select 1 from safety_sighting where id = $1 and lost_report_id is null`, [id])).toBe(1);
  });

  it.each([
    ["a latitude out of range", sightingBody(undefined, { location: { lat: 100, lon: 0 } })],
    ["seenAt in the future", sightingBody(undefined, { seenAt: new Date(Date.now() + 3_600_000).toISOString() })],
    ["a note over 1000 characters", sightingBody(undefined, { note: "x".repeat(1001) })],
    ["a lostReportId that is not a uuid", sightingBody(undefined, { lostReportId: "abc" })],
  ])("refuses %s with 400 validation-failed and writes nothing", async (_name, payload) => {
    const actor = freshActor("invalid");
    expectProblem(await call(h.api, { method: "POST", url: "/v1/safety/sightings", headers: as(actor), payload }), 400, "validation-failed");
    expect(await count(h.db, `select 1 from safety_sighting where reporter_id = $1`, [actor])).toBe(0);
  });

  it("refuses no credential with 401, an unknown or moderated report with 404, a resolved one with 409", async () => {
    const actor = freshActor("refused");
    expectProblem(await call(h.api, { method: "POST", url: "/v1/safety/sightings", payload: sightingBody() }), 401, "unauthenticated");
    expectProblem(
      await call(h.api, { method: "POST", url: "/v1/safety/sightings", headers: as(actor), payload: sightingBody(crypto.randomUUID()) }),
      404,
      "not-found",
    );
    const hidden = await createLostReport(h.api, freshActor());
    await moderate(h.db, "lost_report", hidden, "removed");
    expectProblem(await call(h.api, { method: "POST", url: "/v1/safety/sightings", headers: as(actor), payload: sightingBody(hidden) }), 404, "not-found");
    const owner = freshActor();
    const resolved = await createLostReport(h.api, owner);
    await call(h.api, { method: "POST", url: `/v1/safety/lost-reports/${resolved}/resolve`, headers: as(owner), payload: { outcome: "reunited" } });
    expectProblem(await call(h.api, { method: "POST", url: "/v1/safety/sightings", headers: as(actor), payload: sightingBody(resolved) }), 409, "conflict");
    expect(await count(h.db, `select 1 from safety_sighting where reporter_id = $1`, [actor])).toBe(0);
  });
});

describe("GET /v1/safety/lost-reports/{id}/sightings lists a report's sightings, newest first, coarse points only", () => {
  it("returns the sightings without auth, newest first, each with the coarse location and no reporter", async () => {
    const owner = freshActor("owner");
    const reportId = await createLostReport(h.api, owner);
    const first = await reportSighting("spotter-1", reportId);
    const second = await reportSighting("spotter-2", reportId);
    await reportSighting("spotter-3", await createLostReport(h.api, freshActor()));
    // The owner has seen them, so their notes are public (tests/safety/sightings-limits.test.ts).
    await listing(reportId, "", as(owner));
    const res = await listing(reportId);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.items.map((s: { id: string }) => s.id)).toEqual([second, first]);
    expect(body.nextCursor).toBeNull();
    expect(body.items[0]).toEqual({
      id: second,
      lostReportId: reportId,
      location: { ...coarsen({ lat: 48.8601, lon: 2.3401 }), precisionMeters: 1000 },
      seenAt: "2025-11-21T10:00:00.000Z",
      note: "Running towards the river",
      createdAt: expect.any(String),
    });
    expect(res.body).not.toContain("spotter-");
  });

  it("pages with ?limit= and a cursor", async () => {
    const reportId = await createLostReport(h.api, freshActor());
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await reportSighting(`pager-${i}`, reportId));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await listing(reportId, `?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.statusCode).toBe(200);
      seen.push(...res.json().items.map((s: { id: string }) => s.id));
      cursor = res.json().nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
  });

  it("refuses a bad limit or cursor with 400 and answers 404 for an unknown report", async () => {
    const reportId = await createLostReport(h.api, freshActor());
    expectProblem(await listing(reportId, "?limit=0"), 400, "validation-failed");
    expectProblem(await listing(reportId, "?limit="), 400, "validation-failed");
    expectProblem(await listing(reportId, "?cursor=%7B%7D"), 400, "validation-failed");
    expectProblem(await listing(crypto.randomUUID()), 404, "not-found");
  });
});

describe("sightings with a moderation_content_state row are left out of the listing", () => {
  it("hides a quarantined sighting from the public, and shows it marked to its own reporter and to admins", async () => {
    const reportId = await createLostReport(h.api, freshActor());
    const kept = await reportSighting("honest", reportId);
    const quarantined = await reportSighting("troll", reportId);
    const removed = await reportSighting("troll-2", reportId);
    await moderate(h.db, "sighting", quarantined, "quarantined");
    await moderate(h.db, "sighting", removed, "removed");

    const publicIds = (await listing(reportId)).json().items.map((s: { id: string }) => s.id);
    expect(publicIds).toEqual([kept]);
    const other = (await listing(reportId, "", as("honest"))).json().items.map((s: { id: string }) => s.id);
    expect(other).toEqual([kept]);

    const own = (await listing(reportId, "", as("troll"))).json().items;
    expect(own.map((s: { id: string; moderationState?: string }) => [s.id, s.moderationState])).toEqual([
      [quarantined, "quarantined"],
      [kept, undefined],
    ]);
    const adm = (await listing(reportId, "", admin())).json().items;
    expect(adm.map((s: { moderationState?: string }) => s.moderationState)).toEqual(["removed", "quarantined", undefined]);
  });

  it("answers 404 for the listing of a moderated report, except to its reporter", async () => {
    const owner = freshActor();
    const reportId = await createLostReport(h.api, owner);
    await moderate(h.db, "lost_report", reportId);
    expectProblem(await listing(reportId), 404, "not-found");
    expect((await listing(reportId, "", as(owner))).statusCode).toBe(200);
  });
});
