import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, createFoundReport, createLostReport, expectProblem, freshActor } from "../safety/helpers.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

const fileReport = (actor: string | null, payload: object) =>
  call(h.api, { method: "POST", url: "/v1/moderation/reports", headers: actor ? as(actor) : {}, payload });

const reportsBy = (actor: string) => count(h.db, `select 1 from moderation_report where reporter_id = $1`, [actor]);

describe("POST /v1/moderation/reports lets any authenticated actor report content", () => {
  it("returns 201 {id} and stores an open moderation report for a lost report", async () => {
    const target = await createLostReport(h.api, freshActor());
    const res = await fileReport("reporter-1", { targetType: "lost_report", targetId: target, reason: "scam", details: "asks for money" });
    expect(res.statusCode).toBe(201);
    expect(Object.keys(res.json())).toEqual(["id"]);
    const { rows } = await h.db.pool.query(`select reporter_id, target_type, target_id, reason, details, status from moderation_report where id = $1`, [
      res.json().id,
    ]);
    expect(rows).toEqual([
      { reporter_id: "reporter-1", target_type: "lost_report", target_id: target, reason: "scam", details: "asks for money", status: "open" },
    ]);
  });

  it("accepts found reports, sightings and contact messages as targets", async () => {
    const actor = freshActor("reporter");
    const found = await createFoundReport(h.api, freshActor());
    const lost = await createLostReport(h.api, freshActor());
    const sighting = (await call(h.api, {
      method: "POST",
      url: "/v1/safety/sightings",
      headers: as(freshActor()),
      payload: { lostReportId: lost, location: { lat: 1, lon: 1 }, seenAt: "2025-01-01T00:00:00Z" },
    })).json().id;
    const contactMessage = (await call(h.api, {
      method: "POST",
      url: `/v1/safety/lost-reports/${lost}/relay-message`,
      payload: { message: "send money", fromContact: "x@y.z" },
    })).json().id;
    for (const [targetType, targetId] of [["found_report", found], ["sighting", sighting], ["relay_message", contactMessage]]) {
      expect((await fileReport(actor, { targetType, targetId, reason: "spam" })).statusCode).toBe(201);
    }
    expect(await reportsBy(actor)).toBe(3);
  });

  it("does not hide the reported content: it stays on its public view until an admin acts", async () => {
    const target = await createLostReport(h.api, freshActor());
    await fileReport(freshActor(), { targetType: "lost_report", targetId: target, reason: "abuse" });
    expect((await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${target}` })).statusCode).toBe(200);
  });
});

describe("moderation reports are validated, authenticated and must name existing content", () => {
  it.each([
    ["an unknown targetType", { targetType: "account", targetId: crypto.randomUUID(), reason: "spam" }],
    ["a targetId that is not a uuid", { targetType: "lost_report", targetId: "42", reason: "spam" }],
    ["an unknown reason", { targetType: "lost_report", targetId: crypto.randomUUID(), reason: "boring" }],
    ["details over 2000 characters", { targetType: "lost_report", targetId: crypto.randomUUID(), reason: "other", details: "x".repeat(2001) }],
  ])("refuses %s with 400 validation-failed and writes nothing", async (_name, payload) => {
    const actor = freshActor("invalid");
    expectProblem(await fileReport(actor, payload), 400, "validation-failed");
    expect(await reportsBy(actor)).toBe(0);
  });

  it("refuses a caller without a credential with 401", async () => {
    const target = await createLostReport(h.api, freshActor());
    expectProblem(await fileReport(null, { targetType: "lost_report", targetId: target, reason: "spam" }), 401, "unauthenticated");
    expect(await count(h.db, `select 1 from moderation_report where target_id = $1`, [target])).toBe(0);
  });

  it("answers 404 when the target does not exist, including an id of another type", async () => {
    const actor = freshActor("ghost");
    const lost = await createLostReport(h.api, freshActor());
    expectProblem(await fileReport(actor, { targetType: "sighting", targetId: crypto.randomUUID(), reason: "spam" }), 404, "not-found");
    expectProblem(await fileReport(actor, { targetType: "found_report", targetId: lost, reason: "spam" }), 404, "not-found");
    expect(await reportsBy(actor)).toBe(0);
  });
});
