import { z } from "zod";
import { PageQuery } from "../../pagination.js";
import { queryNumber, Species } from "../../schemas.js";
import { CoarseLocation } from "../schemas.js";

export const AlertKind = z.enum(["lost", "found"]);
export const AlertsQuery = PageQuery.extend({
  lat: queryNumber(z.coerce.number().min(-90).max(90)),
  lon: queryNumber(z.coerce.number().min(-180).max(180)),
  radiusKm: queryNumber(z.coerce.number().gt(0).max(100).default(10)),
  kind: z.enum(["lost", "found", "all"]).default("all"),
  species: Species.optional(),
});
export type AlertsQuery = z.output<typeof AlertsQuery>;
export const AlertsCursor = z.object({ d: z.number().min(0), id: z.uuid() });

export const Alert = z
  .object({
    id: z.uuid(),
    kind: AlertKind,
    species: Species,
    animalName: z.string().optional(),
    location: CoarseLocation,
    distanceKm: z.number(),
    createdAt: z.string(),
  })
  .meta({ id: "Alert" });
