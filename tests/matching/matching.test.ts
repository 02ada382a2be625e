import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMatcher } from "../../jobs/matching/matcher.js";
import { runReportLifetime } from "../../jobs/scheduled/report-lifetime.js";
import { admin, as } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { privacyRules } from "../helpers/privacy.js";
import { eventually } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, expectProblem, freshActor, moderate } from "../safety/helpers.js";

/**
 * Found animals are matched to lost ones: from the API writes, through the
 * relay and the notifier's matching jobs, to the match listings and the
 * owners' and finders' notifications.
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
/** Each case gets its own town, far from the others, so cases never match across. */
let town = 0;
const place = () => {
  town += 1;
  return { lat: 40 + town * 0.7, lon: -3 + town * 0.7 };
};
const near = (p: { lat: number; lon: number }, km: number) => ({ lat: p.lat + km / 111, lon: p.lon });

const beagle = (overrides: Record<string, unknown> = {}) => ({
  species: "dog",
  breed: "Beagle",
  colors: ["brown", "white"],
  sex: "male",
  distinguishingMarks: "notch in the left ear",
  ...overrides,
});

async function lost(owner: string, at: { lat: number; lon: number }, animal: Record<string, unknown> = beagle()) {
  return createLostReport(h.api, owner, { animal: { name: "Rex", ...animal }, lastSeenAt: iso(lostAt), location: at, description: "red collar" });
}
async function found(finder: string, at: { lat: number; lon: number }, foundAt = lostAt + day, animal: Record<string, unknown> = beagle({ breed: "beagle", colors: ["tan", "white"] })) {
  return createFoundReport(h.api, finder, { animal, foundAt: iso(foundAt), location: at, description: "friendly, notched ear" });
}

