import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateDataset } from "../../bench/matching/generate.js";
import { candidates, suggestedAmong } from "../../bench/matching/metrics.js";
import { type Decision, MIN_DECISIONS, refit, TooFewDecisions } from "../../bench/matching/refit.js";
import { DEFAULT_WEIGHTS, scoreMatch } from "../../jobs/matching/score.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

/**
 * `npm run matching:refit` refits the weights from owners' confirm and dismiss
 * decisions, reports recall and precision on a held-out part, and changes nothing.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/** What owners would decide on the suggestions the service makes: confirm their own animal, dismiss the rest. */
function ownersDecide(seed: number, pairs: number): Decision[] {
  const decisions: Decision[] = [];
  for (const group of candidates(generateDataset({ seed, pairs }))) {
    const suggested = suggestedAmong(group.map((c) => scoreMatch(c.lost.subject, c.found.subject).score), "margin");
    group.forEach((c, i) => {
      if (!suggested[i]) return;
      const n = decisions.length;
      decisions.push({ id: `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`, lost: c.lost.subject, other: c.found.subject, confirmed: c.isTrue });
    });
  }
  return decisions;
}

describe("refitting the weights from owners' decisions", () => {
  it("refuses with fewer than 200 decisions, says so, and exits non-zero", async () => {
    const run = promisify(execFile)(process.execPath, ["--import", "tsx", "bench/matching/refit.ts"], {
      env: { ...process.env, DATABASE_URL: db.url },
    });
    await expect(run).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`refusing to refit: 0 owner decisions (confirmed or dismissed matches), at least ${MIN_DECISIONS} are needed`),
    });
    expect(() => refit(ownersDecide(3, 40).slice(0, 199))).toThrow(TooFewDecisions);
  });

  it("fits on ≥ 200 decisions, reports recall and precision on a held-out quarter, and leaves the shipped weights alone", () => {
    const before = structuredClone(DEFAULT_WEIGHTS);
    const decisions = ownersDecide(3, 400);
    expect(decisions.length).toBeGreaterThanOrEqual(MIN_DECISIONS);
    const report = refit(decisions);
    expect(report.decisions).toBe(decisions.length);
    expect(report.fitted + report.heldOut).toBe(decisions.length);
    expect(report.heldOut / decisions.length).toBeGreaterThan(0.15);
    expect(report.heldOut / decisions.length).toBeLessThan(0.35);
    // Every decided pair was suggested by the shipped weights, so on them they suggest all: recall 1.
    expect(report.current.recall).toBe(1);
    // Learning from the dismissals sharpens precision on pairs it never saw.
    expect(report.refitted.precision).toBeGreaterThan(report.current.precision);
    expect(report.refitted.recall).toBeGreaterThan(0.5);
    expect(Object.keys(report.weights).sort()).toEqual(Object.keys(DEFAULT_WEIGHTS).sort());
    expect(DEFAULT_WEIGHTS).toEqual(before);
  });
});
