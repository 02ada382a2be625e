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

export function finderMatch(row: FinderMatchRow): z.input<typeof FinderMatch> {
  const { lost } = row;
  return {
    ...common(row),
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
