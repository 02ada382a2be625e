import { z } from "zod";
import { page, PageQuery } from "../../pagination.js";
import { Timestamp } from "../../schemas.js";

const filter = z.string().trim().min(1).max(200).optional();

export const AuditEventsQuery = PageQuery.extend({
  actorId: filter,
  action: filter,
  objectType: filter,
  objectId: filter,
  from: Timestamp.optional(),
  to: Timestamp.optional(),
}).refine((q) => q.from === undefined || q.to === undefined || Date.parse(q.from) <= Date.parse(q.to), {
  message: "must not be before from",
  path: ["to"],
});

export type AuditEventsFilter = Pick<
  z.output<typeof AuditEventsQuery>,
  "actorId" | "action" | "objectType" | "objectId" | "from" | "to"
>;

export const AuditEventItem = z
  .object({
    id: z.uuid(),
    actorId: z.string(),
    action: z.string(),
    objectType: z.string(),
    objectId: z.string(),
    occurredAt: z.string(),
    metadata: z.record(z.string(), z.unknown()),
  })
  .meta({ id: "AuditEvent" });

export const AuditEventPage = page(AuditEventItem);
