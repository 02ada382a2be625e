import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMatcher } from "../../jobs/matching/matcher.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, freshActor } from "../safety/helpers.js";

/**
 * The microchip reason of a match is the owner's to see. On the finder's side
 * (GET /v1/safety/found-reports/{id}/matches) it is left out, whether the
 * chips were equal or one keystroke apart: otherwise a finder could edit the
 * chip on their report and read the owner's number a character at a time.
 */
let h: Harness;
let match: ReturnType<typeof createMatcher>;

beforeAll(async () => {
  h = await startHarness();
  match = createMatcher({ pool: h.db.pool, logger: pino({ level: "silent" }) });
});
afterAll(async () => {
  await h?.close();
});

const lostAt = Date.parse("2026-08-01T08:00:00Z");
let town = 0;

interface MatchItem {
  targetId: string;
  reasons: string[];
}

async function matchesOf(kind: "lost" | "found", id: string, actor: string): Promise<MatchItem[]> {
  const res = await call(h.api, { method: "GET", url: `/v1/safety/${kind}-reports/${id}/matches`, headers: as(actor) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().items;
}

/** A lost beagle chipped `ownerChip`, and a found one nearby the next day chipped `finderChip`, matched by the notifier's matcher. */
async function pair(ownerChip: string, finderChip: string) {
  town += 1;
  const home = { lat: 44 + town * 0.7, lon: 1 + town * 0.7 };
  const animal = { species: "dog", breed: "Beagle", colors: ["brown", "white"], sex: "male" };
  const owner = freshActor("owner-chip");
  const finder = freshActor("finder-chip");
  const lostId = await createLostReport(h.api, owner, {
    animal: { name: "Rex", ...animal, microchipId: ownerChip },
    lastSeenAt: new Date(lostAt).toISOString(),
    location: home,
  });
  const foundId = await createFoundReport(h.api, finder, {
    animal: { ...animal, microchipId: finderChip },
    foundAt: new Date(lostAt + 86_400_000).toISOString(),
    location: { lat: home.lat + 0.005, lon: home.lon },
  });
  await match({ kind: "found", id: foundId });
  const { rows } = await h.db.pool.query(`select reasons from safety_match where lost_report_id = $1`, [lostId]);
  expect(rows).toHaveLength(1);
  return { owner, finder, lostId, foundId, stored: rows[0] as { reasons: string[] } };
}

describe("the finder's side of a match never names the microchip", () => {
  it("leaves out a near chip (one character mistyped): the owner sees it, the finder does not", async () => {
    const { owner, finder, lostId, foundId, stored } = await pair("985112000123456", "985112000123457");
    // With the rest alike a near chip rounds to 1 as an equal one does: neither the score nor the reason tells them apart.
    expect(stored.reasons).toContain("microchip");

    const [ownerSide] = await matchesOf("lost", lostId, owner);
    expect(ownerSide!.reasons).toContain("microchip");
    const [finderSide] = await matchesOf("found", foundId, finder);
    expect(finderSide).toMatchObject({ targetId: lostId });
    expect(finderSide!.reasons).not.toContain("microchip");
    expect(finderSide!.reasons).toEqual(stored.reasons.filter((r) => r !== "microchip"));
  });

  it("leaves out two neighbouring characters swapped, and an equal chip", async () => {
    for (const finderChip of ["985112000123465", "985-112-000-123-456"]) {
      const { finder, foundId, stored } = await pair("985112000123456", finderChip);
      expect(stored.reasons, finderChip).toContain("microchip");
      const [finderSide] = await matchesOf("found", foundId, finder);
      expect(finderSide!.reasons, finderChip).not.toContain("microchip");
      expect(finderSide!.reasons.length, finderChip).toBeGreaterThan(0);
    }
  });
});
