import type { Queryable } from "../../../lib/db.js";
import { toWkt, type LatLon } from "../../../lib/geo.js";
import type { PartnerKind, PartnerPublicContact } from "../../../lib/partners.js";

/** SQL of the shelters near a point: shelter partners (any kind) that are not suspended, nearest first. */

export interface NearbyShelterRow {
  id: string;
  name: string;
  kind: PartnerKind;
  publicContact: PartnerPublicContact;
  strayHoldDays: number;
  /** Metres from the point, on the sphere: the sort key and the cursor's. */
  distanceM: number;
  inCustody: { dog: number; cat: number; other: number };
}

/**
 * Up to `limit` partners within `radiusKm` of `point`, nearest first (then
 * by id), past the cursor `after`. The radius filter takes the partner
 * location index; each partner's count of animals in custody reads its open
 * found reports.
 */
export async function sheltersNear(
  client: Queryable,
  point: LatLon,
  radiusKm: number,
  limit: number,
  after: { d: number; id: string } | null = null,
): Promise<NearbyShelterRow[]> {
  const { rows } = await client.query<NearbyShelterRow>({
    name: "shelters-near",
    text: `select s.id, s.name, s.kind, s."publicContact", s."strayHoldDays", s."distanceM",
         (select jsonb_build_object('dog', count(*) filter (where r.species = 'dog'), 'cat', count(*) filter (where r.species = 'cat'),
                                    'other', count(*) filter (where r.species not in ('dog', 'cat')))
          from safety_found_report r
          where r.partner_id = s.id and r.status = 'open'
            and not exists (select from moderation_content_state c where c.target_type = 'found_report' and c.target_id = r.id)) as "inCustody"
       from (
         select p.id, p.name, p.kind, jsonb_strip_nulls(p.public_contact) as "publicContact", p.stray_hold_days as "strayHoldDays",
           st_distance(p.location, $1::geography, false) as "distanceM"
         from partner p
         where p.suspended_at is null and st_dwithin(p.location, $1::geography, $2::float8 * 1000)
       ) s
       where $4::float8 is null or (s."distanceM", s.id) > ($4::float8, $5::uuid)
       order by s."distanceM", s.id
       limit $3::int`,
    values: [toWkt(point), radiusKm, limit, after?.d ?? null, after?.id ?? null],
  });
  return rows;
}
