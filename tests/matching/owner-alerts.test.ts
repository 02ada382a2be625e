import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { createMatcher } from "../../jobs/matching/matcher.js";
import { draftNotifications, MATCH_DIGEST_WINDOW_SECONDS, notificationHandlers } from "../../notifier/handlers.js";
import { as } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { eventually } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, freshActor } from "../safety/helpers.js";

/**
 * The lost report's owner is alerted at once only for a suggestion that stands
 * clearly ahead of that report's other candidates, or for an equal microchip.
 * The other suggestions are in the listing, and the owner hears of them as one
 * "N possible matches" notification a day per lost report.
 */
let h: Harness;
let pipeline: Pipeline;

beforeAll(async () => {
  h = await startHarness();
  pipeline = await startPipeline(h.api.pool, h.api.nc);
});
afterAll(async () => {
  await pipeline?.stop();
  await h?.close();
});

const day = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
const lostAt = Date.parse("2026-08-01T08:00:00Z");
let town = 0;
const place = () => {
  town += 1;
  return { lat: -30 - town * 0.7, lon: 20 + town * 0.7 };
};
const near = (p: { lat: number; lon: number }, km: number) => ({ lat: p.lat + km / 111, lon: p.lon });
const beagle = (overrides: Record<string, unknown> = {}) => ({
  species: "dog", breed: "Beagle", colors: ["brown", "white"], sex: "male", distinguishingMarks: "notch in the left ear", ...overrides,
});

const lost = (owner: string, at: { lat: number; lon: number }, animal = beagle()) =>
  createLostReport(h.api, owner, { animal: { name: "Rex", ...animal }, lastSeenAt: iso(lostAt), location: at, description: "red collar" });
const found = (finder: string, at: { lat: number; lon: number }, animal: Record<string, unknown> = beagle({ breed: "beagle", colors: ["tan", "white"] })) =>
  createFoundReport(h.api, finder, { animal, foundAt: iso(lostAt + day), location: at, description: "friendly, notched ear" });

