/**
 * Fits the scorer's weights by L2-regularised logistic regression (Newton's method) on the
 * candidate pairs of one generated set. Weights the set cannot estimate (a different or
 * near chip, a near-duplicate photo: too rare, or perfectly separating) stay as given.
 *
 *   npx tsx bench/matching/fit.ts [seed=1] [pairs=2000] [lambda=1] [heldOutSeed=2] [targetRecall=0.85]
 *
 * Prints the fitted weights as a literal for runs.ts / DEFAULT_WEIGHTS, the same with the
 * bias raised just enough to reach the target recall on the fitting seed, and how both do on
 * both seeds.
 */
import { pathToFileURL } from "node:url";
import {
  DEFAULT_WEIGHTS, evidenceFeatures, type MatchEvidence, type MatchWeights, WEIGHT_REASON, type WeightName,
} from "../../notifier/matching/score.js";
import { generateDataset } from "./generate.js";
import type { MatchingDataset } from "./generate.js";
import { candidateEvidence, candidates, evaluate } from "./metrics.js";

export const FIXED_WEIGHTS: WeightName[] = ["chipNear", "chipDifferent", "photoClose"];

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

export function fitWeights(
  rows: Array<{ evidence: MatchEvidence; isTrue: boolean }>,
  lambda: number,
  start: MatchWeights = DEFAULT_WEIGHTS,
): MatchWeights {
  const names = (Object.keys(WEIGHT_REASON) as WeightName[]).filter((n) => !FIXED_WEIGHTS.includes(n));
  const data = rows.map((r) => {
    const f = evidenceFeatures(r.evidence);
    return { x: names.map((n) => f[n]), offset: FIXED_WEIGHTS.reduce((s, n) => s + start[n] * f[n], 0), y: r.isTrue ? 1 : 0 };
  });
  // Only features some pair shows can be fitted; the others keep their starting value.
  const seen = names.map((_, j) => data.some((d) => d.x[j] !== 0));
  let w = names.map((n) => start[n]);
  for (let iter = 0; iter < 50; iter++) {
    const k = names.length;
    const h = Array.from({ length: k }, () => new Array<number>(k).fill(0));
    const g = new Array<number>(k).fill(0);
    for (const d of data) {
      const z = d.offset + d.x.reduce((s, x, j) => s + x * w[j]!, 0);
      const p = 1 / (1 + Math.exp(-z));
      for (let i = 0; i < k; i++) {
        if (d.x[i] === 0) continue;
        g[i]! += (d.y - p) * d.x[i]!;
        for (let j = 0; j < k; j++) h[i]![j]! += p * (1 - p) * d.x[i]! * d.x[j]!;
      }
    }
    for (let i = 0; i < k; i++) {
      const reg = names[i] === "bias" ? 0 : lambda;
      g[i]! -= reg * w[i]!;
      h[i]![i]! += reg + (seen[i] ? 0 : 1);
    }
    const step = solve(h, g);
    w = w.map((v, i) => v + step[i]!);
    if (Math.max(...step.map(Math.abs)) < 1e-6) break;
  }
  const fitted = { ...start };
  names.forEach((n, i) => {
    fitted[n] = Math.round(w[i]! * 100) / 100;
  });
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
  const [seed = 1, pairs = 2000, lambda = 1, heldOutSeed = 2, targetRecall = 0.85] = process.argv.slice(2).map(Number);
  const fitSet = generateDataset({ seed, pairs });
  const heldOut = generateDataset({ seed: heldOutSeed, pairs });
  const rows = candidateEvidence(fitSet);
  console.log(`${rows.length} candidate pairs, ${rows.filter((r) => r.isTrue).length} true; lambda ${lambda}`);
  const weights = fitWeights(rows, lambda);
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