interface MatchItem {
  id: string;
  kind: string;
  targetId: string;
  score: number;
  reasons: string[];
  distanceKm: number;
  status: string;
}
const matchesOf = async (kind: "lost" | "found", id: string, actor: string) => {
  const res = await call(h.api, { method: "GET", url: `/v1/safety/${kind}-reports/${id}/matches`, headers: as(actor) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().items as MatchItem[];
};
const suggested = (kind: "lost" | "found", id: string, actor: string, count = 1) =>
  eventually(async () => {
    const items = await matchesOf(kind, id, actor);
    return items.length === count ? items : undefined;
  }, 15_000);

const matchNotifications = async (actor: string) => {
  const { rows } = await h.db.pool.query(
    `select subject, body, data, status from notification where recipient_actor_id = $1 and kind = 'match' and channel = 'in_app' order by created_at`,
    [actor],
  );
  return rows;
};
/** All matching jobs have run: none of the notifier's work is left in the queue. */
const settled = () =>
  eventually(async () => {
    const { rows } = await h.db.pool.query(
      `select count(*)::int as n from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
       where t.identifier = 'match__subject'`,
    );
    const { rows: outbox } = await h.db.pool.query(`select count(*)::int as n from outbox_event where published_at is null`);
    return rows[0].n === 0 && outbox[0].n === 0 ? true : undefined;
  }, 15_000);

describe("a found report near a lost report of the same species becomes a suggestion both sides are told of", () => {
  it("suggests the pair with its score and reasons, and notifies the owner and the finder once", async () => {
    const owner = freshActor("owner");
    const finder = freshActor("finder");
    const home = place();
    const lostId = await lost(owner, home);
    const foundId = await found(finder, near(home, 1.5));

    const [m] = await suggested("lost", lostId, owner);
    expect(m).toMatchObject({ kind: "found_report", targetId: foundId, status: "suggested" });
    expect(m!.score).toBeGreaterThanOrEqual(0.5);
    expect(m!.reasons).toEqual(expect.arrayContaining(["breed", "colors"]));
    expect(m!.distanceKm).toBeGreaterThan(0.5);

    const ownerNotes = await eventually(async () => ((await matchNotifications(owner)).length === 1 ? matchNotifications(owner) : undefined));
    expect(ownerNotes[0].data).toEqual({ matchId: m!.id, lostReportId: lostId, foundReportId: foundId });
    // The owner reads how strong the match is and why, in words; the number stays in the API.
    expect(ownerNotes[0].body).toMatch(/^A found report may be your animal: a (strong|good|possible) match: same breed, colours and sex, similar marks, found [0-9.]+ km away the next day\./);
    expect(ownerNotes[0].body).not.toMatch(/score|%/);
    const finderNotes = await eventually(async () => ((await matchNotifications(finder)).length === 1 ? matchNotifications(finder) : undefined));
    expect(finderNotes[0].subject).toMatch(/may have an owner/);
  });

  it("suggests a found report filed after the lost report's event was handled with nothing near it", async () => {
    const owner = freshActor("owner-late");
    const home = place();
    const lostId = await lost(owner, home);
    // The notifier has handled the lost report's event (no subscriber near: its fan-out is recorded done), and queued no matching.
    await eventually(async () => (await h.db.pool.query(`select 1 from alert_fanout where report_id = $1`, [lostId])).rows[0]);
    const foundId = await found(freshActor("finder-late"), near(home, 1.5));
    const [m] = await suggested("lost", lostId, owner);
    expect(m).toMatchObject({ kind: "found_report", targetId: foundId, status: "suggested" });
  });

  it("shows the finder only the lost report's public fields: coarse point, no reporter, no contact, no verification detail", async () => {
    const owner = freshActor("owner-private");
    const finder = freshActor("finder-private");
    const home = { lat: 51.123456, lon: 0.654321 };
    const lostId = await createLostReport(h.api, owner, {
      animal: { name: "Bella", ...beagle({ microchipId: "CHIP-99887" }) },
      lastSeenAt: iso(lostAt),
      location: home,
      verificationDetail: "scar under the chin",
    });
    const foundId = await found(finder, near(home, 0.8));
    const [item] = await suggested("found", foundId, finder);
    expect(item).toMatchObject({ kind: "lost_report", targetId: lostId });
    const body = JSON.stringify(item);
    expect(body).not.toContain(owner);
    expect(body).not.toContain("scar under the chin");
    expect(body).not.toContain("CHIP-99887");
    expect(body).not.toContain("51.123456");
    expect(privacyRules.violations(item)).toEqual([]);
  });

  it("lists matches for the reporter and admins only: anyone else gets 403, an unknown report 404", async () => {
    const owner = freshActor("owner-gate");
    const lostId = await lost(owner, place());
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${lostId}/matches`, headers: as(freshActor("nosy")) }), 403, "forbidden");
    expect((await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${lostId}/matches`, headers: admin() })).statusCode).toBe(200);
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${crypto.randomUUID()}/matches`, headers: as(owner) }), 404, "not-found");
  });
});

describe("matching's edge cases", () => {
  it("equal microchips score 1; a chip on one side only neither helps nor hurts", async () => {
    const owner = freshActor("owner-chip");
    const home = place();
    const lostId = await lost(owner, home, beagle({ microchipId: "985-112-000-123" }));
    const chipped = await found(freshActor("finder-chip"), near(home, 12), lostAt + 20 * day, { species: "dog", microchipId: "985112000123" });
    const [m] = await suggested("lost", lostId, owner);
    expect(m).toMatchObject({ targetId: chipped, score: 1 });
    expect(m!.reasons[0]).toBe("microchip");
  });

  it("respects both ends of the time window: found more than 60 days later, or seen 3 h after it was found, is no candidate", async () => {
    // The same chip everywhere scores 1 wherever the pair is a candidate, so only the window decides.
    const chipped = { species: "dog", microchipId: "CHIP-WINDOW-1" };
    const owner = freshActor("owner-window");
    const home = place();
    const lostId = await lost(owner, home, beagle({ microchipId: "CHIP-WINDOW-1" }));
    await found(freshActor("finder-late"), near(home, 0.5), lostAt + 60 * day + 60_000, chipped);
    await found(freshActor("finder-early"), near(home, 0.5), lostAt - 2 * 3600_000 - 60_000, chipped);
    const lastDay = await found(freshActor("finder-ok"), near(home, 0.5), lostAt + 60 * day - 60_000, chipped);
    const justBefore = await found(freshActor("finder-ok2"), near(home, 0.5), lostAt - 2 * 3600_000 + 60_000, chipped);
    const items = await suggested("lost", lostId, owner, 2);
    await settled();
    expect(items.map((i) => i.targetId).sort()).toEqual([lastDay, justBefore].sort());
    expect(await matchesOf("lost", lostId, owner)).toHaveLength(2);
  });

  it("a quarantined found report is never suggested and nobody is notified of it", async () => {
    const finder = freshActor("finder-q");
    const owner = freshActor("owner-q");
    const home = place();
    const foundId = await found(finder, home);
    await moderate(h.db, "found_report", foundId, "quarantined");
    await settled();
    const lostId = await lost(owner, near(home, 0.3));
    await settled();
    expect(await matchesOf("lost", lostId, owner)).toEqual([]);
    expect(await matchNotifications(owner)).toEqual([]);
    expect(await matchNotifications(finder)).toEqual([]);
  });

  it("an expired found report has left matching: a new lost report nearby is not matched with it", async () => {
    const finder = freshActor("finder-x");
    const owner = freshActor("owner-x");
    const home = place();
    const foundId = await found(finder, home);
    await settled();
    await h.db.pool.query(`update safety_found_report set expires_at = now() - interval '1 minute' where id = $1`, [foundId]);
    expect((await runReportLifetime(h.db.pool, { ttlDays: 30 })).expired).toBeGreaterThanOrEqual(1);
    const lostId = await lost(owner, near(home, 0.3));
    await settled();
    expect(await matchesOf("lost", lostId, owner)).toEqual([]);
    expect(await matchNotifications(owner)).toEqual([]);
  });

  it("a dismissed pair never comes back, and a re-run neither duplicates nor notifies again", async () => {
    const owner = freshActor("owner-dismiss");
    const finder = freshActor("finder-dismiss");
    const home = place();
    const lostId = await lost(owner, home);
    const foundId = await found(finder, near(home, 1));
    const [m] = await suggested("lost", lostId, owner);
    expectProblem(await call(h.api, { method: "POST", url: `/v1/safety/matches/${m!.id}/dismiss`, headers: as(finder) }), 403, "forbidden");
    const dismissed = await call(h.api, { method: "POST", url: `/v1/safety/matches/${m!.id}/dismiss`, headers: as(owner) });
    expect(dismissed.statusCode, dismissed.body).toBe(200);
    expect(dismissed.json().status).toBe("dismissed");

    const match = createMatcher({ pool: h.db.pool, logger: pino({ level: "silent" }) });
    await match({ kind: "found", id: foundId });
    await match({ kind: "lost", id: lostId });
    await match({ kind: "lost", id: lostId });
    await settled();
    const { rows } = await h.db.pool.query(`select status from safety_match where lost_report_id = $1`, [lostId]);
    expect(rows).toEqual([{ status: "dismissed" }]);
    const { rows: events } = await h.db.pool.query(
      `select count(*)::int as n from outbox_event where type = 'events.safety.match_suggested.v1' and payload->>'lostReportId' = $1`,
      [lostId],
    );
    expect(events[0].n).toBe(1);
    expect(await matchNotifications(owner)).toHaveLength(1);
  });
});

describe("a found animal has one owner: a clearly better lost report nearby outranks the weak ones", () => {
  const plainDog = { species: "dog" };

  it("suggests a lone lost report that names only the species, close in place and time", async () => {
    const owner = freshActor("owner-lone");
    const home = place();
    const lostId = await lost(owner, home, plainDog);
    await found(freshActor("finder-lone"), near(home, 0.3));
    expect(await suggested("lost", lostId, owner)).toHaveLength(1);
  });

  it("suggests only the better one when the found report arrives after both", async () => {
    const strongOwner = freshActor("owner-strong");
    const weakOwner = freshActor("owner-weak");
    const home = place();
    const strongId = await lost(strongOwner, home);
    const weakId = await lost(weakOwner, near(home, 0.1), plainDog);
    await settled();
    const foundId = await found(freshActor("finder-two"), near(home, 0.3));
    const [m] = await suggested("lost", strongId, strongOwner);
    expect(m!.targetId).toBe(foundId);
    await settled();
    expect(await matchesOf("lost", weakId, weakOwner)).toEqual([]);
    expect(await matchNotifications(weakOwner)).toEqual([]);
  });

  it("does not suggest a weak lost report filed after the found report already has a better one", async () => {
    const strongOwner = freshActor("owner-first");
    const weakOwner = freshActor("owner-later");
    const home = place();
    const strongId = await lost(strongOwner, home);
    await found(freshActor("finder-first"), near(home, 0.3));
    await suggested("lost", strongId, strongOwner);
    const weakId = await lost(weakOwner, near(home, 0.1), plainDog);
    await settled();
    expect(await matchesOf("lost", weakId, weakOwner)).toEqual([]);
    expect(await matchNotifications(weakOwner)).toEqual([]);
  });
});

describe("confirming a match tells the finder", () => {
  it("confirms for the owner only and sends the finder a match notification", async () => {
    const owner = freshActor("owner-confirm");
    const finder = freshActor("finder-confirm");
    const home = place();
    const lostId = await lost(owner, home);
    const foundId = await found(finder, near(home, 1));
    const [m] = await suggested("lost", lostId, owner);
    const confirmed = await call(h.api, { method: "POST", url: `/v1/safety/matches/${m!.id}/confirm`, headers: as(owner) });
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    expect(confirmed.json()).toMatchObject({ id: m!.id, status: "confirmed", targetId: foundId });
    const notes = await eventually(async () => {
      const all = await matchNotifications(finder);
      return all.length === 2 ? all : undefined;
    });
    const confirmation = notes.find((n) => /confirmed/.test(n.subject));
    expect(confirmation.data).toEqual({ matchId: m!.id, lostReportId: lostId, foundReportId: foundId });
    expectProblem(await call(h.api, { method: "POST", url: `/v1/safety/matches/${crypto.randomUUID()}/confirm`, headers: as(owner) }), 404, "not-found");
  });
});

describe("an unlinked sighting that describes the animal takes part in matching", () => {
  it("suggests a sighting of a matching dog to the lost report's owner", async () => {
    const owner = freshActor("owner-sighting");
    const home = place();
    const lostId = await lost(owner, home);
    const res = await call(h.api, {
      method: "POST",
      url: "/v1/safety/sightings",
      headers: as(freshActor("neighbour")),
      payload: {
        location: near(home, 0.7),
        seenAt: iso(lostAt + 3 * 3600_000),
        note: "beagle with a notched ear running loose",
        animal: { species: "dog", breed: "beagle", colors: ["brown", "white"] },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const [m] = await suggested("lost", lostId, owner);
    expect(m).toMatchObject({ kind: "sighting", targetId: res.json().id });
  });
});
