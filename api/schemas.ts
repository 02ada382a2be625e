import { z } from "zod";
import { SPECIES } from "../lib/animals.js";
import { PARTNER_KINDS } from "../lib/partners.js";

/** Schemas shared by several modules: ids, points, timestamps, problems. Pagination: api/pagination.ts. */

export const Uuid = z.uuid();
export const IdParams = z.object({ id: z.uuid() });

export const Point = z.object({
  lat: z.number().min(-90).max(90),
  lon: z.number().min(-180).max(180),
});

export const Timestamp = z.iso.datetime({ offset: true });

export const Species = z.enum(SPECIES);

/**
 * A numeric query parameter, coerced from its text. A blank value (`lat=`,
 * `limit=`) is refused: plain coercion would read it as 0. The OpenAPI
 * document shows the inner number schema with its bounds, so a default goes
 * on the inner schema too.
 */
export function queryNumber<T extends z.ZodType<number, unknown>>(schema: T) {
  return z.preprocess((value, ctx) => {
    if (typeof value === "string" && value.trim() === "") {
      ctx.addIssue({ code: "custom", message: "must not be blank", input: value });
      return z.NEVER;
    }
    return value;
  }, schema);
}

export const Created = z.object({ id: z.uuid(), createdAt: z.string() });

export const Problem = z
  .looseObject({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
  })
  .meta({ id: "Problem" });

/** A shelter partner holding a found animal: its public contact (lib/partners.ts FoundReportPartner), public by design. */
export const FoundReportPartner = z
  .object({
    name: z.string(),
    kind: z.enum(PARTNER_KINDS),
    phone: z.string().optional(),
    email: z.string().optional(),
    address: z.string().optional(),
    website: z.string().optional(),
  })
  .meta({ id: "FoundReportPartner" });
