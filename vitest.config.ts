import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    globalSetup: ["tests/setup/global-setup.ts"],
    // Fails a test whose public responses break the privacy rules (tests/helpers/privacy.ts).
    setupFiles: ["tests/setup/privacy.ts"],
    pool: "forks",
    // Each file has its own database (a clone of a migrated template) and its
    // own nats-server, so files run in parallel.
    fileParallelism: true,
    maxWorkers: 4,
    // Generous: the suite shares two cores with Postgres, NATS and the processes it starts.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    teardownTimeout: 20_000,
    reporters: ["default"],
  },
});
