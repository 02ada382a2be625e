import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { coarsen } from "../../lib/geo.js";
import { admin, as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, expectProblem, freshActor } from "../safety/helpers.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const patch = (kind: "lost" | "found", id: string, actor: Record<string, string>, payload: unknown) =>
  call(h.api, { method: "PATCH", url: `/v1/safety/${kind}-reports/${id}`, headers: actor, payload: payload as object });
const renew = (kind: "lost" | "found", id: string, actor: Record<string, string>) =>
  call(h.api, { method: "POST", url: `/v1/safety/${kind}-reports/${id}/renew`, headers: actor });
const events = async (type: string, reportId: string) =>
  (await h.db.pool.query(`select payload from outbox_event where type = $1 and payload->>'reportId' = $2 order by occurred_at`, [type, reportId])).rows.map(
    (r) => r.payload,
  );

describe("PATCH a report: the reporter corrects it and gets the private view, with an event", () => {
  it("corrects a lost report's fields, clears one with null, and emits report_updated naming them", async () => {
    const me = freshActor("owner");
    const id = await createLostReport(h.api, me);
    const moved = { lat: 48.8606, lon: 2.3376 };
    const res = await patch("lost", id, as(me), {
      description: "Red collar with a bell",
      animal: { breed: "Beagle mix", colors: ["brown"], microchipId: null },
      lastSeenAt: "2025-11-19T18:30:00Z",
      location: moved,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      id,
      reporterId: me,
      description: "Red collar with a bell",
      animal: { name: "Rex", breed: "Beagle mix", colors: ["brown"] },
      lastSeenAt: "2025-11-19T18:30:00.000Z",
      location: moved,
      coarseLocation: { ...coarsen(moved), precisionMeters: 1000 },
      verificationDetail: "scar under the left ear",
    });
    expect(res.json().animal.microchipId).toBeUndefined();
    expect(Date.parse(res.json().updatedAt)).toBeGreaterThan(Date.parse(res.json().createdAt));
    expect(await events(EventType.ReportUpdated, id)).toEqual([
      {
        reportKind: "lost",
        reportId: id,
        reporterId: me,
        changed: ["animal.breed", "animal.colors", "animal.microchipId", "lastSeenAt", "location", "description"],
        species: "dog",
        location: coarsen(moved),
      },
    ]);
    const pub = await call(h.api, { url: `/v1/safety/lost-reports/${id}` });
    expect(pub.json().location).toEqual({ ...coarsen(moved), precisionMeters: 1000 });
  });

  it("corrects a found report and answers with its private view", async () => {
    const me = freshActor("finder");
    const id = await createFoundReport(h.api, me);
    const res = await patch("found", id, as(me), { animal: { species: "rabbit", sex: "female" }, foundAt: "2025-11-20T07:00:00Z" });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id, reporterId: me, animal: { species: "rabbit", sex: "female" }, foundAt: "2025-11-20T07:00:00.000Z", location: { lat: 48.86, lon: 2.35 } });
    expect((await events(EventType.ReportUpdated, id))[0]).toMatchObject({ reportKind: "found", changed: ["animal.species", "animal.sex", "foundAt"], species: "rabbit" });
  });

  it.each([
    ["a move of 5,000 km", { location: { lat: 40.7128, lon: -74.006 } }, "body.location"],
    ["a time in the future", { lastSeenAt: "2099-01-01T00:00:00Z" }, "body.lastSeenAt"],
    ["an empty body", {}, "body"],
    ["an empty animal", { animal: {} }, "body"],
    ["a field that cannot be edited", { status: "closed" }, "body"],
    ["a null species", { animal: { species: null } }, "body.animal.species"],
  ])("refuses %s with 400 validation-failed and changes nothing", async (_label, body, path) => {
    const me = freshActor("owner");
    const id = await createLostReport(h.api, me);
    const before = (await call(h.api, { url: `/v1/safety/lost-reports/${id}` })).json();
    const res = await patch("lost", id, as(me), body);
    expectProblem(res, 400, "validation-failed");
    expect(res.json().errors[0].path).toBe(path);
    expect((await call(h.api, { url: `/v1/safety/lost-reports/${id}` })).json()).toEqual(before);
    expect(await events(EventType.ReportUpdated, id)).toEqual([]);
  });

  it("allows a correction of up to 200 km (a mistyped degree)", async () => {
    const me = freshActor("owner");
    const id = await createLostReport(h.api, me);
    expect((await patch("lost", id, as(me), { location: { lat: 47.8566, lon: 2.3522 } })).statusCode).toBe(200);
  });

  it("is the reporter's alone, on an open report", async () => {
    const me = freshActor("owner");
    const id = await createLostReport(h.api, me);
    const body = { description: "x" };
    expectProblem(await patch("lost", id, as(freshActor("other")), body), 403, "forbidden");
    expectProblem(await patch("lost", id, admin(), body), 403, "forbidden");
    expectProblem(await patch("lost", crypto.randomUUID(), as(me), body), 404, "not-found");
    expectProblem(await patch("lost", id, {}, body), 401, "unauthenticated");
    await call(h.api, { method: "POST", url: `/v1/safety/lost-reports/${id}/resolve`, headers: as(me), payload: { outcome: "closed" } });
    expectProblem(await patch("lost", id, as(me), body), 409, "conflict");
  });
});

describe("renew: an open report lives another REPORT_TTL_DAYS", () => {
  it("sets expiresAt to now + 30 days, shown in the views, with report_renewed", async () => {
    for (const kind of ["lost", "found"] as const) {
      const me = freshActor(kind);
      const id = kind === "lost" ? await createLostReport(h.api, me) : await createFoundReport(h.api, me);
      const table = kind === "lost" ? "safety_lost_report" : "safety_found_report";
      await h.db.pool.query(`update ${table} set expires_at = now() + interval '2 days' where id = $1`, [id]);
      const res = await renew(kind, id, as(me));
      expect(res.statusCode, res.body).toBe(200);
      expect(Object.keys(res.json())).toEqual(["expiresAt"]);
      expect((Date.parse(res.json().expiresAt) - Date.now()) / 86_400_000).toBeCloseTo(30, 1);
      expect((await call(h.api, { url: `/v1/safety/${kind}-reports/${id}` })).json().expiresAt).toBe(res.json().expiresAt);
      expect(await events(EventType.ReportRenewed, id)).toEqual([{ reportKind: kind, reportId: id, reporterId: me, expiresAt: res.json().expiresAt }]);
    }
  });

  it("answers 409 for a closed report, expired included, and 403 for anyone but the reporter", async () => {
    const me = freshActor("owner");
    const id = await createLostReport(h.api, me);
    expectProblem(await renew("lost", id, as(freshActor("other"))), 403, "forbidden");
    expectProblem(await renew("lost", id, admin()), 403, "forbidden");
    expectProblem(await renew("lost", crypto.randomUUID(), as(me)), 404, "not-found");
    await h.db.pool.query(`update safety_lost_report set status = 'closed', closed_reason = 'expired', resolved_at = now() where id = $1`, [id]);
    expectProblem(await renew("lost", id, as(me)), 409, "conflict");
    const found = await createFoundReport(h.api, me);
    await call(h.api, { method: "POST", url: `/v1/safety/found-reports/${found}/resolve`, headers: as(me), payload: { outcome: "reunited" } });
    expectProblem(await renew("found", found, as(me)), 409, "conflict");
  });
});
