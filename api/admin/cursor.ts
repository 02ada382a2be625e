import { z } from "zod";
import { decodeCursor, encodeCursor, Timestamp } from "../schemas.js";

/**
 * Keyset cursors on (timestamp, id) for the admin listings. The timestamp
 * travels as Postgres' own microsecond text: a JavaScript Date keeps only
 * milliseconds, and a truncated key would repeat or skip rows at a page edge.
 */
export const TimeIdCursor = z.object({ at: Timestamp, id: z.uuid() });
export type TimeIdCursor = z.output<typeof TimeIdCursor>;

/** A select-list expression giving `column` as exact UTC text, for the cursor. */
export const exactTime = (column: string) =>
  `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export function decodeTimeIdCursor(cursor: string | undefined): TimeIdCursor | null {
  return decodeCursor(cursor, TimeIdCursor);
}

/**
 * Stores fetch limit + 1 rows; the extra row only says that another page
 * exists, so a last page that happens to be full gets no dangling cursor.
 */
export function toPage<R extends { cursorAt: string; id: string }, T>(
  rows: R[],
  limit: number,
  toItem: (row: R) => T,
): { items: T[]; nextCursor: string | null } {
  const pageRows = rows.slice(0, limit);
  const last = pageRows[pageRows.length - 1];
  return {
    items: pageRows.map(toItem),
    nextCursor: rows.length > limit && last ? encodeCursor({ at: last.cursorAt, id: last.id }) : null,
  };
}
