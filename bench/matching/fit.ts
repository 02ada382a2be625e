/**
 * Fits the scorer's weights by L2-regularised logistic regression (Newton's method) on the
 * candidate pairs of one generated set. Weights the set cannot estimate (a different or
 * near chip, a near-duplicate photo: too rare, or perfectly separating) stay as given.
 *
 *   npx tsx bench/matching/fit.ts [seed=1] [pairs=2000] [lambda=1] [heldOutSeed=2] [targetRecall=0.85] [--city] [--described]
 *
 * --described fits only the bias and the size, age and collar weights (DESCRIBED_WEIGHTS),
 * holding every other weight at DEFAULT_WEIGHTS: how those were added (decision 84).
 *
 * --city adds every candidate pair of the dense city of the same seed (city.ts) as a second
 * population: the weights are fitted on both, each population with an intercept of its own.
 *
 * Prints the fitted weights as a literal for runs.ts / DEFAULT_WEIGHTS, the same with the
 * bias raised just enough to reach the target recall on the fitting seed, and how both do on
 * both seeds.
 */
import { pathToFileURL } from "node:url";
import {
  DEFAULT_WEIGHTS, evidenceFeatures, type MatchEvidence, type MatchWeights, WEIGHT_REASON, type WeightName,
} from "../../jobs/matching/score.js";
import { cityEvidence, generateCity } from "./city.js";
import { generateDataset } from "./generate.js";
import type { MatchingDataset } from "./generate.js";
import { candidateEvidence, candidates, evaluate } from "./metrics.js";

export const FIXED_WEIGHTS: WeightName[] = ["chipNear", "chipDifferent", "photoClose"];
/** What the marks and description say of size, age and collar (compare.ts `describe`). */
export const DESCRIBED_WEIGHTS: WeightName[] = ["sizeAgree", "sizeConflict", "ageAgree", "ageConflict", "collarAlike", "collarUnlike", "collarMissing"];

function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(m[r]![col]!) > Math.abs(m[pivot]![col]!)) pivot = r;
    [m[col], m[pivot]] = [m[pivot]!, m[col]!];
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const factor = m[r]![col]! / m[col]![col]!;
      for (let k = col; k <= n; k++) m[r]![k]! -= factor * m[col]![k]!;
    }
  }
  return m.map((row, i) => row[n]! / row[i]!);
}

/**
 * `population` (0 when absent) gives rows drawn from another population, such as the dense
 * city, an intercept of their own: their share of true pairs (the prior) differs with density,
 * while what each piece of evidence is worth is shared. `weight` counts a row that many times.
 * The returned bias is population 0's; `intercepts` receives every population's.
 */
export function fitWeights(
  rows: Array<{ evidence: MatchEvidence; isTrue: boolean; population?: number; weight?: number }>,
  lambda: number,
  start: MatchWeights = DEFAULT_WEIGHTS,
  intercepts: number[] = [],
  fixed: WeightName[] = FIXED_WEIGHTS,
): MatchWeights {
  const weightNames = (Object.keys(WEIGHT_REASON) as WeightName[]).filter((n) => !fixed.includes(n));
  const populations = rows.reduce((m, r) => Math.max(m, r.population ?? 0), 0);
  const names = [...weightNames, ...Array.from({ length: populations }, (_, i) => `population${i + 1}`)];
  const data = rows.map((r) => {
    const f = evidenceFeatures(r.evidence);
    const own = Array.from({ length: populations }, (_, i) => ((r.population ?? 0) === i + 1 ? 1 : 0));
    return { x: [...weightNames.map((n) => f[n]), ...own], offset: fixed.reduce((s, n) => s + start[n] * f[n], 0), y: r.isTrue ? 1 : 0, weight: r.weight ?? 1 };
  });
  // Only features some pair shows can be fitted; the others keep their starting value.
  const seen = names.map((_, j) => data.some((d) => d.x[j] !== 0));
  let w = names.map((n) => start[n as WeightName] ?? 0);
  for (let iter = 0; iter < 50; iter++) {
    const k = names.length;
    const h = Array.from({ length: k }, () => new Array<number>(k).fill(0));
    const g = new Array<number>(k).fill(0);
    for (const d of data) {
      const z = d.offset + d.x.reduce((s, x, j) => s + x * w[j]!, 0);
      const p = 1 / (1 + Math.exp(-z));
      for (let i = 0; i < k; i++) {
        if (d.x[i] === 0) continue;
        g[i]! += d.weight * (d.y - p) * d.x[i]!;
        for (let j = 0; j < k; j++) h[i]![j]! += d.weight * p * (1 - p) * d.x[i]! * d.x[j]!;
      }
    }
    for (let i = 0; i < k; i++) {
      const reg = names[i] === "bias" || names[i]!.startsWith("population") ? 0 : lambda;
      g[i]! -= reg * w[i]!;
      h[i]![i]! += reg + (seen[i] ? 0 : 1);
    }
    const step = solve(h, g);
    w = w.map((v, i) => v + step[i]!);
    if (Math.max(...step.map(Math.abs)) < 1e-6) break;
  }
  const fitted = { ...start };
  weightNames.forEach((n, i) => {
    fitted[n] = Math.round(w[i]! * 100) / 100;
  });
  intercepts.splice(0, intercepts.length, fitted.bias, ...w.slice(weightNames.length).map((x) => Math.round((fitted.bias + x) * 100) / 100));
  return fitted;
}

