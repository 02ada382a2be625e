import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONTENT_STATES, MODERATION_TARGET_TYPES } from "../../lib/moderation.js";
import { CHANNELS, NOTIFICATION_KINDS, NOTIFICATION_STATUSES } from "../../lib/notifications.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/** The quoted values of the check constraint on table.column, from Postgres' own text of it. */
async function allowedValues(table: string, column: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ def: string }>(
    `select pg_get_constraintdef(c.oid) as def
     from pg_constraint c
     join pg_attribute a on a.attrelid = c.conrelid and a.attnum = any(c.conkey)
     where c.conrelid = $1::regclass and c.contype = 'c' and a.attname = $2`,
    [table, column],
  );
  expect(rows, `one check constraint on ${table}.${column}`).toHaveLength(1);
  return [...rows[0]!.def.matchAll(/'([^']+)'::text/g)].map((m) => m[1]!).sort();
}

describe("the notification contract in lib/notifications.ts and the schema's check constraints agree", () => {
  it("channels", async () => {
    expect(await allowedValues("notification", "channel")).toEqual([...CHANNELS].sort());
  });

  it("statuses", async () => {
    expect(await allowedValues("notification", "status")).toEqual([...NOTIFICATION_STATUSES].sort());
  });

  it("kinds", async () => {
    expect(await allowedValues("notification", "kind")).toEqual([...NOTIFICATION_KINDS].sort());
  });
});

describe("the moderation vocabulary in lib/moderation.ts and the schema's check constraints agree", () => {
  it("target types, in both moderation tables", async () => {
    expect(await allowedValues("moderation_report", "target_type")).toEqual([...MODERATION_TARGET_TYPES].sort());
    expect(await allowedValues("moderation_content_state", "target_type")).toEqual([...MODERATION_TARGET_TYPES].sort());
  });

  it("content states", async () => {
    expect(await allowedValues("moderation_content_state", "state")).toEqual([...CONTENT_STATES].sort());
  });
});
