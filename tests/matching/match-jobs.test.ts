import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { recordEvents } from "../../notifier/consumer.js";
import { eventReactions, reactionJobs } from "../../notifier/reactions.js";
import { MATCH_SUBJECT_TASK } from "../../jobs/matching/task.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, freshActor } from "../safety/helpers.js";

/**
 * The consumer queues a lost report's matching job only when the job has
 * something to do: a found report or an unlinked sighting in the candidate
 * window, or a suggestion to rescore or withdraw. No worker runs in this
 * file, so every queued job stays in the queue to be seen.
 */
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const lostAt = "2026-08-01T08:00:00Z";
const hoursAfter = (hours: number) => new Date(Date.parse(lostAt) + hours * 3600_000).toISOString();
/** Each case gets its own town, far from the others. */
let town = 0;
const place = () => {
  town += 1;
  return { lat: 30 + town * 0.8, lon: 10 + town * 0.8 };
};
const north = (p: { lat: number; lon: number }, km: number) => ({ lat: p.lat + km / 111, lon: p.lon });

const lostDog = (at: { lat: number; lon: number }) =>
  createLostReport(h.api, freshActor("owner"), { lastSeenAt: lostAt, location: at });
const foundAnimal = (at: { lat: number; lon: number }, species = "dog", foundAt = hoursAfter(20)) =>
  createFoundReport(h.api, freshActor("finder"), { animal: { species, colors: ["brown"] }, foundAt, location: at });

/** The lost report's event as the consumer handles it: no notification, its reaction jobs. */
function lostReported(reportId: string) {
  const event = { id: randomUUID(), type: EventType.AnimalLostReported, occurredAt: new Date().toISOString() };
  const data = { reportId, reporterId: "owner-x", species: "dog", location: { lat: 1, lon: 1 }, lastSeenAt: lostAt };
  return { event: { ...event, data }, drafts: [], jobs: reactionJobs(eventReactions, { ...event, data })! };
}

/** The consumer's transaction for the lost report's event, as the notifier records it. */
async function consumeLostReported(reportId: string): Promise<void> {
  await recordEvents(h.db.pool, [lostReported(reportId)]);
}

const matchJobQueued = async (kind: string, id: string) => {
  const { rows } = await h.db.pool.query(
    `select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
     where t.identifier = $1 and j.payload->>'kind' = $2 and j.payload->>'id' = $3`,
    [MATCH_SUBJECT_TASK, kind, id],
  );
  return rows.length === 1;
};

describe("a new lost report's matching job", () => {
  it("is not queued when no found report or sighting is near it", async () => {
    const lostId = await lostDog(place());
    await consumeLostReported(lostId);
    expect(await matchJobQueued("lost", lostId)).toBe(false);
  });

  it("is queued when a found report of the same species is within 30 km in the window", async () => {
    const home = place();
    await foundAnimal(north(home, 25));
    const lostId = await lostDog(home);
    await consumeLostReported(lostId);
    expect(await matchJobQueued("lost", lostId)).toBe(true);
  });

  it("is not queued for a found report of another species, one beyond 30 km, or one found more than 60 days later", async () => {
    const home = place();
    await foundAnimal(north(home, 1), "cat");
    await foundAnimal(north(home, 35));
    await foundAnimal(north(home, 1), "dog", hoursAfter(61 * 24));
    const lostId = await lostDog(home);
    await consumeLostReported(lostId);
    expect(await matchJobQueued("lost", lostId)).toBe(false);
  });

  it("is queued for an unlinked sighting that describes a dog nearby, not for one linked to another report", async () => {
    const home = place();
    const sighting = (payload: Record<string, unknown>) =>
      call(h.api, {
        method: "POST",
        url: "/v1/safety/sightings",
        headers: as(freshActor("neighbour")),
        payload: { location: north(home, 2), seenAt: hoursAfter(3), note: "a beagle running loose", ...payload },
      });
    const other = await lostDog(north(home, 3));
    expect((await sighting({ lostReportId: other })).statusCode).toBe(201);
    const first = await lostDog(home);
    await consumeLostReported(first);
    expect(await matchJobQueued("lost", first)).toBe(false);

    expect((await sighting({ animal: { species: "dog", breed: "beagle" } })).statusCode).toBe(201);
    const second = await lostDog(north(home, 1));
    await consumeLostReported(second);
    expect(await matchJobQueued("lost", second)).toBe(true);
  });

  it("is queued while the report has a suggestion to rescore or withdraw, though nothing is near it any more", async () => {
    const lostId = await lostDog(place());
    await h.db.pool.query(
      `insert into safety_match (lost_report_id, kind, target_id, score, reasons, distance_m)
       values ($1, 'found_report', $2, 0.8, '{breed}', 1000)`,
      [lostId, randomUUID()],
    );
    await consumeLostReported(lostId);
    expect(await matchJobQueued("lost", lostId)).toBe(true);
  });

  it("is decided per report when one consumer batch carries several, with each fan-out check's answer kept to its own report", async () => {
    const home = place();
    await foundAnimal(north(home, 5));
    const [withWork, alone] = [await lostDog(home), await lostDog(place())];
    await recordEvents(h.db.pool, [lostReported(alone), lostReported(withWork)]);
    expect(await matchJobQueued("lost", withWork)).toBe(true);
    expect(await matchJobQueued("lost", alone)).toBe(false);
    // Nobody subscribed near either: both fan-outs are recorded done in the same statement, and queue no start.
    const { rows } = await h.db.pool.query(`select report_id, status from alert_fanout where report_id = any($1::uuid[]) order by report_id`, [
      [withWork, alone],
    ]);
    expect(rows).toEqual([withWork, alone].sort().map((id) => ({ report_id: id, status: "done" })));
  });

  it("leaves a found report's own job queued whatever is near it", async () => {
    const foundId = await foundAnimal(place());
    const event = { id: randomUUID(), type: EventType.AnimalFoundReported, occurredAt: new Date().toISOString() };
    const data = { reportId: foundId, reporterId: "finder-x", species: "dog", location: { lat: 1, lon: 1 }, foundAt: hoursAfter(20) };
    await recordEvents(h.db.pool, [{ event: { ...event, data }, drafts: [], jobs: reactionJobs(eventReactions, { ...event, data })! }]);
    expect(await matchJobQueued("found", foundId)).toBe(true);
  });
});
