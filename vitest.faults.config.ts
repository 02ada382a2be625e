import { defineConfig } from "vitest/config";

/**
 * `npm run faults`: the slow fault cases (tests/faults/*.fault.ts) and the
 * fast ones that `npm test` also runs, one file at a time: they stop and
 * kill real processes and servers.
 */
export default defineConfig({
  test: {
    include: [
      "tests/faults/**/*.fault.ts",
      "tests/faults/**/*.test.ts",
      "tests/foundation/startup.test.ts",
      "tests/auth/authentication.test.ts",
      "tests/abuse/**/*.test.ts",
    ],
    globalSetup: ["tests/setup/global-setup.ts"],
    // Fails a test whose public responses break the privacy rules (tests/helpers/privacy.ts).
    setupFiles: ["tests/setup/each-file.ts"],
    pool: "forks",
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 120_000,
  },
});
