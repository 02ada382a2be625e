import { z } from "zod";
import { GUIDE_SHELTERS, PARTNER_KINDS } from "../../../lib/partners.js";
import { PartnerPublicContact } from "../../admin/partners/schemas.js";
import { PageQuery } from "../../pagination.js";
import { queryNumber } from "../../schemas.js";

/** The radius GET /v1/safety/shelters takes by default: the one a lost report's owner is given shelters within. */
export const SHELTER_RADIUS_KM = GUIDE_SHELTERS.radiusKm;
export const MAX_SHELTER_RADIUS_KM = 100;

export const SheltersQuery = PageQuery.extend({
  lat: queryNumber(z.coerce.number().min(-90).max(90)),
  lon: queryNumber(z.coerce.number().min(-180).max(180)),
  radiusKm: queryNumber(z.coerce.number().gt(0).max(MAX_SHELTER_RADIUS_KM).default(SHELTER_RADIUS_KM)),
});
export type SheltersQuery = z.output<typeof SheltersQuery>;

/** The last item's distance (metres) and id: the next page starts past them. */
export const SheltersCursor = z.object({ d: z.number().min(0), id: z.uuid() });

export const NearbyShelter = z
  .object({
    id: z.uuid(),
    name: z.string(),
    kind: z.enum(PARTNER_KINDS),
    publicContact: PartnerPublicContact,
    distanceKm: z.number().describe("From the point asked about to the partner, rounded to 0.1 km."),
    strayHoldDays: z.number().int().describe("Days it holds a stray after intake before the animal may be rehomed."),
    inCustody: z
      .object({ dog: z.number().int(), cat: z.number().int(), other: z.number().int() })
      .describe("The animals it holds now (its open found reports no moderator hid), by species; other is every species but dog and cat."),
  })
  .meta({ id: "NearbyShelter" });
