import { exactTime, type Queryable } from "../../../lib/db.js";
import type { TimeIdCursor } from "../../pagination.js";
import type { AuditEventsFilter } from "./schemas.js";

export interface AuditEventRow {
  id: string;
  actorId: string;
  action: string;
  objectType: string;
  objectId: string;
  occurredAt: Date;
  metadata: Record<string, unknown>;
  cursorAt: string;
}

/** Newest first; `from` is inclusive and `to` exclusive. Returns limit + 1 rows for the page check. */
export async function listAuditEvents(
  client: Queryable,
  filter: AuditEventsFilter,
  limit: number,
  before: TimeIdCursor | null,
): Promise<AuditEventRow[]> {
  const { rows } = await client.query<AuditEventRow>(
    `select id, actor_id as "actorId", action, object_type as "objectType", object_id as "objectId",
            occurred_at as "occurredAt", metadata, ${exactTime("occurred_at")} as "cursorAt"
     from audit_event
     where ($1::text is null or actor_id = $1::text)
       and ($2::text is null or action = $2::text)
       and ($3::text is null or object_type = $3::text)
       and ($4::text is null or object_id = $4::text)
       and ($5::timestamptz is null or occurred_at >= $5::timestamptz)
       and ($6::timestamptz is null or occurred_at < $6::timestamptz)
       and ($7::timestamptz is null or (occurred_at, id) < ($7::timestamptz, $8::uuid))
     order by occurred_at desc, id desc
     limit $9::int`,
    [
      filter.actorId ?? null,
      filter.action ?? null,
      filter.objectType ?? null,
      filter.objectId ?? null,
      filter.from ?? null,
      filter.to ?? null,
      before?.at ?? null,
      before?.id ?? null,
      limit + 1,
    ],
  );
  return rows;
}
