import { execFile } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { databaseUrlFor } from "../setup/global-setup.js";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
// Inside the package, like dist/, so the compiled code finds migrations/ the same way.
const outDir = path.join(root, ".test-dist", String(process.pid));
const database = `ass_build_${process.pid}`;
const committedMigrations = readdirSync(path.join(root, "migrations/committed")).filter((f) => f.endsWith(".sql")).length;
let admin: pg.Client;

beforeAll(async () => {
  await run(process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", outDir], { cwd: root });
  admin = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
  await admin.connect();
  await admin.query(`create database ${database}`);
}, 120_000);

afterAll(async () => {
  await admin?.query(`drop database if exists ${database} with (force)`);
  await admin?.end();
  rmSync(outDir, { recursive: true, force: true });
});

describe("the compiled API binary (what `npm run build` ships) applies the migrations", () => {
  it("`migrate up` from the compiled code creates the schema and records it in schema_migrations", async () => {
    const url = databaseUrlFor(inject("adminDatabaseUrl"), database);
    await run(process.execPath, [path.join(outDir, "api/cli.js"), "migrate", "up"], { env: { ...process.env, DATABASE_URL: url } });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query(
        `select (select count(*)::int from schema_migrations) as applied,
                to_regclass('public.outbox_event') is not null as outbox,
                to_regproc('graphile_worker.add_job') is not null as worker`,
      );
      expect(rows[0]).toEqual({ applied: committedMigrations, outbox: true, worker: true });
    } finally {
      await client.end();
    }
  });
});