const listing = async (lostId: string, owner: string) => {
  const res = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${lostId}/matches`, headers: as(owner) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().items as Array<{ id: string; targetId: string; status: string }>;
};
const ownerNotes = async (owner: string) =>
  (
    await h.db.pool.query(
      `select subject, body, data from notification where recipient_actor_id = $1 and kind = 'match' and channel = 'in_app' order by created_at`,
      [owner],
    )
  ).rows as Array<{ subject: string; body: string; data: Record<string, string> }>;
const settled = () =>
  eventually(async () => {
    const { rows } = await h.db.pool.query(
      `select (select count(*)::int from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
                where t.identifier = 'match__subject') as jobs,
              (select count(*)::int from outbox_event where published_at is null) as unpublished,
              (select count(*)::int from outbox_event e where e.type = $1
                 and not exists (select from notification n where n.source_event_id = e.id)
                 and not exists (select from notification_group_member g where g.source_event_id = e.id)) as unhandled`,
      [EventType.MatchSuggested],
    );
    return rows[0].jobs === 0 && rows[0].unpublished === 0 && rows[0].unhandled === 0 ? true : undefined;
  }, 15_000);
const suggestedEvents = async (lostId: string) =>
  (
    await h.db.pool.query(
      `select payload->>'targetId' as "targetId", payload->'ownerAlert' as "ownerAlert" from outbox_event
        where type = $1 and payload->>'lostReportId' = $2 order by occurred_at`,
      [EventType.MatchSuggested, lostId],
    )
  ).rows as Array<{ targetId: string; ownerAlert: boolean }>;

describe("an owner is alerted only for a suggestion clearly ahead of the others; the rest wait in the listing", () => {
  it("a suggestion no better than one already there writes no alert, appears in the listing, and is told once a day as 'N possible matches'", async () => {
    const owner = freshActor("owner-dense");
    const home = place();
    const lostId = await lost(owner, home);
    const first = await found(freshActor("finder-a"), near(home, 1));
    await eventually(async () => ((await ownerNotes(owner)).length === 1 ? true : undefined), 15_000);
    await settled();

    // Two more beagles found beside it: neither stands ahead of the first.
    // Each waits for its own suggestion first: between the found report's event being published
    // and its matching job being queued, settled() already sees no job.
    const listed = (id: string) => eventually(async () => ((await listing(lostId, owner)).some((i) => i.targetId === id) ? true : undefined), 15_000);
    const second = await found(freshActor("finder-b"), near(home, 1));
    await listed(second);
    await settled();
    const third = await found(freshActor("finder-c"), near(home, 1));
    await listed(third);
    await settled();

    const items = await listing(lostId, owner);
    expect(items.map((i) => i.targetId).sort()).toEqual([first, second, third].sort());
    // Every suggestion recorded its event; only the first alerted.
    // (In any order: under load the third's matching job may run before the second's.)
    const byTarget = (a: { targetId: string }, b: { targetId: string }) => a.targetId.localeCompare(b.targetId);
    expect((await suggestedEvents(lostId)).sort(byTarget)).toEqual(
      [
        { targetId: first, ownerAlert: true },
        { targetId: second, ownerAlert: false },
        { targetId: third, ownerAlert: false },
      ].sort(byTarget),
    );
    const notes = await eventually(async () => {
      const all = await ownerNotes(owner);
      return all.length === 2 && all[1]!.data.matchCount === "2" ? all : undefined;
    }, 15_000);
    expect(notes[0]!.subject).toBe("A found animal may be yours");
    expect(notes[0]!.data).toEqual({ matchId: items.find((i) => i.targetId === first)!.id, lostReportId: lostId, foundReportId: first });
    expect(notes[1]).toMatchObject({
      subject: "2 possible matches for your lost report",
      data: { lostReportId: lostId, matchCount: "2", matchesPath: `/v1/safety/lost-reports/${lostId}/matches` },
    });
    expect(notes[1]!.body).not.toMatch(/score|%/);

    // Re-running the matcher on every side suggests nothing new and tells no one again.
    const match = createMatcher({ pool: h.db.pool, logger: pino({ level: "silent" }) });
    for (const id of [first, second, third]) await match({ kind: "found", id });
    await match({ kind: "lost", id: lostId });
    await settled();
    expect(await suggestedEvents(lostId)).toHaveLength(3);
    const after = await ownerNotes(owner);
    expect(after).toHaveLength(2);
    expect(after[1]!.data.matchCount).toBe("2");
  });

  it("an equal microchip alerts at once, however many candidates there are", async () => {
    const owner = freshActor("owner-chip");
    const home = place();
    const lostId = await lost(owner, home, beagle({ microchipId: "985-112-000-555" }));
    await found(freshActor("finder-look-alike"), near(home, 1));
    await eventually(async () => ((await ownerNotes(owner)).length === 1 ? true : undefined), 15_000);
    await settled();
    const chipped = await found(freshActor("finder-chip"), near(home, 1), beagle({ breed: "beagle", colors: ["tan", "white"], microchipId: "985112000555" }));
    await eventually(async () => ((await suggestedEvents(lostId)).some((e) => e.targetId === chipped) ? true : undefined), 15_000);
    await settled();
    expect((await suggestedEvents(lostId)).find((e) => e.targetId === chipped)?.ownerAlert).toBe(true);
    const notes = await ownerNotes(owner);
    expect(notes).toHaveLength(2);
    expect(notes[1]!.subject).toBe("A found animal may be yours");
    expect(notes[1]!.body).toMatch(/^A found report may be your animal: a strong match: the same microchip, /);
    expect(notes[1]!.data.foundReportId).toBe(chipped);
  });
});

describe("the daily 'N possible matches' notification", () => {
  const event = (matchId: string, ownerAlert?: boolean) => ({
    id: crypto.randomUUID(),
    type: EventType.MatchSuggested,
    occurredAt: new Date().toISOString(),
    data: {
      matchId, lostReportId: "7d1f6a44-0000-4000-8000-000000000001", lostReporterId: "user:owner", kind: "found_report",
      targetId: crypto.randomUUID(), targetReporterId: "user:finder", score: 0.8, reasons: ["breed"], distanceM: 900, gapHours: 30,
      ...(ownerAlert === undefined ? {} : { ownerAlert }),
    },
  });

  it("is grouped per lost report over a day, so a lost report gets at most one a day", () => {
    const [owner, finder] = draftNotifications(notificationHandlers, event(crypto.randomUUID(), false))!;
    expect(owner!.group).toMatchObject({ key: "match-digest:7d1f6a44-0000-4000-8000-000000000001", windowSeconds: MATCH_DIGEST_WINDOW_SECONDS });
    expect(MATCH_DIGEST_WINDOW_SECONDS).toBe(86_400);
    expect(owner!.subject).toBe("1 possible match for your lost report");
    expect(owner!.group!.summary(3).subject).toBe("3 possible matches for your lost report");
    // The finder's notification is as before: told at once, never grouped.
    expect(finder!.group).toBeUndefined();
    expect(finder!.subject).toMatch(/may have an owner/);
  });

  it("an event recorded before the flag was carried alerts as before, with when it was found in words", () => {
    const [owner] = draftNotifications(notificationHandlers, event(crypto.randomUUID()))!;
    expect(owner!.group).toBeUndefined();
    expect(owner!.body).toBe(
      "A found report may be your animal: a good match: same breed, found less than 1 km away the next day. " +
        "Open your report's matches to see it, then confirm or dismiss it.",
    );
  });
});
