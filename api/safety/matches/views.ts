import type { z } from "zod";
import { round } from "../../../lib/geo.js";
import { coarse, opt } from "../views.js";
import type { FinderMatch, Match } from "./schemas.js";
import type { FinderMatchRow, MatchRow } from "./store.js";

const common = (row: MatchRow) => ({
  id: row.id,
  score: row.score,
  reasons: row.reasons,
  distanceKm: round(row.distanceM / 1000, 1),
  createdAt: row.createdAt.toISOString(),
  status: row.status,
});

export function match(row: MatchRow): z.input<typeof Match> {
  return { ...common(row), kind: row.kind, targetId: row.targetId };
}

/**
 * The microchip reason compares the lost animal's chip with the one the finder
 * typed, and it is given for an equal chip and for one a keystroke away alike:
 * shown to the finder, it would let them edit their report's chip and read the
 * owner's number a character at a time. Only the owner's side names it.
 */
const finderReasons = (reasons: MatchRow["reasons"]) => reasons.filter((reason) => reason !== "microchip");

export function finderMatch(row: FinderMatchRow): z.input<typeof FinderMatch> {
  const { lost } = row;
  return {
    ...common(row),
    reasons: finderReasons(row.reasons),
    kind: "lost_report",
    targetId: row.lostReportId,
    lostReport: {
      status: lost.status,
      animal: {
        name: opt(lost.animalName),
        species: lost.species,
        breed: opt(lost.breed),
        colors: lost.colors,
        sex: opt(lost.sex),
        distinguishingMarks: opt(lost.distinguishingMarks),
      },
      lastSeenAt: lost.lastSeenAt.toISOString(),
      location: coarse(lost),
    },
  };
}
