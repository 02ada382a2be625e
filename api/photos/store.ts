import type { Queryable } from "../../lib/db.js";
import type { ImageType } from "../../lib/images/index.js";
import { lockObjectKeys, PHOTO_PARENT_COLUMN, type PhotoParent, type PhotoParentType, type PhotoStatus } from "../../lib/photos.js";

/** SQL of the photo table for the API: the parent checks of an upload, serving, delete and the view listings. */

// Fixed SQL per parent type; nothing caller-supplied is interpolated.
const parentOwnerSql: Record<PhotoParentType, string> = {
  lost_report: `select reporter_id as "ownerId" from safety_lost_report where id = $1::uuid`,
  found_report: `select reporter_id as "ownerId" from safety_found_report where id = $1::uuid`,
  animal: `select owner_id as "ownerId" from animal where id = $1::uuid`,
};

/** Who owns the report (its reporter) or animal (its owner); null when it does not exist. With `lock`, the row is locked. */
export async function parentOwner(client: Queryable, parent: PhotoParent, lock = false): Promise<string | null> {
  const { rows } = await client.query<{ ownerId: string }>(parentOwnerSql[parent.type] + (lock ? " for update" : ""), [parent.id]);
  return rows[0]?.ownerId ?? null;
}

/** Photos that count toward the per-parent cap: processing, ready and failed ones. */
export async function countLivePhotos(client: Queryable, parent: PhotoParent): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    `select count(*)::int as n from photo where ${PHOTO_PARENT_COLUMN[parent.type]} = $1::uuid and status <> 'deleted'`,
    [parent.id],
  );
  return rows[0]!.n;
}

export interface NewPhoto {
  id: string;
  uploaderId: string;
  parent: PhotoParent;
  sha256: string;
  type: ImageType;
  bytes: number;
}

export async function insertPhoto(client: Queryable, photo: NewPhoto): Promise<void> {
  await client.query(
    `insert into photo (id, uploader_id, ${PHOTO_PARENT_COLUMN[photo.parent.type]}, original_sha256, original_type, original_bytes)
     values ($1::uuid, $2::text, $3::uuid, $4::text, $5::text, $6::int)`,
    [photo.id, photo.uploaderId, photo.parent.id, photo.sha256, photo.type, photo.bytes],
  );
}

export interface PhotoRow {
  id: string;
  uploaderId: string;
  parent: PhotoParent;
  /** Who owns the report or animal (the uploader, as only they can upload). */
  ownerId: string;
  status: PhotoStatus;
  failureReason: string | null;
  thumbKey: string | null;
  displayKey: string | null;
  width: number | null;
  height: number | null;
  attempts: number;
  createdAt: Date;
  readyAt: Date | null;
  /** The photo's own moderation state. */
  moderationState: "quarantined" | "removed" | null;
  /**
   * Whether anyone may see it: its report is not quarantined or removed, and
   * an animal's photo has a live emergency profile (the animal's only public
   * page). The photo's own state is separate.
   */
  parentPublic: boolean;
}

const photoColumns = `p.id, p.uploader_id as "uploaderId",
  case when p.lost_report_id is not null then json_build_object('type', 'lost_report', 'id', p.lost_report_id)
       when p.found_report_id is not null then json_build_object('type', 'found_report', 'id', p.found_report_id)
       else json_build_object('type', 'animal', 'id', p.animal_id) end as parent,
  coalesce(lr.reporter_id, fr.reporter_id, a.owner_id) as "ownerId",
  p.status, p.failure_reason as "failureReason", p.thumb_key as "thumbKey", p.display_key as "displayKey",
  p.width, p.height, p.attempts, p.created_at as "createdAt", p.ready_at as "readyAt",
  (select m.state from moderation_content_state m where m.target_type = 'photo' and m.target_id = p.id) as "moderationState",
  case when p.animal_id is not null
       then exists (select from emergency_profile e where e.animal_id = p.animal_id and e.revoked_at is null and e.token_hash is not null)
       else not exists (select from moderation_content_state m
                        where (m.target_type = 'lost_report' and m.target_id = p.lost_report_id)
                           or (m.target_type = 'found_report' and m.target_id = p.found_report_id))
  end as "parentPublic"`;

const photoFrom = `photo p
  left join safety_lost_report lr on lr.id = p.lost_report_id
  left join safety_found_report fr on fr.id = p.found_report_id
  left join animal a on a.id = p.animal_id`;

/**
 * Every variant GET runs this (serve.ts): a named statement, so it is planned
 * once per connection; planning it took 0.6-2.7 ms, running it 0.1-0.3 ms.
 */
