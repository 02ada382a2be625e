import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SIGHTINGS_PER_HOUR } from "../../lib/buckets.js";
import { EventType } from "../../lib/events.js";
import { admin, as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, createLostReport, expectProblem, freshActor } from "./helpers.js";

/** The abuse limits on sightings: a per-actor hourly limit, and notes shown only once the owner or a moderator saw them. */
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

const NOTE = "Hiding under the blue car on Rue Oberkampf";

const report = (actor: string, lostReportId?: string) =>
  call(h.api, {
    method: "POST",
    url: "/v1/safety/sightings",
    headers: as(actor),
    payload: { ...(lostReportId ? { lostReportId } : {}), location: { lat: 48.8601, lon: 2.3401 }, seenAt: "2025-11-21T10:00:00Z", note: NOTE },
  });

const rowsBy = (actor: string) => count(h.db, `select 1 from safety_sighting where reporter_id = $1`, [actor]);
const eventsBy = (actor: string) =>
  count(h.db, `select 1 from outbox_event where type = $1 and payload->>'reporterId' = $2`, [EventType.SightingReported, actor]);

describe(`an actor makes at most ${SIGHTINGS_PER_HOUR} sightings an hour`, () => {
  it(`refuses the ${SIGHTINGS_PER_HOUR + 1}st with 429 and Retry-After, writing no sighting and no event`, async () => {
    const actor = freshActor("eager");
    const lostReportId = await createLostReport(h.api, freshActor("owner"));
    for (let i = 0; i < SIGHTINGS_PER_HOUR; i++) expect((await report(actor, lostReportId)).statusCode).toBe(201);
    const refused = await report(actor, lostReportId);
    expectProblem(refused, 429, "rate-limited");
    // One token comes back every 3 minutes.
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(60);
    expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(180);
    expect(refused.json().detail).toContain(`${SIGHTINGS_PER_HOUR} sightings per hour`);
    expect(await rowsBy(actor)).toBe(SIGHTINGS_PER_HOUR);
    expect(await eventsBy(actor)).toBe(SIGHTINGS_PER_HOUR);
    // The limit is the actor's: another actor still reports on the same report.
    expect((await report(freshActor("other"), lostReportId)).statusCode).toBe(201);
  });

  it("counts unlinked sightings too, and a refused sighting (404) uses no token", async () => {
    const actor = freshActor("unlinked");
    for (let i = 0; i < 3; i++) expectProblem(await report(actor, crypto.randomUUID()), 404, "not-found");
    for (let i = 0; i < SIGHTINGS_PER_HOUR; i++) expect((await report(actor)).statusCode).toBe(201);
    expectProblem(await report(actor), 429, "rate-limited");
    expect(await rowsBy(actor)).toBe(SIGHTINGS_PER_HOUR);
  });
});

interface Listed {
  id: string;
  note?: string;
}

const listing = async (reportId: string, headers: Record<string, string> = {}, method: "GET" | "HEAD" = "GET") => {
  const res = await call(h.api, { method, url: `/v1/safety/lost-reports/${reportId}/sightings`, headers });
  expect(res.statusCode, res.body).toBe(200);
  return method === "GET" ? (res.json().items as Listed[]) : [];
};
const noteOf = (items: Listed[], id: string) => items.find((s) => s.id === id)?.note;

describe("the public sightings list shows a note only once the report's owner or a moderator has seen the sighting", () => {
  it("hides a new stranger's note from the public until the owner lists the sightings, and shows it after", async () => {
    const owner = freshActor("owner");
    const stranger = freshActor("stranger");
    const reportId = await createLostReport(h.api, owner);
    const id = (await report(stranger, reportId)).json().id;

    const before = await listing(reportId);
    expect(before.map((s) => s.id)).toEqual([id]);
    expect(before[0]).not.toHaveProperty("note");
    // Another signed-in actor is the public too; the sighting's own reporter sees their note.
    expect(noteOf(await listing(reportId, as(freshActor("reader"))), id)).toBeUndefined();
    expect(noteOf(await listing(reportId, as(stranger)), id)).toBe(NOTE);
    // Nobody's listing above counted as the owner's.
    expect(noteOf(await listing(reportId), id)).toBeUndefined();

    // The owner sees every note, and their listing marks what it showed as seen.
    expect(noteOf(await listing(reportId, as(owner)), id)).toBe(NOTE);
    expect(noteOf(await listing(reportId), id)).toBe(NOTE);
  });

  it("a moderator's listing counts as seen too; a HEAD by the owner does not", async () => {
    const owner = freshActor("owner");
    const reportId = await createLostReport(h.api, owner);
    const id = (await report(freshActor("stranger"), reportId)).json().id;
    await listing(reportId, as(owner), "HEAD");
    expect(noteOf(await listing(reportId), id)).toBeUndefined();
    expect(noteOf(await listing(reportId, admin("moderator-1")), id)).toBe(NOTE);
    expect(noteOf(await listing(reportId), id)).toBe(NOTE);
  });

  it("marks only the page the owner was shown", async () => {
    const owner = freshActor("owner");
    const reportId = await createLostReport(h.api, owner);
    const older = (await report(freshActor("stranger"), reportId)).json().id;
    const newer = (await report(freshActor("stranger"), reportId)).json().id;
    const res = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${reportId}/sightings?limit=1`, headers: as(owner) });
    expect(res.json().items.map((s: Listed) => s.id)).toEqual([newer]);
    const pub = await listing(reportId);
    expect(noteOf(pub, newer)).toBe(NOTE);
    expect(noteOf(pub, older)).toBeUndefined();
  });

  it("shows the note of a sighting the owner made on their own report", async () => {
    const owner = freshActor("owner");
    const reportId = await createLostReport(h.api, owner);
    const id = (await report(owner, reportId)).json().id;
    expect(noteOf(await listing(reportId), id)).toBe(NOTE);
  });
});
