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

/** What differs between the two report tables in the alerts query. */
const reportTables = {
  lost: { table: "safety_lost_report", target: "lost_report", animalName: "r.animal_name" },
  found: { table: "safety_found_report", target: "found_report", animalName: "null::text" },
} as const;

/**
 * One table's open, unmoderated reports within the radius, in two passes so
 * the cost grows with the page, not with the density around the point (in
 * `npm run bench`'s alerts scenario, 1,000,000 reports, a 25 km radius holds
 * ~2,300 rows: a single pass gave each a moderation lookup and a spheroid
 * distance before a top-N sort kept 50).
 * First, nearest-first through the GiST index (`<->`, KNN), the page's worth
 * of rows after the cursor: the largest of their exact distances, D, bounds
 * the page, because those rows alone already fill it. Then the exact query
 * over the disc of radius min(radius, D + 1 m) — the metre absorbs the
 * rounding between ST_Distance and ST_DWithin — ordered by exact distance.
 */
function reportsWithin(kind: keyof typeof reportTables, bySpecies: boolean): string {
  const { table, target, animalName } = reportTables[kind];
  const species = (alias: string) => (bySpecies ? `${alias}.species = $4::text` : "$4::text is null");
  const visible = (alias: string) => `$3::text in ('${kind}', 'all') and ${alias}.status = 'open'
         and ${species(alias)}
         and ${moderationStateOf(target, `${alias}.id`)} is null`;
  const pageBound = `(select max(st_distance(k.coarse_location, $1::geography)) + 1 from (
           select n.coarse_location from ${table} n
           where ${visible("n")}
             and ($5::double precision is null or (st_distance(n.coarse_location, $1::geography), n.id) > ($5::double precision, $6::uuid))
           order by n.coarse_location <-> $1::geography
           limit $7::int) k)`;
  return `select r.id, '${kind}' as kind, r.species, ${animalName} as "animalName", r.coarse_location, r.created_at,
         st_distance(r.coarse_location, $1::geography) as distance_m
       from ${table} r
       where ${visible("r")}
         and st_dwithin(r.coarse_location, $1::geography, least($2::double precision, ${pageBound}))`;
}

/**
 * Open, unmoderated reports whose coarse point lies within the radius,
 * nearest first, keyset-paginated on (distance, id). Only coarse_location is
 * ever compared, so neither the radius nor the distance can be bisected down
 * to a precise point. Each table is read through its partial GiST index (the
 * index test EXPLAINs this very text).
 */
const alertsSql = (bySpecies: boolean) => `with candidates as (
       ${reportsWithin("lost", bySpecies)}
       union all
       ${reportsWithin("found", bySpecies)}
     )
     select id, kind, species, "animalName",
       st_y(coarse_location::geometry) as "coarseLat", st_x(coarse_location::geometry) as "coarseLon",
       distance_m as "distanceM", created_at as "createdAt"
     from candidates
     where $5::double precision is null or (distance_m, id) > ($5::double precision, $6::uuid)
     order by distance_m, id
     limit $7::int`;

/**
 * Two texts, one per species filter, rather than `($4 is null or species =
 * $4)`: with the species fixed the nearest-first pass walks the species-led
 * index (migration 000007), so a rare species costs its own rows, not a walk
 * through every other species' reports.
 */
export const ALERTS_SQL = { anySpecies: alertsSql(false), bySpecies: alertsSql(true) } as const;
export const alertsSqlFor = (query: AlertsQuery) => (query.species ? ALERTS_SQL.bySpecies : ALERTS_SQL.anySpecies);

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
  const { rows } = await client.query<AlertRow>(alertsSqlFor(query), alertsValues(query, after, limit));
  return rows;
}

