import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { as } from "../helpers/app.js";
import { offset } from "../alerts/helpers.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, expectProblem, freshActor } from "../safety/helpers.js";

/**
 * A report cannot be walked across the map: a PATCH may put it at most
 * 200 km from where it was first filed, however many edits it takes, and an
 * actor may edit at most 20 times an hour.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const PARIS = { lat: 48.8566, lon: 2.3522 };
const table = { lost: "safety_lost_report", found: "safety_found_report" } as const;

const patch = (kind: "lost" | "found", id: string, actor: string, payload: object) =>
  call(h.api, { method: "PATCH", url: `/v1/safety/${kind}-reports/${id}`, headers: as(actor), payload });

/** What a refused edit must leave as it was: the row's point, its description and updated_at, and the report's events. */
async function snapshot(kind: "lost" | "found", id: string) {
  const { rows } = await h.db.pool.query(
    `select st_astext(location) as location, st_astext(filed_location) as filed, description, updated_at from ${table[kind]} where id = $1`,
    [id],
  );
  const events = await h.db.pool.query(`select count(*)::int as n from outbox_event where type = $1 and payload->>'reportId' = $2`, [
    EventType.ReportUpdated,
    id,
  ]);
  return { ...rows[0], updates: events.rows[0].n };
}

describe("a PATCH moves a report at most 200 km from where it was first filed", () => {
  it.each(["lost", "found"] as const)("counts from the filed point: 150 km is a correction, a second 150 km the same way (300 km) is 400 and writes nothing (%s)", async (kind) => {
    const me = freshActor("walker");
    const id = kind === "lost" ? await createLostReport(h.api, me, { location: PARIS }) : await createFoundReport(h.api, me, { location: PARIS });
    // The create keeps where it was filed.
    expect((await snapshot(kind, id)).filed).toBe(`POINT(${PARIS.lon} ${PARIS.lat})`);
    const first = await patch(kind, id, me, { location: offset(PARIS, 150) });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().location).toEqual(offset(PARIS, 150));

    const before = await snapshot(kind, id);
    expect(before.updates).toBe(1);
    const second = await patch(kind, id, me, { location: offset(PARIS, 300), description: "walked on" });
    expectProblem(second, 400, "validation-failed");
    expect(second.json().errors).toEqual([
      { path: "body.location", message: "is 300 km from where the report was filed; a correction may move it at most 200 km from there" },
    ]);
    expect(await snapshot(kind, id)).toEqual(before);

    expectProblem(await patch(kind, id, me, { location: offset(PARIS, 450) }), 400, "validation-failed");
    expect(await snapshot(kind, id)).toEqual(before);

    // 300 km from where it stands, but 150 km from where it was filed: a correction.
    const back = await patch(kind, id, me, { location: offset(PARIS, -150) });
    expect(back.statusCode, back.body).toBe(200);
    expect((await snapshot(kind, id)).filed).toBe(before.filed);
  });

  it("keeps the point a report written without one (outside the API) had before its first move", async () => {
    const me = freshActor("walker");
    const id = await createLostReport(h.api, me, { location: PARIS });
    await h.db.pool.query(`update safety_lost_report set filed_location = null where id = $1`, [id]);
    expect((await patch("lost", id, me, { location: offset(PARIS, 150) })).statusCode).toBe(200);
    expectProblem(await patch("lost", id, me, { location: offset(PARIS, 300) }), 400, "validation-failed");
  });
});

describe("an actor edits at most 20 times an hour", () => {
  it("answers the 21st edit, lost and found together, 429 with Retry-After, and writes nothing; refused edits do not count", async () => {
    const me = freshActor("editor");
    const lost = await createLostReport(h.api, me);
    const found = await createFoundReport(h.api, me);
    // A refused edit rolls back with its token.
    expectProblem(await patch("lost", lost, me, { location: { lat: 40.7128, lon: -74.006 } }), 400, "validation-failed");
    for (let i = 1; i <= 20; i++) {
      const res = await patch(i % 2 ? "lost" : "found", i % 2 ? lost : found, me, { description: `edit ${i}` });
      expect(res.statusCode, res.body).toBe(200);
    }
    const before = await snapshot("lost", lost);
    const refused = await patch("lost", lost, me, { description: "edit 21" });
    expectProblem(refused, 429, "rate-limited");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(180);
    expect(await snapshot("lost", lost)).toEqual(before);
    expectProblem(await patch("found", found, me, { description: "edit 21" }), 429, "rate-limited");

    // Another actor's edits are theirs.
    const other = freshActor("editor");
    const theirs = await createLostReport(h.api, other);
    expect((await patch("lost", theirs, other, { description: "mine" })).statusCode).toBe(200);
  });
});