export async function getPhoto(client: Queryable, id: string): Promise<PhotoRow | null> {
  const { rows } = await client.query<PhotoRow>({ name: "photo-get", text: `select ${photoColumns} from ${photoFrom} where p.id = $1::uuid`, values: [id] });
  return rows[0] ?? null;
}

/** Locks the photo row for a delete; the same fields as getPhoto. */
export async function lockPhoto(client: Queryable, id: string): Promise<PhotoRow | null> {
  const { rows } = await client.query<PhotoRow>(`select ${photoColumns} from ${photoFrom} where p.id = $1::uuid for update of p`, [id]);
  return rows[0] ?? null;
}

export async function markDeleted(client: Queryable, id: string, deletedBy: string): Promise<void> {
  await client.query(
    `update photo set status = 'deleted', deleted_at = now(), deleted_by = $2::text, updated_at = now() where id = $1::uuid`,
    [id, deletedBy],
  );
}

/** A ready photo as the report, animal and emergency views list it. */
export interface ReadyPhoto {
  id: string;
  width: number;
  height: number;
  createdAt: Date;
  moderationState: "quarantined" | "removed" | null;
}

/**
 * The ready photos of one report or animal, oldest first: what its views
 * list (photoView in views.ts turns each into URLs), and what the tag page
 * shows. Photos a moderator quarantined or removed are left out unless
 * `includeModerated` (the owner's and admins' views, which mark them).
 */
export async function readyPhotos(
  client: Queryable,
  parent: { lostReportId: string } | { foundReportId: string } | { animalId: string },
  { includeModerated = false } = {},
): Promise<ReadyPhoto[]> {
  const [column, id] =
    "lostReportId" in parent
      ? [PHOTO_PARENT_COLUMN.lost_report, parent.lostReportId]
      : "foundReportId" in parent
        ? [PHOTO_PARENT_COLUMN.found_report, parent.foundReportId]
        : [PHOTO_PARENT_COLUMN.animal, parent.animalId];
  const { rows } = await client.query<ReadyPhoto>(
    `select * from (
       select p.id, p.width, p.height, p.created_at as "createdAt",
         (select m.state from moderation_content_state m where m.target_type = 'photo' and m.target_id = p.id) as "moderationState"
       from photo p
       where p.${column} = $1::uuid and p.status = 'ready'
       order by p.created_at, p.id) r
     where $2::boolean or r."moderationState" is null`,
    [id, includeModerated],
  );
  return rows;
}

const unmoderatedReadyOfAnimal = `p.animal_id = $1::uuid and p.status = 'ready'
  and not exists (select from moderation_content_state m where m.target_type = 'photo' and m.target_id = p.id)`;

/**
 * Gives a lost report made from an animal (POST /v1/animals/{id}/lost) the
 * animal's ready photos that no moderator hid: new photo rows naming the same
 * content-addressed variants, so no byte is copied, keeping each photo's
 * dimensions, hash and times (and so their order). Each copy is a photo of
 * its own from then on: deleted, moderated or served on its own, and its
 * objects stay while either row needs them. In the caller's transaction, under
 * the variant keys' locks: a delete job removing one of these photos' objects
 * either finishes first (the photo is then no longer ready and is left out)
 * or waits and then sees the copy needing them. Returns how many were carried.
 */
export async function carryAnimalPhotos(client: Queryable, animalId: string, lostReportId: string): Promise<number> {
  const { rows } = await client.query<{ thumbKey: string; displayKey: string }>(
    `select p.thumb_key as "thumbKey", p.display_key as "displayKey" from photo p where ${unmoderatedReadyOfAnimal}`,
    [animalId],
  );
  if (rows.length === 0) return 0;
  const keys = rows.flatMap((r) => [r.thumbKey, r.displayKey]);
  await lockObjectKeys(client, keys);
  // Read again under the locks, and only photos whose keys are locked (one made ready meanwhile is not).
  const { rowCount } = await client.query(
    `insert into photo (uploader_id, lost_report_id, status, original_sha256, original_type, original_bytes,
       thumb_key, display_key, width, height, phash, attempts, created_at, updated_at, ready_at)
     select p.uploader_id, $2::uuid, 'ready', p.original_sha256, p.original_type, p.original_bytes,
       p.thumb_key, p.display_key, p.width, p.height, p.phash, p.attempts, p.created_at, now(), p.ready_at
     from photo p
     where ${unmoderatedReadyOfAnimal} and p.thumb_key = any($3::text[]) and p.display_key = any($3::text[])`,
    [animalId, lostReportId, keys],
  );
  return rowCount ?? 0;
}
