import { hammingDistance } from "../../lib/images/phash.js";
import { describe, expect, it } from "vitest";
import { generateDataset } from "../../bench/matching/generate.js";
import { evaluate } from "../../bench/matching/metrics.js";
import {
  alertsOwner, isSuggested, MATCH_REASONS, type MatchSubject, SUGGESTION_THRESHOLD, scoreMatch, withinCandidateWindow,
} from "../../jobs/matching/score.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const foundAt = new Date("2025-05-10T12:00:00Z");
const here = { lat: 51.5, lon: -0.12 };

/** A point `km` north of `here`. */
const north = (km: number) => ({ lat: here.lat + km / 111.195, lon: here.lon });

function subject(over: Partial<MatchSubject> = {}): MatchSubject {
  return {
    species: "dog", breed: null, colors: [], sex: null, microchipId: null, marks: null, description: null,
    point: here, at: foundAt, photoHashes: [], ...over,
  };
}

/** A lost report two days before the found report, 1 km away, with the given fields. */
const lost = (over: Partial<MatchSubject> = {}) => subject({ point: north(1), at: new Date(foundAt.getTime() - 2 * DAY), ...over });
const found = (over: Partial<MatchSubject> = {}) => subject(over);

describe("scoreMatch", () => {
  it("exports the contract's reasons and threshold", () => {
    expect([...MATCH_REASONS]).toEqual(["microchip", "breed", "colors", "sex", "distance", "time", "marks", "photo"]);
    expect(SUGGESTION_THRESHOLD).toBe(0.5);
  });

  it("treats missing fields as neutral: only place and time speak", () => {
    const r = scoreMatch(lost(), found());
    expect(Object.keys(r.contributions).sort()).toEqual(["distance", "time"]);
    expect(r.score).toBeGreaterThan(0);
    expect(r.score).toBeLessThan(1);
    const unsure = scoreMatch(lost({ breed: "Beagle", sex: "female", colors: ["tan"] }), found({ breed: "unknown", sex: "unknown", colors: [] }));
    expect(Object.keys(unsure.contributions).sort()).toEqual(["distance", "time"]);
    expect(unsure.score).toBe(r.score);
  });

  it("gives 1 for equal microchips, however they are written, even when other fields disagree", () => {
    const r = scoreMatch(
      lost({ microchipId: "985 141-000 123 456", sex: "male", colors: ["black"] }),
      found({ microchipId: "985141000123456", sex: "female", colors: ["white"], point: north(25), at: foundAt }),
    );
    expect(r.score).toBe(1);
    expect(r.reasons[0]).toBe("microchip");
  });

  it("leaves the score unchanged when only one side has a microchip", () => {
    const base = { breed: "Beagle", colors: ["tricolour"] };
    const without = scoreMatch(lost(base), found(base));
    const oneSide = scoreMatch(lost({ ...base, microchipId: "985141000123456" }), found(base));
    expect(oneSide.score).toBe(without.score);
    expect(oneSide.contributions.microchip).toBeUndefined();
  });

  it("puts different microchips well below the threshold, even when all else matches", () => {
    const same = { breed: "Beagle", colors: ["black", "white", "tan"], sex: "female", marks: "notched left ear" };
    const agree = scoreMatch(lost(same), found(same));
    expect(agree.score).toBeGreaterThan(0.9);
    const r = scoreMatch(lost({ ...same, microchipId: "985141000123456" }), found({ ...same, microchipId: "981020000765432" }));
    expect(r.score).toBeLessThanOrEqual(0.1);
    expect(r.contributions.microchip).toBeLessThan(-3);
    expect(r.reasons).not.toContain("microchip");
  });

  it("does not hold a single mistyped chip digit against the pair", () => {
    const base = { breed: "Labrador", colors: ["black"] };
    const without = scoreMatch(lost(base), found(base)).score;
    const near = scoreMatch(lost({ ...base, microchipId: "985141000123456" }), found({ ...base, microchipId: "985141000123457" })).score;
    expect(near).toBeGreaterThanOrEqual(without);
  });

  it("counts a sex conflict strongly against, and agreement (in any wording) for", () => {
    // Place and time alone (1 km, 2 days) make a suggestion; beside it, a sex conflict is outranked.
    const unknown = scoreMatch(lost({ sex: "male" }), found({ sex: "unknown" }));
    const agree = scoreMatch(lost({ sex: "male" }), found({ sex: "M" }));
    const conflict = scoreMatch(lost({ sex: "male" }), found({ sex: "female" }));
    expect(unknown.contributions.sex).toBeUndefined();
    expect(unknown.score).toBeGreaterThanOrEqual(SUGGESTION_THRESHOLD);
    expect(agree.contributions.sex).toBeGreaterThan(0);
    expect(agree.reasons).toContain("sex");
    expect(agree.score).toBeGreaterThan(unknown.score);
    expect(conflict.contributions.sex).toBeLessThan(-1.5);
    expect(conflict.score).toBeLessThan(unknown.score);
    expect(isSuggested(conflict.score, unknown.score)).toBe(false);
  });

  it("alerts a lost report's owner only for a strong suggestion clearly ahead of the rest of the listing, or equal chips", () => {
    // Alone in the listing: from 0.8 up.
    expect(alertsOwner(0.8, 0)).toBe(true);
    expect(alertsOwner(0.79, 0)).toBe(false);
    // Odds 9 against odds 3: a factor 3 > e, ahead. Odds 9 against 4: not.
    expect(alertsOwner(0.9, 0.75)).toBe(true);
    expect(alertsOwner(0.9, 0.8)).toBe(false);
    // Two that both round to 1 are equally strong.
    expect(alertsOwner(1, 0.99995)).toBe(false);
    // Equal chips alert whatever else is listed.
    expect(alertsOwner(1, 1, true)).toBe(true);
    expect(alertsOwner(0.6, 0.99, true)).toBe(true);
  });

  it("suggests a pair from the threshold up and within one log-odds of its found report's best candidate", () => {
    expect(isSuggested(0.49, 0.49)).toBe(false);
    expect(isSuggested(0.5, 0.5)).toBe(true);
    // Odds 3 against a best of odds 8: within e. Odds 1 against 8: not.
    expect(isSuggested(0.75, 8 / 9)).toBe(true);
    expect(isSuggested(0.5, 8 / 9)).toBe(false);
    // Equal chips (score 1) outrank everything but another equal chip.
    expect(isSuggested(0.9999, 1)).toBe(false);
    expect(isSuggested(1, 1)).toBe(true);
  });

  it("reads colour synonyms as the same colour, and different colours as evidence against", () => {
    const tanBrown = scoreMatch(lost({ colors: ["tan"] }), found({ colors: ["brown"] }));
    expect(tanBrown.contributions.colors).toBeGreaterThan(1);
    expect(tanBrown.reasons).toContain("colors");
    expect(scoreMatch(lost({ colors: ["grey"] }), found({ colors: ["Gray"] })).reasons).toContain("colors");
    expect(scoreMatch(lost({ colors: ["black & white"] }), found({ colors: ["tuxedo"] })).reasons).toContain("colors");
    expect(scoreMatch(lost({ colors: ["black"] }), found({ colors: ["white"] })).contributions.colors).toBeLessThan(-1);
  });

  it("reads breed aliases and misspellings as the same breed", () => {
    for (const [a, b] of [["GSD", "German Shepherd"], ["Alsatian", "german shepard"], ["Lab", "Labrador Retriever"], ["DSH", "domestic shorthair"]]) {
      const r = scoreMatch(lost({ species: "dog", breed: a! }), found({ species: "dog", breed: b! }));
      expect(r.contributions.breed, `${a} ~ ${b}`).toBeGreaterThanOrEqual(a === "DSH" ? -0.1 : 1);
    }
    expect(scoreMatch(lost({ breed: "Lab" }), found({ breed: "Dachshund" })).contributions.breed).toBeLessThan(0);
    expect(scoreMatch(lost({ breed: "Lab" }), found({ breed: "lab mix" })).reasons).toContain("breed");
  });

  it("counts a finder's bare \"mixed\" against a pure breed, not against another mix", () => {
    const breedOf = (a: string, b: string) => scoreMatch(lost({ species: "dog", breed: a }), found({ species: "dog", breed: b })).contributions.breed ?? 0;
    // Two mixes agree, as two domestic shorthairs do: about nothing either way.
    for (const [owner, finder] of [["Lab x Collie", "mixed"], ["Mixed breed", "mutt"], ["Shepherd mix", "crossbreed"], ["Mutt", "lab mix"]]) {
      expect(breedOf(owner!, finder!), `${owner} ~ ${finder}`).toBeGreaterThanOrEqual(-0.1);
    }
    expect(breedOf("Labrador", "mixed")).toBeLessThan(-0.25);
    // "not sure" says nothing, beside a mix or a breed.
    expect(breedOf("Mixed breed", "not sure")).toBe(0);
    expect(breedOf("Labrador", "not sure")).toBe(0);
  });

  it("counts shared words of marks and descriptions, across synonyms", () => {
    const r = scoreMatch(lost({ marks: "Notched left ear, limps on back leg" }), found({ description: "torn ear, limping" }));
    expect(r.reasons).toContain("marks");
    const none = scoreMatch(lost({ marks: "docked tail" }), found({ marks: "fluffy white paws" }));
    expect(none.contributions.marks).toBeLessThanOrEqual(0);
  });

  it("compares the collar's colour, the size and the age both sides state, and holds a disagreement against the pair", () => {
    const marksOf = (owner: Partial<MatchSubject>, finder: Partial<MatchSubject>) => scoreMatch(lost(owner), found(finder)).contributions.marks ?? 0;
    const nothing = scoreMatch(lost({ marks: "green nylon collar" }), found()).score;
    // Another collar's colour: against, though the words "nylon collar" are shared.
    const pink = scoreMatch(lost({ marks: "green nylon collar" }), found({ marks: "pink nylon collar" }));
    expect(pink.score).toBeLessThan(nothing);
    expect(pink.contributions.marks).toBeLessThan(-1);
    expect(marksOf({ marks: "green nylon collar" }, { marks: "wearing a green collar" })).toBeGreaterThan(1);
    // A collar lost on the way is no proof of another animal.
    expect(Math.abs(marksOf({ marks: "red collar with tag" }, { marks: "no collar" }))).toBeLessThan(0.5);
    // Size and age, in anyone's words; a phrase that names a part ("big belly") is a mark, not a size.
    expect(marksOf({ description: "large, 12 years old" }, { description: "very big dog. looks old" })).toBeGreaterThan(1.5);
    expect(marksOf({ description: "tiny" }, { description: "found near the park, big dog" })).toBeLessThan(-1.5);
    expect(marksOf({ description: "only 8 months old" }, { description: "elderly" })).toBeLessThan(-1);
    expect(marksOf({ description: "4 years old" }, { description: "middle aged" })).toBeGreaterThan(0.5);
    expect(marksOf({ marks: "big belly" }, { description: "little dog" })).toBe(0);
  });

  it("reads breed words it does not know as saying nothing against a known breed", () => {
    const breedOf = (a: string, b: string) => scoreMatch(lost({ breed: a }), found({ breed: b })).contributions.breed ?? 0;
    // "small fluffy dog" is no breed "fluffy" different from a Malamute: as weak as a mix.
    expect(breedOf("Malamute", "small fluffy dog")).toBeGreaterThan(breedOf("Malamute", "Labrador"));
    expect(breedOf("Malamute", "small fluffy dog")).toBe(breedOf("Malamute", "mixed"));
    expect(breedOf("fluffy", "small fluffy dog")).toBeGreaterThan(1);
  });

  it("decays with distance and with time", () => {
    const at = (km: number, days: number) => scoreMatch(lost({ point: north(km), at: new Date(foundAt.getTime() - days * DAY) }), found()).score;
    expect(at(0.5, 1)).toBeGreaterThan(at(5, 1));
    expect(at(5, 1)).toBeGreaterThan(at(25, 1));
    expect(at(1, 0.5)).toBeGreaterThan(at(1, 10));
    expect(at(1, 10)).toBeGreaterThan(at(1, 50));
  });

  it("counts close photo hashes as a reason, and distant ones not at all", () => {
    const a = "f0e1d2c3b4a59687";
    const close = "f0e1d2c3b4a59680"; // 3 bits off
    const far = "0f1e2d3c4b5a6978";
    expect(hammingDistance(a, close)).toBe(3);
    const r = scoreMatch(lost({ photoHashes: [far, a] }), found({ photoHashes: [close] }));
    expect(r.reasons).toContain("photo");
    expect(r.contributions.photo).toBeGreaterThan(2);
    expect(scoreMatch(lost({ photoHashes: [far] }), found({ photoHashes: [close] })).contributions.photo).toBeUndefined();
  });

  it("scores another species 0", () => {
    expect(scoreMatch(lost({ species: "cat", colors: ["black"] }), found({ species: "dog", colors: ["black"] })).score).toBe(0);
  });
});

