import { afterAll, afterEach, expect } from "vitest";
import { privacyRules, privacyStats, takePrivacyViolations } from "../helpers/privacy.js";

/**
 * Every test file: a public response (or any answer to an anonymous request)
 * that broke the privacy rules fails the test that made it, or the file when
 * it came from a hook (tests/helpers/privacy.ts checks them as they are sent).
 */
privacyStats.setupInstalled = true;
// A worker keeps its modules from one file to the next (vitest.config.ts, isolate: false), and this
// file runs again before each: what an earlier file seeded, learnt or published is not this file's.
privacyRules.clear();
privacyStats.checked = 0;

afterEach(() => {
  expect(takePrivacyViolations(), "public responses broke the privacy rules").toEqual([]);
});

afterAll(() => {
  expect(takePrivacyViolations(), "public responses (sent outside a test) broke the privacy rules").toEqual([]);
});
