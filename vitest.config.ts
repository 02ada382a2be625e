import { defineConfig } from "vitest/config";

/**
 * Route test files run a second time in the `pgbouncer` project: the API's
 * pool through a real pgbouncer in transaction pooling, with
 * DATABASE_NAMED_STATEMENTS=false and the role's statement_timeout
 * (tests/setup/pgbouncer.ts, tests/helpers/pgbouncer-route.ts). One file per
 * API module, not the whole suite, which would add minutes: docs/scaling.md
 * says why these.
 */
export const PGBOUNCER_ROUTE_FILES = [
  "tests/safety/lost-reports.test.ts",
  "tests/safety/alerts.test.ts",
  "tests/safety/sightings.test.ts",
  "tests/safety/contact-messages-held.test.ts",
  "tests/alerts/subscriptions.test.ts",
  "tests/photos/upload.test.ts",
  "tests/tag/tag-form.test.ts",
  "tests/share/share-page.test.ts",
  "tests/partners/asm3-replay.test.ts",
  "tests/push/push-subscriptions.test.ts",
  "tests/admin/moderation.test.ts",
  "tests/moderation/reports.test.ts",
  "tests/owner/me-and-lost.test.ts",
  "tests/emergency/emergency-profiles.test.ts",
];

export default defineConfig({
  test: {
    // Fails a test whose public responses break the privacy rules (tests/helpers/privacy.ts).
    setupFiles: ["tests/setup/each-file.ts"],
    pool: "forks",
    // Each file has its own database (a clone of a migrated template) and its
    // own nats-server, so files run in parallel.
    fileParallelism: true,
    // A worker keeps its modules from one file to the next: importing the app
    // again for each of ~185 files cost about a second of CPU each on two
    // cores. `npx vitest run` with and without --no-isolate: 467 s and 219 s of
    // wall time for the whole suite, on the same machine. So a test file
    // leaves no state in a module (no vi.mock, no module-level caches it
    // changes) and closes what it opens.
    isolate: false,
    maxWorkers: 4,
    // Generous: the suite shares two cores with Postgres, NATS and the processes it starts.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    teardownTimeout: 20_000,
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: {
          name: "main",
          include: ["tests/**/*.test.ts"],
          // What only the pgbouncer project can check: its own pool goes through the project's pgbouncer.
          exclude: ["tests/pgbouncer/through-project.test.ts"],
          globalSetup: ["tests/setup/global-setup.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "pgbouncer",
          include: [...PGBOUNCER_ROUTE_FILES, "tests/pgbouncer/through-project.test.ts"],
          // The second after the first: it reads the server's address that global-setup.ts provides.
          globalSetup: ["tests/setup/global-setup.ts", "tests/setup/pgbouncer.ts"],
          env: { TEST_VIA_PGBOUNCER: "1" },
        },
      },
    ],
  },
});
