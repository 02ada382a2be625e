import { exactTime, type Queryable } from "../../lib/db.js";
import { toWkt, type LatLon } from "../../lib/geo.js";
import type { TimeIdCursor } from "../pagination.js";
import { coarseColumns } from "../safety/sql.js";

/** The owner is told of a tag's scans at most once per this many minutes. */
export const SCAN_NOTIFY_MINUTES = 10;

export interface ScanRow {
  id: string;
  scannedAt: Date;
  cursorAt: string;
  coarseLat: number | null;
  coarseLon: number | null;
}

/** Records one view of an animal's tag page; nothing about the viewer is kept. */
export async function insertScan(client: Queryable, animalId: string): Promise<{ id: string; scannedAt: Date }> {
  const { rows } = await client.query<{ id: string; scannedAt: Date }>({
    name: "animal-scan-insert",
    text: `insert into animal_scan (animal_id) values ($1::uuid) returning id, scanned_at as "scannedAt"`,
    values: [animalId],
  });
  return rows[0]!;
}

/**
 * Claims the tag's notification slot: true for the first caller in a
 * 10-minute window. A conditional update on the profile row, so concurrent
 * scans (any number of API instances) give exactly one winner.
 */
export async function claimScanNotification(client: Queryable, animalId: string): Promise<boolean> {
  const { rowCount } = await client.query({
    name: "animal-scan-claim-notification",
    text: `update emergency_profile set scan_notified_at = now()
           where animal_id = $1::uuid
             and (scan_notified_at is null or scan_notified_at <= now() - make_interval(mins => $2::int))`,
    values: [animalId, SCAN_NOTIFY_MINUTES],
  });
  return rowCount === 1;
}

/**
 * Adds the finder's shared location (already a grid-cell centre) to a scan
 * of this animal's tag from the last hour that has none yet; returns the
 * scan, or null when there is no such scan (a stale, foreign or repeated id).
 */
export async function shareScanLocation(
  client: Queryable,
  animalId: string,
  scanId: string,
  coarsePoint: LatLon,
): Promise<{ id: string; scannedAt: Date } | null> {
  const { rows } = await client.query<{ id: string; scannedAt: Date }>(
    `update animal_scan set coarse_location = $3::geography, location_shared_at = now()
     where id = $2::uuid and animal_id = $1::uuid and coarse_location is null and scanned_at > now() - interval '1 hour'
     returning id, scanned_at as "scannedAt"`,
    [animalId, scanId, toWkt(coarsePoint)],
  );
  return rows[0] ?? null;
}

/** An animal's scans, newest first, keyset-paginated on (scanned_at, id). */
export async function listScans(client: Queryable, animalId: string, after: TimeIdCursor | null, limit: number): Promise<ScanRow[]> {
  const { rows } = await client.query<ScanRow>(
    `select s.id, s.scanned_at as "scannedAt", ${exactTime("s.scanned_at")} as "cursorAt", ${coarseColumns("s.coarse_location")}
     from animal_scan s
     where s.animal_id = $1::uuid
       and ($2::timestamptz is null or (s.scanned_at, s.id) < ($2::timestamptz, $3::uuid))
     order by s.scanned_at desc, s.id desc
     limit $4::int`,
    [animalId, after?.at ?? null, after?.id ?? null, limit],
  );
  return rows;
}
