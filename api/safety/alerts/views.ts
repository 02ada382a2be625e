import type { z } from "zod";
import { round } from "../../../lib/geo.js";
import { coarse, opt } from "../views.js";
import type { Alert } from "./schemas.js";
import type { AlertRow } from "./store.js";

/** Distances are to the coarse point and rounded to 0.1 km. */
export function alert(row: AlertRow): z.input<typeof Alert> {
  return {
    id: row.id,
    kind: row.kind,
    species: row.species,
    animalName: opt(row.animalName),
    location: coarse(row),
    distanceKm: round(row.distanceM / 1000, 1),
    createdAt: row.createdAt.toISOString(),
  };
}
