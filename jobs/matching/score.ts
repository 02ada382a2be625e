/**
 * How likely a found report (or sighting) concerns a lost report: a score from 0 to 1 and
 * the reasons behind it.
 *
 * The score is a logistic model, σ(bias + Σ weight × feature): each piece of evidence adds or
 * removes log-odds, and a missing field adds nothing. Fitted as it is, it reads as the
 * probability that the pair is the same animal among candidates of the SQL pre-selection
 * (same species, ≤ 30 km, the time window). `contributions` are those log-odds per reason.
 *
 * How the weights were chosen (bench/matching/README.md has the figures):
 * - Equal microchips are decisive: the score is 1 whatever else differs (a chip is read by a
 *   scanner; colours and breeds are guessed). Species is not even checked then.
 * - Different chips on both sides are nearly proof of another animal: −6, and the score is
 *   capped at 0.1 so no other evidence makes it a suggestion (a chip one keystroke away counts
 *   as "near", +1.5, not as different). Those and a near-duplicate photo (+4 at
 *   0 bits, fading to 0 past 10 bits: dHash only finds re-used or re-cropped pictures, never
 *   two different photos of one animal, so a close hash is rare and strong) are set by hand:
 *   the benchmark has too few such pairs, or pairs it separates perfectly, to fit them.
 * - All others were fitted by L2-regularised logistic regression (bench/matching/fit.ts) on the
 *   labelled candidate pairs of one generated set (seed 1), and rounded. The generator's noise
 *   (how owners and finders name breeds and colours, how far and how long animals stray) was
 *   written and frozen before any fitting; figures are reported on another seed.
 * - A pair is suggested only when it is also within SUGGESTION_MARGIN_LOG_ODDS of the best
 *   candidate of its found report or sighting (isSuggested): one animal has one owner, so a
 *   clearly better lost report outranks the rest. That removes most wrong suggestions, and
 *   leaves room to lower the bar for a lone candidate.
 * - Size, age and collar (what the marks and description say of them, compare.ts `describe`)
 *   came later: their seven weights and the bias were fitted the same way with every other
 *   weight held (`fit.ts 1 2000 1 --described`), so adding them refitted nothing else.
 * - Then the bias was raised by 1.8 log-odds, the least (in steps of 0.2) that reaches recall
 *   0.9 on seed 1 with that margin: a missed reunion costs more than a suggestion the owner
 *   dismisses. So a score overstates the fitted probability by an odds factor of e^1.8 ≈ 6
 *   (0.5 here is ≈ 0.14 fitted). Set the bias back to −1.81 for calibrated scores.
 * - Distance and time enter in units of how far and how long the species usually strays
 *   (SPECIES_RANGE), as ln(1 + x) and its square, zero at 3 units: they only fix where the
 *   reason turns from "for" to "against"; the fitted bias absorbs the choice.
 * Refit on real confirmed and dismissed matches once there are some (bench/matching/fit.ts).
 */
import {
  type BreedMatch,
  type ColorMatch,
  compareAges,
  compareBreeds,
  compareCollars,
  compareColors,
  compareSizes,
  describe,
  parseBreed,
  parseColors,
  sharedWords,
} from "./compare.js";
import { MATCH_REASONS, SUGGESTION_THRESHOLD, type MatchReason } from "../../lib/matches.js";
import { hammingDistance } from "../../lib/images/phash.js";

export { MATCH_REASONS, SUGGESTION_THRESHOLD, type MatchReason };
export const CANDIDATE_RADIUS_KM = 30;
/** The lost report's lastSeenAt may be this much after the other's time (clock and memory slop)... */
export const CANDIDATE_LOST_AFTER_MS = 2 * 3600_000;
/** ...and this much before it. */
export const CANDIDATE_LOST_BEFORE_MS = 60 * 86_400_000;
/** Photos whose dHashes differ in at most this many bits count as the same picture. */
export const PHOTO_CLOSE_BITS = 10;
/** Two different chips: another animal, however alike the rest (a one-key typo is "near", not "different"). */
export const DIFFERENT_CHIPS_MAX_SCORE = 0.1;
/** Contribution reported for equal microchips (the score itself is then exactly 1). */
export const MICROCHIP_EQUAL_CONTRIBUTION = 10;
/** A reason is named when it adds at least this much log-odds. */
export const REASON_MIN_CONTRIBUTION = 0.25;
/**
 * How far and how long animals of a species usually stray before they are found, as rough
 * round figures: lost-pet surveys find cats close to home but days later, dogs farther but
 * sooner; birds fly. Distance and time are measured in these units.
 */