/** The smallest bias increase, in steps of 0.05, that reaches the target recall on this set. */
export function recallShift(data: MatchingDataset, weights: MatchWeights, targetRecall: number): number {
  const pre = candidates(data);
  for (let shift = 0; shift < 3; shift = Math.round((shift + 0.05) * 100) / 100) {
    if (evaluate(data, { ...weights, bias: weights.bias + shift }, pre).recall >= targetRecall) return shift;
  }
  return 3;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const withCity = process.argv.includes("--city");
  const [seed = 1, pairs = 2000, lambda = 1, heldOutSeed = 2, targetRecall = 0.85] = process.argv.slice(2).filter((a) => !a.startsWith("--")).map(Number);
  const fitSet = generateDataset({ seed, pairs });
  const heldOut = generateDataset({ seed: heldOutSeed, pairs });
  const rows: Parameters<typeof fitWeights>[0] = candidateEvidence(fitSet);
  console.log(`${rows.length} candidate pairs, ${rows.filter((r) => r.isTrue).length} true; lambda ${lambda}`);
  if (withCity) {
    // The dense city of the same seed as a second population, with its own intercept.
    const city = cityEvidence(generateCity({ seed }));
    console.log(`and the city of seed ${seed}: ${city.length} candidate pairs, ${city.filter((r) => r.isTrue).length} true, intercept of its own`);
    rows.push(...city.map((r) => ({ ...r, population: 1 })));
  }
  const intercepts: number[] = [];
  const held = process.argv.includes("--described")
    ? (Object.keys(WEIGHT_REASON) as WeightName[]).filter((n) => n !== "bias" && !DESCRIBED_WEIGHTS.includes(n))
    : FIXED_WEIGHTS;
  const weights = fitWeights(rows, lambda, DEFAULT_WEIGHTS, intercepts, held);
  if (withCity) console.log(`intercepts: scenes ${intercepts[0]}, city ${intercepts[1]}`);
  const shift = recallShift(fitSet, weights, targetRecall);
  const shifted = { ...weights, bias: Math.round((weights.bias + shift) * 100) / 100 };
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  for (const [label, w] of [["fitted", weights], [`bias +${shift} (recall ${targetRecall} on seed ${seed})`, shifted]] as const) {
    console.log(`\n${label}:\n${JSON.stringify(w).replace(/"(\w+)":/g, "$1: ").replace(/,/g, ", ")}`);
    for (const [name, data] of [["fit", fitSet], ["held-out", heldOut]] as const) {
      const e = evaluate(data, w);
      console.log(`  ${name}: P ${pct(e.precision)} R ${pct(e.recall)} 1st ${pct(e.first)} top3 ${pct(e.top3)}`);
    }
  }
}
