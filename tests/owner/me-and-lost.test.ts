import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { admin, as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, expectProblem, freshActor, moderate } from "../safety/helpers.js";
import { animalWithTag, reportAnimalLost } from "../tag/helpers.js";

const TTL_DAYS = 12;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ REPORT_TTL_DAYS: String(TTL_DAYS) });
});
afterAll(async () => {
  await h?.close();
});

const get = (url: string, actor: string) => call(h.api, { url, headers: as(actor) });
const daysFromNow = (iso: string) => (Date.parse(iso) - Date.now()) / 86_400_000;

describe("GET /v1/me/lost-reports, /v1/me/found-reports and /v1/me/animals list the caller's own, newest first", () => {
  it("lists only my lost reports, newest first and paginated, moderated ones marked", async () => {
    const me = freshActor("owner");
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await createLostReport(h.api, me, { description: `report ${i}` }));
    await createLostReport(h.api, freshActor("someone-else"));
    await moderate(h.db, "lost_report", ids[0]!);
    const first = await get("/v1/me/lost-reports?limit=2", me);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().items.map((r: { id: string }) => r.id)).toEqual([ids[2], ids[1]]);
    const second = await get(`/v1/me/lost-reports?limit=2&cursor=${first.json().nextCursor}`, me);
    expect(second.json().items.map((r: { id: string }) => r.id)).toEqual([ids[0]]);
    expect(second.json().nextCursor).toBeNull();
    const [quarantined] = second.json().items;
    expect(quarantined).toMatchObject({ moderationState: "quarantined", status: "open", closedReason: null, animalId: null });
    expect(first.json().items[0].moderationState).toBeNull();
    expect(daysFromNow(quarantined.expiresAt)).toBeCloseTo(TTL_DAYS, 1);
    // Coarse only: the precise point stays behind the audited private view.
    expect(quarantined.location.precisionMeters).toBe(1000);
    expect(JSON.stringify(second.json())).not.toContain("verificationDetail");
  });

  it("lists my found reports with their lifetime and moderation state", async () => {
    const me = freshActor("finder");
    const id = await createFoundReport(h.api, me);
    const res = await get("/v1/me/found-reports", me);
    expect(res.json().items).toEqual([expect.objectContaining({ id, status: "open", moderationState: null, closedReason: null })]);
    expect(daysFromNow(res.json().items[0].expiresAt)).toBeCloseTo(TTL_DAYS, 1);
    expect((await get("/v1/me/found-reports", freshActor("nobody"))).json()).toEqual({ items: [], nextCursor: null });
  });

  it("lists my animals with their tag state and open lost report", async () => {
    const me = freshActor("owner");
    const { animalId } = await animalWithTag(h.api, me);
    const bare = await call(h.api, { method: "POST", url: "/v1/animals", headers: as(me), payload: { name: "Tom", species: "cat" } });
    const reportId = await reportAnimalLost(h.api, me, animalId);
    const res = await get("/v1/me/animals", me);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().items).toEqual([
      expect.objectContaining({ id: bare.json().id, name: "Tom", emergencyProfile: null, openLostReportId: null, moderationState: null }),
      expect.objectContaining({
        id: animalId,
        name: "Rex",
        emergencyProfile: { showName: true, issuedAt: expect.any(String), revokedAt: null },
        openLostReportId: reportId,
      }),
    ]);
  });

  it("needs a credential", async () => {
    for (const url of ["/v1/me/lost-reports", "/v1/me/found-reports", "/v1/me/animals"]) {
      expectProblem(await call(h.api, { url }), 401, "unauthenticated");
    }
  });
});

describe("POST /v1/animals/{id}/lost makes a lost report from the animal's profile", () => {
  it("answers 201 with the private view of a report carrying the animal's data", async () => {
    const me = freshActor("owner");
    const { animalId } = await animalWithTag(h.api, me, { name: "Biscuit", species: "dog", breed: "Corgi", colors: ["tan"] });
    const res = await call(h.api, {
      method: "POST",
      url: `/v1/animals/${animalId}/lost`,
      headers: as(me),
      payload: { lastSeenAt: "2025-11-21T10:00:00Z", location: { lat: 52.520008, lon: 13.404954 }, description: "Ran after a cat" },
    });
    expect(res.statusCode, res.body).toBe(201);
    const report = res.json();
    expect(res.headers.location).toBe(`/v1/safety/lost-reports/${report.id}`);
    expect(report).toMatchObject({
      reporterId: me,
      status: "open",
      animal: { name: "Biscuit", species: "dog", breed: "Corgi", colors: ["tan"] },
      lastSeenAt: "2025-11-21T10:00:00.000Z",
      location: { lat: 52.520008, lon: 13.404954 },
      description: "Ran after a cat",
      animalId,
      closedReason: null,
    });
    expect(daysFromNow(report.expiresAt)).toBeCloseTo(TTL_DAYS, 1);
    const { rows } = await h.db.pool.query(`select payload from outbox_event where type = $1 and payload->>'reportId' = $2`, [
      EventType.AnimalLostReported,
      report.id,
    ]);
    expect(rows[0].payload).toMatchObject({ reportId: report.id, animalId, species: "dog" });
    // The public view is the usual one.
    const pub = await call(h.api, { url: `/v1/safety/lost-reports/${report.id}` });
    expect(pub.json()).toMatchObject({ animal: { name: "Biscuit" }, expiresAt: report.expiresAt });
  });

  it("refuses a second open lost report for the animal with 409, and allows one after the first is resolved", async () => {
    const me = freshActor("owner");
    const { animalId } = await animalWithTag(h.api, me);
    const first = await reportAnimalLost(h.api, me, animalId);
    const again = () =>
      call(h.api, { method: "POST", url: `/v1/animals/${animalId}/lost`, headers: as(me), payload: { lastSeenAt: "2025-11-22T08:00:00Z", location: { lat: 1, lon: 1 } } });
    expectProblem(await again(), 409, "conflict");
    await call(h.api, { method: "POST", url: `/v1/safety/lost-reports/${first}/resolve`, headers: as(me), payload: { outcome: "reunited" } });
    expect((await again()).statusCode).toBe(201);
  });

  it("lets one of two simultaneous requests through", async () => {
    const me = freshActor("owner");
    const { animalId } = await animalWithTag(h.api, me);
    const body = { lastSeenAt: "2025-11-22T08:00:00Z", location: { lat: 1, lon: 1 } };
    const results = await Promise.all(
      [1, 2, 3].map(() => call(h.api, { method: "POST", url: `/v1/animals/${animalId}/lost`, headers: as(me), payload: body })),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409, 409]);
  });

  it("is the owner's alone and validates like a lost report", async () => {
    const me = freshActor("owner");
    const { animalId } = await animalWithTag(h.api, me);
    const post = (actor: Record<string, string>, payload: object, id = animalId) =>
      call(h.api, { method: "POST", url: `/v1/animals/${id}/lost`, headers: actor, payload });
    const body = { lastSeenAt: "2025-11-22T08:00:00Z", location: { lat: 1, lon: 1 } };
    expectProblem(await post(as(freshActor("other")), body), 403, "forbidden");
    expectProblem(await post(admin(), body), 403, "forbidden");
    expectProblem(await post(as(me), body, crypto.randomUUID()), 404, "not-found");
    expectProblem(await post({}, body), 401, "unauthenticated");
    expectProblem(await post(as(me), { ...body, lastSeenAt: "2099-01-01T00:00:00Z" }), 400, "validation-failed");
    expectProblem(await post(as(me), { lastSeenAt: body.lastSeenAt }), 400, "validation-failed");
  });
});
