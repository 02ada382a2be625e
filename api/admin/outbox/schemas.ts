import { z } from "zod";
import { page, PageQuery } from "../../pagination.js";

const unitSeconds = { s: 1, m: 60, h: 3600, d: 86_400 } as const;
const MAX_OLDER_THAN_SECONDS = 30 * 86_400;

/** A duration such as 90s, 5m, 1h or 2d, in seconds. */
export const Duration = z
  .string()
  .regex(/^\d{1,7}[smhd]$/, "must be a whole number followed by s, m, h or d, such as 90s, 5m or 1h")
  .transform((value) => Number(value.slice(0, -1)) * unitSeconds[value.slice(-1) as keyof typeof unitSeconds])
  .refine((seconds) => seconds <= MAX_OLDER_THAN_SECONDS, "must be at most 30d");

export const StuckQuery = PageQuery.extend({ olderThan: Duration.prefault("5m") });

export const StuckEvent = z
  .object({
    id: z.uuid(),
    type: z.string(),
    occurredAt: z.string(),
    ageSeconds: z.number().int(),
    requeueCount: z.number().int(),
    payload: z.record(z.string(), z.unknown()),
  })
  .meta({ id: "StuckOutboxEvent" });

export const StuckEventPage = page(StuckEvent);

export const RequeueResult = z
  .object({ id: z.uuid(), published: z.boolean(), requeueCount: z.number().int() })
  .meta({ id: "OutboxRequeueResult" });
