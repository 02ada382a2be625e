import type { Queryable } from "../../lib/db.js";
import type { Species } from "../../lib/animals.js";
import { EventType } from "../../lib/events.js";
import { coarsen, toWkt, type LatLon } from "../../lib/geo.js";
import { PHOTO_DELETE_TASK } from "../../jobs/photos/task.js";
import { recordEvent, recordEventBatch, type EventLog } from "../../lib/outbox.js";
import { partnerActorId, type PartnerDateFormat } from "../../lib/partners.js";
import { enqueueMany } from "../../jobs/queue.js";
import { expiryAfter, type ClosedReason } from "../../lib/report-lifecycle.js";

/** SQL of the partner API: logins and tokens, and the found reports a partner publishes. */

export interface LoginPartner {
  id: string;
  passwordHash: string;
  suspended: boolean;
}

export async function partnerByLoginEmail(client: Queryable, email: string): Promise<LoginPartner | null> {
  const { rows } = await client.query<LoginPartner>(
    `select id, password_hash as "passwordHash", suspended_at is not null as suspended from partner where lower(login_email) = lower($1::text)`,
    [email],
  );
  return rows[0] ?? null;
}

export async function insertToken(client: Queryable, tokenHash: Buffer, partnerId: string, ttlSeconds: number): Promise<void> {
  await client.query(
    `with gone as (delete from partner_token where partner_id = $2::uuid and expires_at < now())
     insert into partner_token (token_hash, partner_id, expires_at) values ($1::bytea, $2::uuid, now() + make_interval(secs => $3::int))`,
    [tokenHash, partnerId, ttlSeconds],
  );
}

/** The partner a caller acts as, from its token; what every authenticated partner call needs. */
export interface TokenPartner {
  id: string;
  name: string;
  suspended: boolean;
  dateFormat: PartnerDateFormat;
  lat: number;
  lon: number;
}

/**
 * A live token's partner, or null for an unknown or expired token, or one
 * issued before the partner's last suspension once it is restored. A
 * suspended partner's token still names it, so its calls are 403. One
 * primary-key read per call.
 */
export async function partnerOfToken(client: Queryable, tokenHash: Buffer): Promise<TokenPartner | null> {
  const { rows } = await client.query<TokenPartner>({
    name: "partner-of-token",
    text: `select p.id, p.name, p.suspended_at is not null as suspended, p.date_format as "dateFormat",
             st_y(p.location::geometry) as lat, st_x(p.location::geometry) as lon
           from partner_token t join partner p on p.id = t.partner_id
           where t.token_hash = $1::bytea and t.expires_at > now()
             and (p.suspended_at is not null or p.tokens_valid_after is null or t.created_at > p.tokens_valid_after)`,
    values: [tokenHash],
  });
  return rows[0] ?? null;
}

/** The animal as a found report stores it: columns it shares with any found report, and the partner's own fields. */
export interface PartnerAnimal {
  externalId: string;
  species: Species;
  breed: string | null;
  sex: string | null;
  microchipId: string | null;
  description: string | null;
  foundAt: Date;
  metadata: string | null;
  /** Fields a found report has no column for: name, displayId, size, weight (oz), altered, declawed, birthDate, a second chip, address. */
  animal: Record<string, unknown>;
}

/** A partner's animal as stored, with its report's id and status. */
export type StoredAnimal = PartnerAnimal & { id: string; status: AnimalRow["status"] };

const storedAnimalColumns = `id, status, partner_external_id as "externalId", species, breed, sex, microchip_id as "microchipId",
  description, found_at as "foundAt", partner_metadata::text as metadata, partner_animal as animal`;

/** The partner's open report for this external id, locked, or null. */
export async function lockOpenAnimal(client: Queryable, partnerId: string, externalId: string): Promise<StoredAnimal | null> {
  const { rows } = await client.query<StoredAnimal>(
    `select ${storedAnimalColumns}
     from safety_found_report
     where partner_id = $1::uuid and partner_external_id = $2::text and status = 'open'
     for update`,
    [partnerId, externalId],
  );
  return rows[0] ?? null;
}

/** One of the partner's animals by its id (open or not), locked, or null when it is unknown or another partner's. */
export async function lockAnimal(client: Queryable, partnerId: string, id: string): Promise<StoredAnimal | null> {
  const { rows } = await client.query<StoredAnimal>(
    `select ${storedAnimalColumns} from safety_found_report where id = $1::uuid and partner_id = $2::uuid for update`,
    [id, partnerId],
  );
  return rows[0] ?? null;
}

