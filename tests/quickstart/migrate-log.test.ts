import { execFile } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import pg from "pg";
import { databaseUrlFor } from "../setup/global-setup.js";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
const database = `ass_migrate_log_${process.pid}`;
const committed = readdirSync(path.join(root, "migrations/committed"))
  .filter((f) => f.endsWith(".sql"))
  .map((f) => f.split(/[-.]/)[0]);
let admin: pg.Client;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
  await admin.connect();
  await admin.query(`create database ${database}`);
});

afterAll(async () => {
  await admin?.query(`drop database if exists ${database} with (force)`);
  await admin?.end();
});

async function migrateUp(): Promise<{ msg: string; applied: string[] }> {
  const env = { ...process.env, DATABASE_URL: databaseUrlFor(inject("adminDatabaseUrl"), database), LOG_LEVEL: "info", LOG_PRETTY: "false" };
  const { stdout } = await run(process.execPath, [path.join(root, "bin/api"), "migrate", "up"], { env, cwd: root });
  const lines = stdout.split("\n").flatMap((l) => (l.startsWith("{") ? [JSON.parse(l)] : []));
  return lines.find((l) => String(l.msg).startsWith("migrate: "));
}

describe("`api migrate up` says what it applied", () => {
  it("names the migrations it applied, then says up to date when none was pending", async () => {
    const first = await migrateUp();
    expect(first.msg).toBe(`migrate: applied ${committed.join(", ")}`);
    expect(first.applied).toEqual(committed);
    const second = await migrateUp();
    expect(second.msg).toBe("migrate: up to date");
    expect(second.applied).toEqual([]);
  });
});
