import { HOUR, takeBucketToken, type BucketSpec } from "../../lib/buckets.js";
import { clientAddressKey } from "../../lib/client-address.js";
import type { Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import type { LatLon } from "../../lib/geo.js";
import { recordEvent, type EventLog } from "../../lib/outbox.js";
import { problems } from "../../lib/problems.js";
import { claimScanNotification, insertScan, shareScanLocation } from "../animals/scans-store.js";
import type { TagRow } from "./store.js";

/**
 * Tag page views recorded per client address (clientAddressKey: an IPv6
 * client by its /64): 30 at once, refilled at 30 an hour.
 * A finder reloading the page never meets it; a script flooding one owner's
 * scan log does. Kept in Postgres like the contact messages' limit, so it holds across
 * API instances.
 */
export function tagScanBucket(clientKey: string): BucketSpec {
  return { key: `tag-scan:${clientKey}`, capacity: 30, refillPerSecond: 30 / HOUR };
}

/** Tells the owner of one scan unless the tag already told them in the last 10 minutes. */
async function notifyOwner(
  client: Queryable,
  tag: TagRow,
  scan: { id: string; scannedAt: Date },
  location: LatLon | null,
  log: EventLog,
): Promise<boolean> {
  if (!(await claimScanNotification(client, tag.animalId))) return false;
  await recordEvent(
    client,
    EventType.TagScanned,
    {
      animalId: tag.animalId,
      recipientActorId: tag.ownerId,
      animalName: tag.animalName,
      scanId: scan.id,
      scannedAt: scan.scannedAt.toISOString(),
      location,
    },
    log,
  );
  return true;
}

/**
 * One view of the tag page, in the caller's transaction: the per-address limit
 * (429 rate-limited), the scan row, and the owner's tag_scanned event for
 * the first scan in 10 minutes. Returns the scan id, which the page's form
 * carries so a location shared with the message lands on this scan.
 */
export async function recordScan(client: Queryable, tag: TagRow, clientIp: string, log: EventLog): Promise<string> {
  const wait = await takeBucketToken(client, tagScanBucket(clientAddressKey(clientIp)));
  if (wait > 0) throw problems.rateLimited(wait, "this address has opened tag pages too often");
  const scan = await insertScan(client, tag.animalId);
  await notifyOwner(client, tag, scan, null, log);
  return scan.id;
}

/**
 * The finder shared their location with a message: it is stored on their
 * scan (its grid-cell centre only), and when the tag has not notified the
 * owner in the last 10 minutes, tag_scanned goes out now, with the location.
 */
export async function shareLocation(
  client: Queryable,
  tag: TagRow,
  scanId: string,
  coarsePoint: LatLon,
  log: EventLog,
): Promise<void> {
  const scan = await shareScanLocation(client, tag.animalId, scanId, coarsePoint);
  if (scan) await notifyOwner(client, tag, scan, coarsePoint, log);
}