/**
 * A new found report in the partner's custody, at the partner's location,
 * with the same events.animal.found_reported.v1 a finder's report emits, so
 * matching and nearby alerts run for it. In the caller's transaction.
 */
export async function insertAnimal(
  client: Queryable,
  id: string,
  partner: { id: string; location: LatLon },
  animal: PartnerAnimal,
  ttlDays: number,
  log: EventLog,
): Promise<void> {
  const reporterId = partnerActorId(partner.id);
  const coarse = coarsen(partner.location);
  await client.query(
    `insert into safety_found_report (id, reporter_id, species, breed, colors, sex, microchip_id, found_at,
       location, filed_location, coarse_location, description, expires_at,
       partner_id, partner_external_id, partner_metadata, partner_animal)
     values ($1::uuid, $2::text, $3::text, $4::text, '{}', $5::text, $6::text, $7::timestamptz,
       $8::geography, $8::geography, $9::geography, $10::text, ${expiryAfter("$11::int")},
       $12::uuid, $13::text, $14::json, $15::jsonb)`,
    [
      id,
      reporterId,
      animal.species,
      animal.breed,
      animal.sex,
      animal.microchipId,
      animal.foundAt.toISOString(),
      toWkt(partner.location),
      toWkt(coarse),
      animal.description,
      ttlDays,
      partner.id,
      animal.externalId,
      animal.metadata,
      JSON.stringify(animal.animal),
    ],
  );
  await recordEvent(
    client,
    EventType.AnimalFoundReported,
    { reportId: id, reporterId, species: animal.species, location: coarse, foundAt: animal.foundAt.toISOString() },
    log,
  );
}

/**
 * A re-publish or an update (PATCH): the report takes the fields it has now.
 * When a field that matters to matching changed (species, breed, sex, size,
 * chip, dates, description), it emits report_updated (what a finder's PATCH
 * emits), so matching runs again. Returns the changed fields.
 */
export async function updateAnimal(
  client: Queryable,
  current: StoredAnimal,
  partner: { id: string; location: LatLon },
  animal: PartnerAnimal,
  log: EventLog,
): Promise<string[]> {
  const changed: string[] = [];
  const differs = (name: string, a: unknown, b: unknown) => {
    if (JSON.stringify(a ?? null) !== JSON.stringify(b ?? null)) changed.push(name);
  };
  differs("animal.species", current.species, animal.species);
  differs("animal.breed", current.breed, animal.breed);
  differs("animal.sex", current.sex, animal.sex);
  differs("animal.microchipId", current.microchipId, animal.microchipId);
  differs("animal.size", current.animal.size, animal.animal.size);
  differs("animal.birthDate", current.animal.birthDate, animal.animal.birthDate);
  differs("description", current.description, animal.description);
  differs("foundAt", current.foundAt.toISOString(), animal.foundAt.toISOString());
  await client.query(
    `update safety_found_report set species = $2::text, breed = $3::text, sex = $4::text, microchip_id = $5::text,
       description = $6::text, found_at = $7::timestamptz, partner_metadata = $8::json, partner_animal = $9::jsonb,
       partner_external_id = $10::text, updated_at = now()
     where id = $1::uuid`,
    [
      current.id,
      animal.species,
      animal.breed,
      animal.sex,
      animal.microchipId,
      animal.description,
      animal.foundAt.toISOString(),
      animal.metadata,
      JSON.stringify(animal.animal),
      animal.externalId,
    ],
  );
  if (changed.length > 0) {
    await recordEvent(
      client,
      EventType.ReportUpdated,
      {
        reportKind: "found",
        reportId: current.id,
        reporterId: partnerActorId(partner.id),
        changed,
        species: animal.species,
        location: coarsen(partner.location),
      },
      log,
    );
  }
  return changed;
}

export interface AnimalRow {
  id: string;
  externalId: string;
  displayId: string | null;
  status: "open" | "reunited" | "closed" | "cancelled";
  closedReason: ClosedReason | null;
  foundAt: Date;
  metadata: string | null;
}

const animalColumns = `r.id, r.partner_external_id as "externalId", r.partner_animal->>'displayId' as "displayId", r.status,
  r.closed_reason as "closedReason", r.found_at as "foundAt", r.partner_metadata::text as metadata`;

