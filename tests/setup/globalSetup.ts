import pg from "pg";
import type { TestProject } from "vitest/node";
import { migrateUp } from "../../lib/migrate.js";

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

export function databaseUrlFor(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function startContainers(): Promise<{ databaseUrl: string; natsUrl: string; stop: () => Promise<void> }> {
  // Only on machines with a Docker engine and no DATABASE_URL.
  const { GenericContainer, Wait } = await import("testcontainers");
  const pgContainer = await new GenericContainer("postgis/postgis:16-3.4")
    .withEnvironment({ POSTGRES_PASSWORD: "postgres", POSTGRES_HOST_AUTH_METHOD: "trust" })
    .withExposedPorts(5432)
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .start();
  const natsContainer = await new GenericContainer("nats:2.10")
    .withCommand(["-js"])
    .withExposedPorts(4222)
    .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
    .start();
  return {
    databaseUrl: `postgres://postgres:postgres@${pgContainer.getHost()}:${pgContainer.getMappedPort(5432)}/postgres`,
    natsUrl: `nats://${natsContainer.getHost()}:${natsContainer.getMappedPort(4222)}`,
    stop: async () => {
      await natsContainer.stop();
      await pgContainer.stop();
    },
  };
}

export default async function setup(project: TestProject) {
  let adminDatabaseUrl = process.env.DATABASE_URL;
  let sharedNatsUrl = process.env.NATS_URL ?? null;
  let stopContainers: (() => Promise<void>) | null = null;
  if (!adminDatabaseUrl) {
    const started = await startContainers();
    adminDatabaseUrl = started.databaseUrl;
    sharedNatsUrl = started.natsUrl;
    stopContainers = started.stop;
  }

  const templateDatabase = `ass_tmpl_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminDatabaseUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${templateDatabase}`);
  await admin.query(`create database ${templateDatabase}`);
  await migrateUp(databaseUrlFor(adminDatabaseUrl, templateDatabase));

  project.provide("adminDatabaseUrl", adminDatabaseUrl);
  project.provide("templateDatabase", templateDatabase);
  project.provide("sharedNatsUrl", sharedNatsUrl);

  return async () => {
    await admin.query(`drop database if exists ${templateDatabase} with (force)`);
    await admin.end();
    await stopContainers?.();
  };
}