export const SPECIES_RANGE: Record<string, { km: number; days: number }> = {
  dog: { km: 1.5, days: 1 }, cat: { km: 0.5, days: 4 }, rabbit: { km: 0.5, days: 1 }, bird: { km: 2, days: 2 },
};
const DEFAULT_RANGE = { km: 1, days: 2 };
/** Where distance and time turn from evidence for to evidence against, in those units. */
const NEUTRAL_RANGES = 3;
const MARKS_CAP = 4;

export interface MatchSubject {
  species: string;
  breed: string | null;
  colors: string[];
  sex: string | null;
  microchipId: string | null;
  /** Distinguishing marks. */
  marks: string | null;
  description: string | null;
  /** Coarse point. */
  point: { lat: number; lon: number };
  /** lastSeenAt of a lost report, foundAt of a found report, seenAt of a sighting. */
  at: Date;
  /** 64-bit dHashes of the ready photos, 16 lowercase hex digits each. */
  photoHashes: string[];
}

export interface MatchResult {
  score: number;
  reasons: MatchReason[];
  /** Log-odds each reason added (negative: evidence against). */
  contributions: Partial<Record<MatchReason, number>>;
}

/** What the two reports show, before weighing. */
export interface MatchEvidence {
  microchip: "equal" | "near" | "different" | null;
  breed: BreedMatch | null;
  colors: ColorMatch | null;
  sex: "agree" | "conflict" | null;
  species: string;
  distanceKm: number;
  /** Days from the lost report's lastSeenAt to the other's time, never below 0. */
  gapDays: number;
  /** Weighted count of shared words in marks and description, besides size, age and collar. */
  marks: number | null;
  /** Smallest Hamming distance between any photo of one and any photo of the other. */
  photoDistance: number | null;
  /** Size classes apart (small, medium, large): 0 the same, 2 small against large. */
  size: number | null;
  /** Age classes apart (young, adult, senior). */
  age: number | null;
  /** Collar colours alike 0..1, or one side says it wore none. */
  collar: number | "missing" | null;
}

type BreedWeight = `breed${Capitalize<BreedMatch>}`;
const breedWeight = (m: BreedMatch) => `breed${m[0]!.toUpperCase()}${m.slice(1)}` as BreedWeight;
export type WeightName =
  | "bias" | BreedWeight | "colorsAlike" | "colorsUnlike" | "patternAlike" | "patternUnlike" | "sexAgree" | "sexConflict"
  | "distance" | "distance2" | "time" | "time2" | "marksShared" | "marksNone" | "sizeAgree" | "sizeConflict" | "ageAgree" | "ageConflict"
  | "collarAlike" | "collarUnlike" | "collarMissing" | "photoClose" | "chipNear" | "chipDifferent";
export type MatchWeights = Record<WeightName, number>;

/** The reason each weight speaks for (bias speaks for none). */
export const WEIGHT_REASON: Record<WeightName, MatchReason | null> = {
  bias: null, breedSame: "breed", breedCommon: "breed", breedPartial: "breed", breedRelated: "breed", breedWeak: "breed",
  breedDifferent: "breed", colorsAlike: "colors", colorsUnlike: "colors", patternAlike: "colors", patternUnlike: "colors",
  sexAgree: "sex", sexConflict: "sex", distance: "distance", distance2: "distance", time: "time", time2: "time", marksShared: "marks", marksNone: "marks",
  sizeAgree: "marks", sizeConflict: "marks", ageAgree: "marks", ageConflict: "marks", collarAlike: "marks", collarUnlike: "marks", collarMissing: "marks",
  photoClose: "photo", chipNear: "microchip", chipDifferent: "microchip",
};

