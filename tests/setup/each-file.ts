import { afterAll, afterEach, expect } from "vitest";
import { freshPhotoDir } from "../helpers/app.js";
import { privacyRules, privacyStats, takePrivacyViolations } from "../helpers/privacy.js";

/**
 * Runs before every test file. A worker keeps its modules from one file to
 * the next (vitest.config.ts, isolate: false), and this file runs again before
 * each, so what must be the file's own starts afresh here: its privacy rules
 * (what an earlier file seeded, learnt or published is not this file's) and
 * its photo storage (a file counts only its own objects).
 *
 * Then: a public response (or any answer to an anonymous request) that broke
 * the privacy rules fails the test that made it, or the file when it came
 * from a hook (tests/helpers/privacy.ts checks them as they are sent).
 */
privacyStats.setupInstalled = true;
privacyRules.clear();
privacyStats.checked = 0;
freshPhotoDir();

afterEach(() => {
  expect(takePrivacyViolations(), "public responses broke the privacy rules").toEqual([]);
});

afterAll(() => {
  expect(takePrivacyViolations(), "public responses (sent outside a test) broke the privacy rules").toEqual([]);
});