/** The partner's open animals, oldest first (what ASM3 pages through with limit and offset), and how many there are. */
export async function listOpenAnimals(client: Queryable, partnerId: string, limit: number, offset: number): Promise<{ rows: AnimalRow[]; total: number }> {
  const { rows } = await client.query<AnimalRow & { total: number }>(
    `select ${animalColumns}, count(*) over ()::int as total
     from safety_found_report r
     where r.partner_id = $1::uuid and r.status = 'open'
     order by r.created_at, r.id
     limit $2::int offset $3::int`,
    [partnerId, limit, offset],
  );
  let total = rows[0]?.total;
  if (total === undefined) {
    // An offset past the end still reports the total.
    const count = await client.query<{ n: number }>(
      `select count(*)::int as n from safety_found_report where partner_id = $1::uuid and status = 'open'`,
      [partnerId],
    );
    total = count.rows[0]!.n;
  }
  return { rows: rows.map(({ total: _total, ...row }) => row), total };
}

/** One of the partner's animals (open or not), or null when it is unknown or another partner's. With `lock`, the row is locked. */
export async function getAnimal(client: Queryable, partnerId: string, id: string, lock = false): Promise<AnimalRow | null> {
  const { rows } = await client.query<AnimalRow>(
    `select ${animalColumns} from safety_found_report r where r.id = $1::uuid and r.partner_id = $2::uuid${lock ? " for update" : ""}`,
    [id, partnerId],
  );
  return rows[0] ?? null;
}

export interface PhotoFetchRow {
  id: string;
  url: string;
  status: "fetching" | "fetched" | "failed";
  failureReason: string | null;
  photoStatus: "processing" | "ready" | "failed" | "deleted" | null;
  photoFailureReason: string | null;
}

export async function photoFetches(client: Queryable, foundReportId: string): Promise<PhotoFetchRow[]> {
  const { rows } = await client.query<PhotoFetchRow>(
    `select f.id, f.url, f.status, f.failure_reason as "failureReason", p.status as "photoStatus", p.failure_reason as "photoFailureReason"
     from partner_photo_fetch f left join photo p on p.id = f.photo_id
     where f.found_report_id = $1::uuid
     order by f.created_at, f.id`,
    [foundReportId],
  );
  return rows;
}

/** Photos the report has or is fetching: its live photos, and fetches not yet turned into one. */
export async function countPhotos(client: Queryable, foundReportId: string): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    `select (select count(*) from photo where found_report_id = $1::uuid and status <> 'deleted')
          + (select count(*) from partner_photo_fetch where found_report_id = $1::uuid and status = 'fetching') as n`,
    [foundReportId],
  );
  return Number(rows[0]!.n);
}

/** One fetch per URL, in the order given, all of one batch; returns their ids in that order. */
export async function insertPhotoFetches(client: Queryable, partnerId: string, foundReportId: string, batchId: string, urls: string[]): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `insert into partner_photo_fetch (partner_id, found_report_id, batch_id, url, created_at)
     select $1::uuid, $2::uuid, $3::uuid, u.url, clock_timestamp() from unnest($4::text[]) with ordinality as u(url, i) order by u.i
     returning id`,
    [partnerId, foundReportId, batchId, urls],
  );
  return rows.map((row) => row.id);
}

/**
 * Removes the animal's photos, as the photo DELETE of its uploader does:
 * each live photo is marked deleted with its photo_deleted event (which
 * re-runs matching) and a photo__delete_objects job for its stored original
 * and variants; and the animal's fetches go, a waiting one included (its job
 * then finds nothing to do), so what remains is no photo at all and the
 * 5-photo cap counts the next batch alone. In the caller's transaction.
 */
export async function deletePartnerPhotos(client: Queryable, partnerId: string, foundReportId: string, log: EventLog): Promise<number> {
  const uploaderId = partnerActorId(partnerId);
  const { rows } = await client.query<{ id: string }>(
    `update photo set status = 'deleted', deleted_at = now(), deleted_by = $2::text, updated_at = now()
     where found_report_id = $1::uuid and uploader_id = $2::text and status <> 'deleted'
     returning id`,
    [foundReportId, uploaderId],
  );
  await client.query(`delete from partner_photo_fetch where found_report_id = $1::uuid and partner_id = $2::uuid`, [foundReportId, partnerId]);
  if (rows.length === 0) return 0;
  await recordEventBatch(
    client,
    EventType.PhotoDeleted,
    rows.map((row) => ({ photoId: row.id, uploaderId, parentType: "found_report" as const, parentId: foundReportId, deletedBy: uploaderId })),
    log,
  );
  await enqueueMany(client, rows.map((row) => ({ task: PHOTO_DELETE_TASK, payload: { photoId: row.id } })));
  return rows.length;
}