/**
 * Run "fit-l1" of bench/matching/runs.ts (fitted on seed 1, rounded; chip and photo set by
 * hand), then size, age, collar and the bias fitted with the rest held ("fit-l1-described"),
 * its bias raised by 1.8, from the fitted −1.81 to −0.01: see the header. An age conflict is
 * held at −1.5 by hand (fitted −3.18): the generated finders never misjudge an age class, and
 * real ones do ("young" for a small old dog); the city's figures barely move (decision 84).
 */
export const DEFAULT_WEIGHTS: MatchWeights = {
  bias: -0.01, breedSame: 2.36, breedCommon: -0.01, breedPartial: 1.51, breedRelated: 0.82, breedWeak: -0.43, breedDifferent: -1.17,
  colorsAlike: 1.55, colorsUnlike: -4.18, patternAlike: 1.19, patternUnlike: -1.4, sexAgree: 0.68, sexConflict: -1.79,
  distance: 1.93, distance2: -0.01, time: 0.85, time2: 0.22, marksShared: 0.79, marksNone: -0.2,
  sizeAgree: 0.93, sizeConflict: -1.65, ageAgree: 0.85, ageConflict: -1.5, collarAlike: 1.81, collarUnlike: -2.29, collarMissing: 0.16,
  photoClose: 4, chipNear: 1.5, chipDifferent: -6,
};

/** Great-circle distance in kilometres. */
export function distanceKm(a: { lat: number; lon: number }, b: { lat: number; lon: number }): number {
  const rad = Math.PI / 180;
  const h =
    Math.sin(((b.lat - a.lat) * rad) / 2) ** 2 +
    Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(((b.lon - a.lon) * rad) / 2) ** 2;
  return 2 * 6371.0088 * Math.asin(Math.min(1, Math.sqrt(h)));
}

const sameSpecies = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();

/** The pre-selection the SQL applies: same species, ≤ 30 km, lastSeenAt in [at − 60 d, at + 2 h]. */
export function withinCandidateWindow(lost: MatchSubject, other: MatchSubject): boolean {
  const lag = other.at.getTime() - lost.at.getTime();
  return (
    sameSpecies(lost.species, other.species) &&
    lag >= -CANDIDATE_LOST_AFTER_MS &&
    lag <= CANDIDATE_LOST_BEFORE_MS &&
    distanceKm(lost.point, other.point) <= CANDIDATE_RADIUS_KM
  );
}

export function normalizeMicrochip(id: string | null): string | null {
  const chip = id?.toUpperCase().replace(/[^0-9A-Z]/g, "") ?? "";
  return chip.length > 0 ? chip : null;
}

function compareChips(a: string | null, b: string | null): MatchEvidence["microchip"] {
  const x = normalizeMicrochip(a);
  const y = normalizeMicrochip(b);
  if (!x || !y) return null;
  if (x === y) return "equal";
  if (x.length === y.length && x.length >= 9) {
    const diff = [...x].flatMap((c, i) => (c === y[i] ? [] : [i]));
    // One mistyped character, or two neighbours swapped.
    const swapped = diff.length === 2 && diff[1] === diff[0]! + 1 && x[diff[0]!] === y[diff[1]!] && x[diff[1]!] === y[diff[0]!];
    if (diff.length === 1 || swapped) return "near";
  }
  return "different";
}

function normalizeSex(sex: string | null): "male" | "female" | null {
  const s = sex?.trim().toLowerCase() ?? "";
  if (/\b(f|female|girl|bitch|queen|spayed)\b/.test(s)) return "female";
  if (/\b(m|male|boy|tom|castrated)\b/.test(s)) return "male";
  return null;
}

function closestPhotos(a: string[], b: string[]): number | null {
  const valid = (h: string) => /^[0-9a-f]{16}$/i.test(h);
  let best: number | null = null;
  for (const x of a.filter(valid)) for (const y of b.filter(valid)) best = Math.min(best ?? 64, hammingDistance(x, y));
  return best;
}

const colorsOf = (s: MatchSubject) => parseColors([...s.colors, ...(s.breed ? parseBreed(s.breed).colorWords : [])]);
const textOf = (s: MatchSubject) => [s.marks, s.description].filter(Boolean).join(". ") || null;

