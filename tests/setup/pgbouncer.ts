import type { TestProject } from "vitest/node";
import { canStartPgBouncer, PGBOUNCER, startPgBouncer } from "../helpers/pgbouncer.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The port of the project's pgbouncer (transaction pooling), in the `pgbouncer` project only (vitest.config.ts). */
    pgbouncerPort?: number;
  }
}

/**
 * After global-setup.ts, in the `pgbouncer` project: one pgbouncer in
 * transaction pooling in front of the test server, which every file's API
 * pool goes through (tests/helpers/app.ts, TEST_VIA_PGBOUNCER).
 */
export default async function setup(project: TestProject) {
  if (!canStartPgBouncer()) {
    // As for Chromium: one line that says what to install; this project's files then fail, the others run.
    console.error(`test: pgbouncer cannot be started (${PGBOUNCER}): the pgbouncer project's files will fail. Install it: apt-get install -y pgbouncer`);
    return;
  }
  const server = new URL(project.getProvidedContext().adminDatabaseUrl);
  const bouncer = await startPgBouncer({ upstream: { host: server.hostname, port: Number(server.port || 5432) } });
  project.provide("pgbouncerPort", bouncer.port);
  return () => bouncer.stop();
}
