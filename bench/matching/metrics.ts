/**
 * Scores a labelled data set the way the service will: for each found report, every lost
 * report that passes the candidate window, suggestions chosen by the service's policy.
 */
import {
  DEFAULT_WEIGHTS, isSuggested, type MatchEvidence, type MatchWeights, matchEvidence, SUGGESTION_THRESHOLD, scoreMatch, withinCandidateWindow,
} from "../../jobs/matching/score.js";
import type { LabelledFound, LabelledLost, MatchingDataset } from "./generate.js";

export interface Candidate {
  found: LabelledFound;
  lost: LabelledLost;
  isTrue: boolean;
}

/** Candidate pairs through `withinCandidateWindow`, found report by found report. */
export function candidates(data: MatchingDataset): Candidate[][] {
  const byLat = [...data.lost].sort((a, b) => a.subject.point.lat - b.subject.point.lat);
  const firstAtOrAbove = (lat: number) => {
    let lo = 0;
    let hi = byLat.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (byLat[mid]!.subject.point.lat < lat) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return data.found.map((found) => {
    const out: Candidate[] = [];
    // 30 km is under 0.28° of latitude anywhere.
    for (let i = firstAtOrAbove(found.subject.point.lat - 0.28); i < byLat.length; i++) {
      const lost = byLat[i]!;
      if (lost.subject.point.lat > found.subject.point.lat + 0.28) break;
      if (withinCandidateWindow(lost.subject, found.subject)) out.push({ found, lost, isTrue: lost.id === found.trueLostId });
    }
    return out;
  });
}

/** Evidence of every candidate pair, for fitting weights without recomputing it. */
export function candidateEvidence(data: MatchingDataset): Array<{ evidence: MatchEvidence; isTrue: boolean }> {
  return candidates(data).flat().map((c) => ({ evidence: matchEvidence(c.lost.subject, c.found.subject), isTrue: c.isTrue }));
}

export interface Evaluation {
  pairs: number;
  foundReports: number;
  candidatesPerFound: number;
  /** Share of true pairs the candidate window lets through at all. */
  trueInWindow: number;
  suggestions: number;
  precision: number;
  recall: number;
  /** Share of true pairs ranked first (ties counted against), and within the first three. */
  first: number;
  top3: number;
  bySpecies: Record<string, { pairs: number; precision: number; recall: number; first: number }>;
  /** Mean score against the observed share of true pairs, by score band. */
  calibration: Array<{ band: string; pairs: number; meanScore: number; observed: number }>;
}

/**
 * How suggestions are chosen: "threshold" keeps every pair from 0.5 up; "margin" is what the
 * service does (isSuggested): from 0.5 up and close to the found report's best candidate.
 */
export type SuggestionPolicy = "threshold" | "margin";

/** Which of one found report's candidate scores are suggested under `policy`. */
export function suggestedAmong(scores: number[], policy: SuggestionPolicy): boolean[] {
  const best = Math.max(0, ...scores);
  return scores.map((score) => (policy === "margin" ? isSuggested(score, best) : score >= SUGGESTION_THRESHOLD));
}

export function evaluate(
  data: MatchingDataset,
  weights: MatchWeights = DEFAULT_WEIGHTS,
  pre = candidates(data),
  policy: SuggestionPolicy = "margin",
): Evaluation {
  const pairs = data.found.filter((f) => f.trueLostId !== null).length;
  const bands = Array.from({ length: 10 }, () => ({ n: 0, score: 0, hits: 0 }));
  const species = new Map<string, { pairs: number; suggestions: number; hits: number; first: number }>();
  let suggestions = 0;
  let hits = 0;
  let inWindow = 0;
  let first = 0;
  let top3 = 0;
  let total = 0;
  for (const group of pre) {
    total += group.length;
    const scored = group.map((c) => ({ ...c, score: scoreMatch(c.lost.subject, c.found.subject, { weights }).score }));
    const suggested = suggestedAmong(scored.map((c) => c.score), policy);
    const found = group[0]?.found;
    const sp = found?.subject.species;
    const s = sp ? (species.get(sp) ?? { pairs: 0, suggestions: 0, hits: 0, first: 0 }) : null;
    if (s && sp) species.set(sp, s);
    for (const [i, c] of scored.entries()) {
      const band = bands[Math.min(9, Math.floor(c.score * 10))]!;
      band.n++;
      band.score += c.score;
      if (c.isTrue) band.hits++;
      if (suggested[i]) {
        suggestions++;
        if (s) s.suggestions++;
        if (c.isTrue) {
          hits++;
          if (s) s.hits++;
        }
      }
    }
    const truth = scored.find((c) => c.isTrue);
    if (truth) {
      inWindow++;
      const rank = 1 + scored.filter((c) => !c.isTrue && c.score >= truth.score).length;
      if (rank === 1) {
        first++;
        if (s) s.first++;
      }
      if (rank <= 3) top3++;
    }
  }
  for (const f of data.found) {
    if (f.trueLostId === null) continue;
    const s = species.get(f.subject.species) ?? { pairs: 0, suggestions: 0, hits: 0, first: 0 };
    s.pairs++;
    species.set(f.subject.species, s);
  }
  const ratio = (a: number, b: number) => (b === 0 ? 0 : a / b);
  return {
    pairs,
    foundReports: data.found.length,
    candidatesPerFound: ratio(total, data.found.length),
    trueInWindow: ratio(inWindow, pairs),
    suggestions,
    precision: ratio(hits, suggestions),
    recall: ratio(hits, pairs),
    first: ratio(first, pairs),
    top3: ratio(top3, pairs),
    bySpecies: Object.fromEntries(
      [...species].map(([k, s]) => [k, { pairs: s.pairs, precision: ratio(s.hits, s.suggestions), recall: ratio(s.hits, s.pairs), first: ratio(s.first, s.pairs) }]),
    ),
    calibration: bands.map((b, i) => ({
      band: `${(i / 10).toFixed(1)}–${((i + 1) / 10).toFixed(1)}`, pairs: b.n, meanScore: ratio(b.score, b.n), observed: ratio(b.hits, b.n),
    })),
  };
}