export function matchEvidence(lost: MatchSubject, other: MatchSubject): MatchEvidence {
  const sexes = [normalizeSex(lost.sex), normalizeSex(other.sex)];
  // Size, age and collar are compared as such; the shared words count the rest of the text.
  const [a, b] = [describe(textOf(lost)), describe(textOf(other))];
  return {
    microchip: compareChips(lost.microchipId, other.microchipId),
    breed: compareBreeds(lost.breed, other.breed),
    colors: compareColors(colorsOf(lost), colorsOf(other)),
    sex: sexes[0] && sexes[1] ? (sexes[0] === sexes[1] ? "agree" : "conflict") : null,
    species: lost.species.trim().toLowerCase(),
    distanceKm: distanceKm(lost.point, other.point),
    gapDays: Math.max(0, (other.at.getTime() - lost.at.getTime()) / 86_400_000),
    marks: sharedWords(a.rest, b.rest),
    photoDistance: closestPhotos(lost.photoHashes, other.photoHashes),
    size: compareSizes(a.size, b.size),
    age: compareAges(a.age, b.age),
    collar: compareCollars(a.collar, b.collar),
  };
}

/** The evidence as the numbers the weights multiply: score = σ(Σ weight × feature). */
export function evidenceFeatures(e: MatchEvidence): MatchWeights {
  const f = Object.fromEntries(Object.keys(WEIGHT_REASON).map((k) => [k, 0])) as MatchWeights;
  f.bias = 1;
  if (e.breed) f[breedWeight(e.breed)] = 1;
  if (e.colors?.families != null) {
    f.colorsAlike = e.colors.families;
    f.colorsUnlike = 1 - e.colors.families;
  }
  if (e.colors?.pattern != null) {
    f.patternAlike = e.colors.pattern;
    f.patternUnlike = 1 - e.colors.pattern;
  }
  if (e.sex === "agree") f.sexAgree = 1;
  if (e.sex === "conflict") f.sexConflict = 1;
  // ln(1 + x) and its square, less their values at the neutral point: a curve that can rise
  // for the first units and fall off after, as the log-likelihood ratio of a log-normal does.
  const range = SPECIES_RANGE[e.species] ?? DEFAULT_RANGE;
  const neutral = Math.log1p(NEUTRAL_RANGES);
  const u = Math.log1p(e.distanceKm / range.km);
  const t = Math.log1p(e.gapDays / range.days);
  f.distance = neutral - u;
  f.distance2 = neutral ** 2 - u ** 2;
  f.time = neutral - t;
  f.time2 = neutral ** 2 - t ** 2;
  if (e.marks !== null) {
    f.marksShared = Math.min(e.marks, MARKS_CAP);
    f.marksNone = e.marks === 0 ? 1 : 0;
  }
  // A class apart counts half against: a finder's "medium" for a big dog is a judgement call.
  if (e.size !== null) {
    f.sizeAgree = e.size === 0 ? 1 : 0;
    f.sizeConflict = Math.min(e.size, 2) / 2;
  }
  if (e.age !== null) {
    f.ageAgree = e.age === 0 ? 1 : 0;
    f.ageConflict = Math.min(e.age, 2) / 2;
  }
  if (e.collar === "missing") f.collarMissing = 1;
  else if (e.collar !== null) {
    f.collarAlike = e.collar;
    f.collarUnlike = 1 - e.collar;
  }
  if (e.photoDistance !== null && e.photoDistance <= PHOTO_CLOSE_BITS) f.photoClose = 1 - e.photoDistance / (PHOTO_CLOSE_BITS + 1);
  if (e.microchip === "near") f.chipNear = 1;
  if (e.microchip === "different") f.chipDifferent = 1;
  return f;
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

export function weighEvidence(e: MatchEvidence, weights: MatchWeights = DEFAULT_WEIGHTS): MatchResult {
  const contributions: Partial<Record<MatchReason, number>> = {};
  if (e.microchip === "equal") contributions.microchip = MICROCHIP_EQUAL_CONTRIBUTION;
  let logit = 0;
  const features = evidenceFeatures(e);
  for (const name of Object.keys(WEIGHT_REASON) as WeightName[]) {
    const value = weights[name] * features[name];
    logit += value;
    const reason = WEIGHT_REASON[name];
    if (reason && features[name] !== 0) {
      contributions[reason] = (contributions[reason] ?? 0) + value;
    }
  }
  for (const reason of MATCH_REASONS) {
    const value = contributions[reason];
    if (value !== undefined) contributions[reason] = round(value, 3);
  }
  const reasons = MATCH_REASONS.filter((r) => (contributions[r] ?? 0) >= REASON_MIN_CONTRIBUTION).sort(
    (a, b) => (contributions[b] ?? 0) - (contributions[a] ?? 0),
  );
  let score = e.microchip === "equal" ? 1 : round(1 / (1 + Math.exp(-logit)), 4);
  if (e.microchip === "different") score = Math.min(score, DIFFERENT_CHIPS_MAX_SCORE);
  return { score, reasons, contributions };
}

/**
 * A found report or sighting is one animal: of its candidate lost reports at most one is
 * right. So a pair is suggested only when, besides reaching the threshold, it is within this
 * many log-odds of the best candidate of its found report or sighting (odds within a factor
 * e ≈ 2.7). A clearly stronger lost report nearby outranks the weak ones instead of the owner
 * of each being told (bench/matching/README.md, "Suggestion policy").
 */
export const SUGGESTION_MARGIN_LOG_ODDS = 1;

const logOdds = (score: number) => Math.log(score / (1 - score));

/**
 * Whether a pair scoring `score` is suggested, given the best score among the candidate lost
 * reports of its found report or sighting (the pair's own included). Equal chips (score 1)
 * outrank everything but another equal chip.
 */
export function isSuggested(score: number, bestOfFoundSide: number): boolean {
  return score >= SUGGESTION_THRESHOLD && logOdds(score) >= logOdds(Math.max(score, bestOfFoundSide)) - SUGGESTION_MARGIN_LOG_ODDS;
}

/**
 * From the lost report's side, the same idea: its owner is alerted at once (a `match`
 * notification of its own) only for a suggestion that stands clearly ahead of every other
 * suggestion in that lost report's listing, by this many log-odds (odds a factor e ≈ 2.7 higher, the
 * found side's margin).
 * The rest stay in the listing, told as one daily "N possible matches". In a city dense on
 * both sides a black mixed-breed dog has several black mixed-breed dogs found around it, and
 * an alert for each was wrong two times out of three (`npx tsx bench/matching/city.ts`,
 * bench/matching/README.md "A city").
 */
export const OWNER_ALERT_MARGIN_LOG_ODDS = 1;
/** Below this score no suggestion alerts by itself: a lone weak candidate goes to the daily listing. */
export const OWNER_ALERT_MIN_SCORE = 0.8;

/**
 * Whether a new suggestion alerts the lost report's owner at once, given the best score among
 * the other suggestions of that lost report (0 when none). Equal chips always alert. Other
 * candidates that were not suggested (below the threshold, or outranked on their found
 * report's side: most likely someone else's animal) do not hold it back.
 */
export function alertsOwner(score: number, bestOtherOfLost: number, chipEqual = false): boolean {
  if (chipEqual) return true;
  if (score < OWNER_ALERT_MIN_SCORE) return false;
  if (bestOtherOfLost <= 0) return true;
  // Scores round to 4 digits; two that both round to 1 are equally strong, neither ahead.
  const capped = (x: number) => logOdds(Math.min(x, 0.9999));
  return capped(score) - capped(bestOtherOfLost) >= OWNER_ALERT_MARGIN_LOG_ODDS;
}

/**
 * Scores a lost report against a found report or sighting. Another species scores 0 unless
 * the microchips are equal.
 */
export function scoreMatch(lost: MatchSubject, other: MatchSubject, opts: { weights?: MatchWeights } = {}): MatchResult {
  const evidence = matchEvidence(lost, other);
  if (evidence.microchip !== "equal" && !sameSpecies(lost.species, other.species)) {
    return { score: 0, reasons: [], contributions: {} };
  }
  return weighEvidence(evidence, opts.weights);
}
