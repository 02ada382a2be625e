import { z } from "zod";
import { problems } from "../lib/problems.js";
import { queryNumber, Timestamp } from "./schemas.js";

/**
 * Keyset pagination, the one helper every listing uses (contract: `?limit=`
 * default 50, max 200, opaque `?cursor=`, `{items, nextCursor}`). A cursor is
 * base64url JSON of the last item's sort key.
 */

export const PageQuery = z.object({
  limit: queryNumber(z.coerce.number().int().min(1).max(200).default(50)),
  cursor: z.string().max(500).optional(),
});

export function page<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item), nextCursor: z.string().nullable() });
}

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

/**
 * The usual key: (timestamp, id). The timestamp travels as Postgres' own
 * microsecond text (lib/db.ts exactTime): a JavaScript Date keeps only
 * milliseconds, and a truncated key would repeat or skip rows at a page edge.
 */
export const TimeIdCursor = z.object({ at: Timestamp, id: z.uuid() });
export type TimeIdCursor = z.output<typeof TimeIdCursor>;

export function decodeTimeIdCursor(cursor: string | undefined): TimeIdCursor | null {
  return decodeCursor(cursor, TimeIdCursor);
}

const timeIdKey = (row: { cursorAt: string; id: string }) => ({ at: row.cursorAt, id: row.id });

/**
 * One page from the limit + 1 rows a store fetched: the extra row only says
 * that another page exists, so a last page that happens to be full gets no
 * dangling cursor. `keyOf` gives the last row's sort key (time and id by default).
 */
export function toPage<R, T>(
  rows: R[],
  limit: number,
  toItem: (row: R) => T,
  keyOf: (row: R) => Record<string, unknown> = timeIdKey as (row: R) => Record<string, unknown>,
): { items: T[]; nextCursor: string | null } {
  const pageRows = rows.slice(0, limit);
  const last = pageRows.at(-1);
  return {
    items: pageRows.map(toItem),
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor(keyOf(last)) : null,
  };
}