describe("hammingDistance", () => {
  it("counts differing bits of two 64-bit hex hashes", () => {
    expect(hammingDistance("0000000000000000", "0000000000000000")).toBe(0);
    expect(hammingDistance("0000000000000000", "000000000000000f")).toBe(4);
    expect(hammingDistance("ffffffffffffffff", "0000000000000000")).toBe(64);
    expect(hammingDistance("8000000000000000", "0000000000000001")).toBe(2);
    expect(() => hammingDistance("xyz", "0000000000000000")).toThrow();
  });
});

describe("withinCandidateWindow", () => {
  const at = (offsetMs: number) => lost({ at: new Date(foundAt.getTime() + offsetMs) });

  it("keeps a lost report last seen from 60 days before to 2 hours after the found time", () => {
    expect(withinCandidateWindow(at(2 * HOUR), found())).toBe(true);
    expect(withinCandidateWindow(at(2 * HOUR + 1), found())).toBe(false);
    expect(withinCandidateWindow(at(-60 * DAY), found())).toBe(true);
    expect(withinCandidateWindow(at(-60 * DAY - 1), found())).toBe(false);
  });

  it("keeps the same species within 30 km only", () => {
    expect(withinCandidateWindow(lost({ point: north(29.9) }), found())).toBe(true);
    expect(withinCandidateWindow(lost({ point: north(30.2) }), found())).toBe(false);
    expect(withinCandidateWindow(lost({ species: "cat" }), found({ species: "dog" }))).toBe(false);
    expect(withinCandidateWindow(lost({ species: "Dog" }), found({ species: "dog" }))).toBe(true);
  });
});

describe("benchmark on a held-out generated set", () => {
  it("finds the true match with recall ≥ 0.85 and precision ≥ 0.75 (300 pairs, seed 2)", () => {
    const e = evaluate(generateDataset({ seed: 2, pairs: 300 }));
    expect(e.pairs).toBe(300);
    expect(e.recall).toBeGreaterThanOrEqual(0.85);
    expect(e.precision).toBeGreaterThanOrEqual(0.75);
    expect(e.first).toBeGreaterThanOrEqual(0.8);
  });
});
