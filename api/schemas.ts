import { z } from "zod";
import { problems } from "../lib/problems.js";

/** Schemas shared by several modules: ids, points, timestamps, pagination, problems. */

export const Uuid = z.uuid();
export const IdParams = z.object({ id: z.uuid() });

export const Point = z.object({
  lat: z.number().min(-90).max(90),
  lon: z.number().min(-180).max(180),
});

export const Timestamp = z.iso.datetime({ offset: true });

export const Species = z.enum(["dog", "cat", "bird", "rabbit", "other"]);

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

export const PageQuery = z.object({
  limit: queryNumber(z.coerce.number().int().min(1).max(200).default(50)),
  cursor: z.string().max(500).optional(),
});

export function page<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), nextCursor: z.string().nullable() });
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

/** Opaque cursors: base64url JSON of the last item's sort key. */
export function encodeCursor(key: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(key)).toString("base64url");
}

export function decodeCursor<T extends z.ZodType>(cursor: string | undefined, shape: T): z.output<T> | null {
  if (cursor === undefined) return null;
  try {
    const parsed = shape.safeParse(JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")));
    if (parsed.success) return parsed.data;
  } catch {
    // not base64url JSON: refused below like any other bad cursor
  }
  throw problems.validation("query.cursor: is not a cursor this listing issued", [
    { path: "query.cursor", message: "is not a cursor this listing issued" },
  ]);
}
