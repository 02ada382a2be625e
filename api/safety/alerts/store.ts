import type { Species } from "../../../lib/animals.js";
import type { Queryable } from "../../../lib/db.js";
import { toWkt } from "../../../lib/geo.js";
import { moderationStateOf } from "../sql.js";
import type { AlertsQuery } from "./schemas.js";

export interface AlertRow {
  id: string;
  kind: "lost" | "found";
  species: Species;
  animalName: string | null;
  coarseLat: number;
  coarseLon: number;
  distanceM: number;
  createdAt: Date;
}

/**
 * Open, unmoderated reports whose coarse point lies within the radius,
 * nearest first, keyset-paginated on (distance, id). Only coarse_location is
 * ever compared, so neither the radius nor the distance can be bisected down
 * to a precise point. ST_DWithin on each table's partial GiST index (the
 * index test EXPLAINs this very text).
 */
export const ALERTS_SQL = `with origin as (select $1::geography as pt),
     candidates as (
       select r.id, 'lost' as kind, r.species, r.animal_name as "animalName", r.coarse_location, r.created_at,
              st_distance(r.coarse_location, o.pt) as distance_m
       from safety_lost_report r, origin o
       where $3::text in ('lost', 'all')
         and r.status = 'open'
         and st_dwithin(r.coarse_location, o.pt, $2::double precision)
         and ($4::text is null or r.species = $4::text)
         and ${moderationStateOf("lost_report", "r.id")} is null
       union all
       select r.id, 'found' as kind, r.species, null as "animalName", r.coarse_location, r.created_at,
              st_distance(r.coarse_location, o.pt) as distance_m
       from safety_found_report r, origin o
       where $3::text in ('found', 'all')
         and r.status = 'open'
         and st_dwithin(r.coarse_location, o.pt, $2::double precision)
         and ($4::text is null or r.species = $4::text)
         and ${moderationStateOf("found_report", "r.id")} is null
     )
     select id, kind, species, "animalName",
       st_y(coarse_location::geometry) as "coarseLat", st_x(coarse_location::geometry) as "coarseLon",
       distance_m as "distanceM", created_at as "createdAt"
     from candidates
     where $5::double precision is null or (distance_m, id) > ($5::double precision, $6::uuid)
     order by distance_m, id
     limit $7::int`;

/** The parameters of ALERTS_SQL, in order. */
export function alertsValues(query: AlertsQuery, after: { d: number; id: string } | null, limit: number): unknown[] {
  return [
    toWkt({ lat: query.lat, lon: query.lon }),
    query.radiusKm * 1000,
    query.kind,
    query.species ?? null,
    after?.d ?? null,
    after?.id ?? null,
    limit,
  ];
}

export async function findAlerts(
  client: Queryable,
  query: AlertsQuery,
  after: { d: number; id: string } | null,
  limit: number,
): Promise<AlertRow[]> {
  const { rows } = await client.query<AlertRow>(ALERTS_SQL, alertsValues(query, after, limit));
  return rows;
}

