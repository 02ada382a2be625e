import { readdir } from "node:fs/promises";
import path from "node:path";
import { migrate } from "graphile-migrate";
import { clearAllPools } from "graphile-migrate/dist/pg.js";
import { runMigrations } from "graphile-worker";
import pg from "pg";
import type { Queryable } from "./db.js";
import { packageRoot } from "./paths.js";

// Found from the package root, so the compiled code (dist/lib) finds it too.
const migrationsFolder = path.join(packageRoot(import.meta.dirname), "migrations");

async function committedMigrations(): Promise<string[]> {
  const files = (await readdir(path.join(migrationsFolder, "committed"))).filter((f) => f.endsWith(".sql")).sort();
  // graphile-migrate treats a missing folder as "nothing to do"; for us that is a broken install.
  if (files.length === 0) throw new Error(`no committed migrations in ${migrationsFolder}`);
  return files;
}

export interface MigrateUpResult {
  /** The migrations this run applied (`000001`, …), oldest first; empty when the database was up to date. */
  applied: string[];
}

/** Applies pending graphile-migrate migrations, then installs graphile-worker's schema. */
export async function migrateUp(databaseUrl: string): Promise<MigrateUpResult> {
  await committedMigrations();
  // Compared before and after, so the log names what this run applied rather than what was pending when it looked.
  const before = new Set(await appliedMigrations(databaseUrl));
  await migrate({ connectionString: databaseUrl, migrationsFolder, pgSettings: { search_path: "public" } });
  // graphile-migrate keeps its pool open 200 ms after use, and its pool's error
  // handler calls process.exit(1): a Postgres shut down in that window (a test's
  // private cluster, an operator's restart) killed the whole process. Close it now.
  clearAllPools();
  await runMigrations({ connectionString: databaseUrl });
  const after = await appliedMigrations(databaseUrl);
  return { applied: after.filter((file) => !before.has(file)).map((file) => file.replace(/\.sql$/, "")) };
}

/** The filenames recorded in schema_migrations (`000001.sql`, …), oldest first; none before the first migration. */
async function appliedMigrations(databaseUrl: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ exists: boolean }>(
      `select to_regclass('public.schema_migrations') is not null as "exists"`,
    );
    if (!rows[0]?.exists) return [];
    const applied = await client.query<{ filename: string }>(`select filename from schema_migrations order by filename`);
    return applied.rows.map((r) => r.filename);
  } finally {
    await client.end();
  }
}

export interface MigrationStatus {
  applied: string[];
  pending: string[];
}

/** Committed migration files compared with schema_migrations (no shadow database needed). */
export async function migrationStatus(databaseUrl: string): Promise<MigrationStatus> {
  const committed = await committedMigrations();
  const applied = await appliedMigrations(databaseUrl);
  // graphile-migrate records `000001.sql` for the file `000001-message.sql`.
  const pending = committed.filter((file) => !applied.includes(`${file.split(/[-.]/)[0]}.sql`));
  return { applied, pending };
}

/**
 * Refuses a database `api migrate up` has not prepared (no schema_migrations,
 * or no graphile_worker schema). startWorker (lib/worker.ts) calls it before
 * the relay's or the notifier's worker starts, because graphile-worker
 * installs its own schema when it is missing, and no process migrates at boot.
 */
export async function assertMigrated(db: Queryable): Promise<void> {
  const { rows } = await db.query<{ migrations: boolean; worker: boolean }>(
    `select to_regclass('public.schema_migrations') is not null as migrations,
            to_regnamespace('graphile_worker') is not null as worker`,
  );
  if (!rows[0]?.migrations || !rows[0].worker) {
    throw new Error("the database is not migrated; run `api migrate up` first");
  }
}
