import type { z } from "zod";
import { coarse, marked, opt } from "../views.js";
import type { Sighting } from "./schemas.js";
import type { SightingRow } from "./store.js";

export function sighting(row: SightingRow): z.input<typeof Sighting> {
  return {
    id: row.id,
    lostReportId: row.lostReportId,
    location: coarse(row),
    seenAt: row.seenAt.toISOString(),
    note: opt(row.note),
    ...(row.species ? { animal: { species: row.species, breed: opt(row.breed), colors: row.colors } } : {}),
    createdAt: row.createdAt.toISOString(),
    ...marked(row.moderationState),
  };
}
