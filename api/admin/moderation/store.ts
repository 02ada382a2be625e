import { exactTime, type Queryable } from "../../../lib/db.js";
import { CONTACT_MESSAGE_TARGET_TYPE } from "../../../lib/moderation.js";
import type { TimeIdCursor } from "../../pagination.js";
import type { ModerationAction, ModerationItem, QueueStatus } from "./schemas.js";

export type ModerationRow = Omit<ModerationItem, "claimedAt" | "resolvedAt" | "createdAt"> & {
  claimedAt: Date | null;
  resolvedAt: Date | null;
  createdAt: Date;
  cursorAt: string;
};

type TargetType = ModerationItem["targetType"];
export type ContentState = "quarantined" | "removed";

const reportColumns = `m.id, m.reporter_id as "reporterId", m.target_type as "targetType", m.target_id as "targetId",
  m.reason, m.details, m.status, m.claimed_by as "claimedBy", m.claimed_at as "claimedAt",
  m.resolution, m.resolution_note as "resolutionNote", m.resolved_by as "resolvedBy", m.resolved_at as "resolvedAt",
  (select s.state from moderation_content_state s
    where s.target_type = m.target_type and s.target_id = m.target_id) as "contentState",
  m.created_at as "createdAt", ${exactTime("m.created_at")} as "cursorAt"`;

/** Unresolved items, oldest first (a queue). Returns limit + 1 rows for the page check. */
export async function listQueue(
  client: Queryable,
  statuses: QueueStatus[],
  limit: number,
  after: TimeIdCursor | null,
): Promise<ModerationRow[]> {
  const { rows } = await client.query<ModerationRow>(
    `select ${reportColumns}
     from moderation_report m
     where m.status = any($1::text[])
       and ($2::timestamptz is null or (m.created_at, m.id) > ($2::timestamptz, $3::uuid))
     order by m.created_at, m.id
     limit $4::int`,
    [statuses, after?.at ?? null, after?.id ?? null, limit + 1],
  );
  return rows;
}

export async function getReport(client: Queryable, id: string): Promise<ModerationRow | null> {
  const { rows } = await client.query<ModerationRow>(
    `select ${reportColumns} from moderation_report m where m.id = $1::uuid`,
    [id],
  );
  return rows[0] ?? null;
}

export async function lockReport(client: Queryable, id: string): Promise<ModerationRow | null> {
  const { rows } = await client.query<ModerationRow>(
    `select ${reportColumns} from moderation_report m where m.id = $1::uuid for update of m`,
    [id],
  );
  return rows[0] ?? null;
}

/** Claims an item the caller has locked (lockReport) and found unclaimed. */
export async function claimReport(client: Queryable, id: string, adminId: string): Promise<void> {
  await client.query(
    `update moderation_report set status = 'claimed', claimed_by = $2::text, claimed_at = now(), updated_at = now()
     where id = $1::uuid`,
    [id, adminId],
  );
}

export async function resolveReport(
  client: Queryable,
  id: string,
  adminId: string,
  action: Exclude<ModerationAction, "escalate">,
  note: string | null,
): Promise<void> {
  await client.query(
    `update moderation_report set
       status = 'resolved', resolution = $3::text, resolution_note = $4::text,
       resolved_by = $2::text, resolved_at = now(), updated_at = now()
     where id = $1::uuid`,
    [id, adminId, action, note],
  );
}

/** Back to the queue for someone more senior: the claim is released. */
export async function escalateReport(client: Queryable, id: string, note: string | null): Promise<void> {
  await client.query(
    `update moderation_report set
       status = 'escalated', claimed_by = null, claimed_at = null,
       resolution_note = $2::text, updated_at = now()
     where id = $1::uuid`,
    [id, note],
  );
}

/** One state per piece of content: the latest quarantine or remove decision wins. */
export async function applyContentState(
  client: Queryable,
  target: { targetType: TargetType; targetId: string },
  state: ContentState,
  reportId: string,
  adminId: string,
): Promise<void> {
  await client.query(
    `insert into moderation_content_state (target_type, target_id, state, moderation_report_id, applied_by)
     values ($1::text, $2::uuid, $3::text, $4::uuid, $5::text)
     on conflict (target_type, target_id) do update set
       state = excluded.state,
       moderation_report_id = excluded.moderation_report_id,
       applied_by = excluded.applied_by,
       applied_at = now()`,
    [target.targetType, target.targetId, state, reportId, adminId],
  );
}

/** Who wrote the content, when it was written by an account (an anonymous contact message was not). */
export async function contentAuthor(
  client: Queryable,
  target: { targetType: TargetType; targetId: string },
): Promise<string | null> {
  // Fixed SQL per target type; the author column is reporter_id, or uploader_id for a photo.
  const authorSql: Record<TargetType, string | null> = {
    lost_report: `select reporter_id as "authorId" from safety_lost_report where id = $1::uuid`,
    found_report: `select reporter_id as "authorId" from safety_found_report where id = $1::uuid`,
    sighting: `select reporter_id as "authorId" from safety_sighting where id = $1::uuid`,
    [CONTACT_MESSAGE_TARGET_TYPE]: null,
    photo: `select uploader_id as "authorId" from photo where id = $1::uuid`,
  };
  const sql = authorSql[target.targetType];
  if (!sql) return null;
  const { rows } = await client.query<{ authorId: string }>(sql, [target.targetId]);
  return rows[0]?.authorId ?? null;
}
