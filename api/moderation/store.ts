import type { Queryable } from "../../lib/db.js";
import { CONTACT_MESSAGE_TARGET_TYPE } from "../../lib/moderation.js";
import type { CreateModerationReportBody, ModerationTargetType } from "./schemas.js";

// Fixed identifiers per target type; nothing caller-supplied is interpolated.
const targetExistsSql: Record<ModerationTargetType, string> = {
  lost_report: `select 1 from safety_lost_report where id = $1::uuid`,
  found_report: `select 1 from safety_found_report where id = $1::uuid`,
  sighting: `select 1 from safety_sighting where id = $1::uuid`,
  [CONTACT_MESSAGE_TARGET_TYPE]: `select 1 from safety_relay_message where id = $1::uuid`,
  photo: `select 1 from photo where id = $1::uuid and status <> 'deleted'`,
};

export async function targetExists(client: Queryable, type: ModerationTargetType, id: string): Promise<boolean> {
  const { rows } = await client.query(targetExistsSql[type], [id]);
  return rows.length > 0;
}

export async function insertModerationReport(
  client: Queryable,
  reporterId: string,
  body: CreateModerationReportBody,
): Promise<string> {
  const { rows } = await client.query<{ id: string }>(
    `insert into moderation_report (reporter_id, target_type, target_id, reason, details)
     values ($1::text, $2::text, $3::uuid, $4::text, $5::text)
     returning id`,
    [reporterId, body.targetType, body.targetId, body.reason, body.details ?? null],
  );
  return rows[0]!.id;
}
