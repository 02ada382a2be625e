import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MODERATION_REPORTS_PER_HOUR } from "../../lib/buckets.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, createLostReport, expectProblem, freshActor } from "../safety/helpers.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

const fileReport = (actor: string, targetId: string) =>
  call(h.api, { method: "POST", url: "/v1/moderation/reports", headers: as(actor), payload: { targetType: "lost_report", targetId, reason: "spam" } });

const reportsBy = (actor: string) => count(h.db, `select 1 from moderation_report where reporter_id = $1`, [actor]);

describe(`an actor files at most ${MODERATION_REPORTS_PER_HOUR} moderation reports an hour, like sightings`, () => {
  it(`refuses the ${MODERATION_REPORTS_PER_HOUR + 1}st with 429 and Retry-After and writes nothing; a 404 uses no token`, async () => {
    const actor = freshActor("flagger");
    const target = await createLostReport(h.api, freshActor("owner"));
    expectProblem(await fileReport(actor, crypto.randomUUID()), 404, "not-found");
    for (let i = 0; i < MODERATION_REPORTS_PER_HOUR; i++) expect((await fileReport(actor, target)).statusCode).toBe(201);
    const refused = await fileReport(actor, target);
    expectProblem(refused, 429, "rate-limited");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(60);
    expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(180);
    expect(await reportsBy(actor)).toBe(MODERATION_REPORTS_PER_HOUR);
    // Another actor may still report the same content.
    expect((await fileReport(freshActor("flagger"), target)).statusCode).toBe(201);
  });
});
