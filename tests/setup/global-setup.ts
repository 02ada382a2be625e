import { existsSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { migrateUp } from "../../lib/migrate.js";
import { bringUp, DEFAULT_NATS_URL, defaultDatabaseUrl, ServicesError, type Services } from "../../scripts/services.mjs";
import { CHROMIUM } from "../console/browser.js";
import { canStartNatsServer } from "../helpers/nats-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Connection string of the server's maintenance database. */
    adminDatabaseUrl: string;
    /** Name of the migrated template database each test file clones. */
    templateDatabase: string;
    /** A shared bus, used only when no nats-server binary can be started per file. */
    sharedNatsUrl: string | null;
  }
}

const root = path.resolve(import.meta.dirname, "../..");

export function databaseUrlFor(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * Postgres (DATABASE_URL, default the local server's `postgres` database) and,
 * when test files cannot start their own nats-server, a shared NATS: used if
 * they answer, else brought up by scripts/services.mjs (compose, or a private
 * cluster under .data/ stopped at the end).
 */
export async function startTestServices(env: Record<string, string | undefined>): Promise<Services> {
  try {
    const services = await bringUp({
      who: "test",
      databaseUrl: env.DATABASE_URL ?? defaultDatabaseUrl("postgres"),
      natsUrl: canStartNatsServer() ? null : (env.NATS_URL ?? DEFAULT_NATS_URL),
      stateDir: path.join(root, ".data", `test-${process.pid}`),
      keepState: false,
      log: (line) => console.log(line),
      env,
    });
    return { ...services, natsUrl: services.natsUrl ?? env.NATS_URL ?? null };
  } catch (err) {
    // One line, not a stack: it says what to install.
    if (err instanceof ServicesError) throw Object.assign(new Error(err.message), { stack: err.message });
    throw err;
  }
}

export default async function setup(project: TestProject) {
  if (!existsSync(CHROMIUM)) {
    console.error(
      `test: Chromium is not installed at ${CHROMIUM}: tests/console will fail. Install it: apt-get install -y --no-install-recommends chromium`,
    );
  }
  const services = await startTestServices(process.env);
  const adminDatabaseUrl = services.databaseUrl;
  // One per project (vitest.config.ts): each project runs this setup, and drops its template at its end.
  const templateDatabase = `ass_tmpl_${process.pid}${project.name ? `_${project.name.replace(/[^a-z0-9]/gi, "")}` : ""}`;
  const admin = new pg.Client({ connectionString: adminDatabaseUrl });
  try {
    await admin.connect();
    await admin.query(`drop database if exists ${templateDatabase}`);
    await admin.query(`create database ${templateDatabase}`);
    await migrateUp(databaseUrlFor(adminDatabaseUrl, templateDatabase));
  } catch (err) {
    await admin.end().catch(() => undefined);
    await services.stop();
    throw err;
  }

  project.provide("adminDatabaseUrl", adminDatabaseUrl);
  project.provide("templateDatabase", templateDatabase);
  project.provide("sharedNatsUrl", services.natsUrl);

  return async () => {
    await admin.query(`drop database if exists ${templateDatabase} with (force)`);
    await admin.end();
    await services.stop();
  };
}
