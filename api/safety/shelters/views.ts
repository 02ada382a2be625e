import type { z } from "zod";
import type { Queryable } from "../../../lib/db.js";
import type { LatLon } from "../../../lib/geo.js";
import { GUIDE_SHELTERS } from "../../../lib/partners.js";
import type { NearbyShelter } from "./schemas.js";
import { sheltersNear, type NearbyShelterRow } from "./store.js";

/** A partner near a point; its contact is public by design (contract part 3), its precise location is not given. */
export const nearbyShelter = (row: NearbyShelterRow): z.input<typeof NearbyShelter> => ({
  id: row.id,
  name: row.name,
  kind: row.kind,
  publicContact: row.publicContact,
  distanceKm: Math.round(row.distanceM / 100) / 10,
  strayHoldDays: row.strayHoldDays,
  inCustody: row.inCustody,
});

/** The shelters a lost report's owner should call: the first five within 25 km of where the animal was last seen. */
export async function nearbySheltersOf(client: Queryable, point: LatLon): Promise<z.input<typeof NearbyShelter>[]> {
  return (await sheltersNear(client, point, GUIDE_SHELTERS.radiusKm, GUIDE_SHELTERS.limit)).map(nearbyShelter);
}
