import type { Queryable } from "../../../lib/db.js";
import { coarsen, toWkt, type LatLon } from "../../../lib/geo.js";
import { reportTable, type ReportKind } from "../../../lib/report-lifecycle.js";

/** A reporter's edit, as the PATCH bodies give it: `time` is lastSeenAt or foundAt. */
export interface ReportPatch {
  animal?: Record<string, unknown>;
  time?: string;
  location?: LatLon;
  description?: string | null;
}

/** The column and SQL type of each editable animal field (names are never taken from the request). */
const animalColumns: Record<string, [column: string, type: string]> = {
  name: ["animal_name", "text"],
  species: ["species", "text"],
  breed: ["breed", "text"],
  colors: ["colors", "text[]"],
  sex: ["sex", "text"],
  microchipId: ["microchip_id", "text"],
  distinguishingMarks: ["distinguishing_marks", "text"],
};
const timeColumn: Record<ReportKind, [column: string, field: string]> = {
  lost: ["last_seen_at", "lastSeenAt"],
  found: ["found_at", "foundAt"],
};

/**
 * The point the report was first filed at, as a PATCH counts a move from it:
 * filed_location, or for a row written without one (outside the API) its
 * location, which its first move pins (patchReport).
 */
const filedPoint = "coalesce(filed_location, location)";

/** How far (km) the point the report was first filed at is from `point`; null when the report does not exist. */
export async function distanceFromFiledKm(client: Queryable, kind: ReportKind, id: string, point: LatLon): Promise<number | null> {
  const { rows } = await client.query<{ km: number }>(
    `select st_distance(${filedPoint}, $2::geography) / 1000 as km from ${reportTable[kind]} where id = $1::uuid`,
    [id, toWkt(point)],
  );
  return rows[0]?.km ?? null;
}

/**
 * Applies the edit in one update (the caller holds the row lock) and
 * returns the names of the fields it set, as the event lists them; empty
 * when the edit sets nothing, and then nothing is written.
 */
export async function patchReport(client: Queryable, kind: ReportKind, id: string, patch: ReportPatch): Promise<string[]> {
  const sets: string[] = [];
  const values: unknown[] = [id];
  const changed: string[] = [];
  const set = (column: string, type: string, value: unknown) => {
    values.push(value);
    sets.push(`${column} = $${values.length}::${type}`);
  };
  for (const [field, value] of Object.entries(patch.animal ?? {})) {
    const target = animalColumns[field];
    if (value === undefined || !target) continue;
    set(target[0], target[1], value);
    changed.push(`animal.${field}`);
  }
  if (patch.time !== undefined) {
    const [column, field] = timeColumn[kind];
    set(column, "timestamptz", patch.time);
    changed.push(field);
  }
  if (patch.location !== undefined) {
    // The right-hand side reads the row as it was: a row without a filed point keeps the one it moves from.
    sets.push(`filed_location = ${filedPoint}`);
    set("location", "geography", toWkt(patch.location));
    set("coarse_location", "geography", toWkt(coarsen(patch.location)));
    changed.push("location");
  }
  if (patch.description !== undefined) {
    set("description", "text", patch.description);
    changed.push("description");
  }
  if (sets.length === 0) return [];
  await client.query(`update ${reportTable[kind]} set ${sets.join(", ")}, updated_at = now() where id = $1::uuid`, values);
  return changed;
}
