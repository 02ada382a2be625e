/**
 * The matching benchmark: each weight set of runs.ts on the fitting seed and on a held-out
 * seed, then the details of the shipped weights on the held-out seed.
 *
 *   npx tsx bench/matching/evaluate.ts [pairs=2000] [fitSeed=1] [heldOutSeed=2]
 */
import { matchEvidence, scoreMatch } from "../../jobs/matching/score.js";
import { generateDataset } from "./generate.js";
import { type Candidate, candidates, type Evaluation, evaluate, suggestedAmong, type SuggestionPolicy } from "./metrics.js";
import { RUNS } from "./runs.js";

const [pairs = 2000, fitSeed = 1, heldOutSeed = 2] = process.argv.slice(2).map(Number);
const fitSet = generateDataset({ seed: fitSeed, pairs });
const heldOut = generateDataset({ seed: heldOutSeed, pairs });
const fitCandidates = candidates(fitSet);
const heldOutCandidates = candidates(heldOut);

const pct = (x: number) => `${(100 * x).toFixed(1)}%`.padStart(6);
const line = (e: Evaluation) => `P ${pct(e.precision)}  R ${pct(e.recall)}  1st ${pct(e.first)}  top3 ${pct(e.top3)}`;

console.log(
  `${pairs} true pairs + ${heldOut.found.length - pairs} found reports without one per seed; ` +
    `${(heldOut.lost.length / heldOut.found.length).toFixed(1)} lost reports per found report; ` +
    `held-out: ${evaluate(heldOut, RUNS[0]!.weights, heldOutCandidates).candidatesPerFound.toFixed(1)} candidates per found report\n`,
);
console.log(`${"run".padEnd(10)} | fit seed ${fitSeed}${" ".repeat(34)} | held-out seed ${heldOutSeed}`);
for (const run of RUNS) {
  const fit = evaluate(fitSet, run.weights, fitCandidates, run.policy);
  const test = evaluate(heldOut, run.weights, heldOutCandidates, run.policy);
  console.log(`${run.name.padEnd(10)} | ${line(fit)} | ${line(test)}   (${run.how})`);
}

const shipped = evaluate(heldOut, RUNS[RUNS.length - 1]!.weights, heldOutCandidates, RUNS[RUNS.length - 1]!.policy);
console.log(`\nshipped weights, held-out seed ${heldOutSeed}:`);
console.log(`  true pairs inside the candidate window: ${pct(shipped.trueInWindow)} (the ceiling for recall)`);
console.log(`  suggestions: ${shipped.suggestions}, precision ${pct(shipped.precision)}, recall ${pct(shipped.recall)}`);
console.log(`  true match ranked first ${pct(shipped.first)}, in the top 3 ${pct(shipped.top3)}`);
for (const [species, s] of Object.entries(shipped.bySpecies)) {
  console.log(`  ${species.padEnd(7)} ${String(s.pairs).padStart(5)} pairs: P ${pct(s.precision)}  R ${pct(s.recall)}  1st ${pct(s.first)}`);
}
console.log("  calibration (score band: candidate pairs, mean score, share true):");
for (const b of shipped.calibration) {
  if (b.pairs > 0) console.log(`    ${b.band}: ${String(b.pairs).padStart(6)}  ${b.meanScore.toFixed(2)}  ${b.observed.toFixed(2)}`);
}

/** What a true pair's two reports share beyond place and time, and how often it is suggested. */
function recallByEvidence(groups: Candidate[][]) {
  const { weights, policy } = RUNS[RUNS.length - 1]!;
  const rows = new Map<string, { n: number; hit: number }>();
  for (const group of groups) {
    const suggested = suggestedAmong(group.map((c) => scoreMatch(c.lost.subject, c.found.subject, { weights }).score), policy);
    group.forEach((c, i) => {
      if (!c.isTrue) return;
      const e = matchEvidence(c.lost.subject, c.found.subject);
      const known = [e.breed, e.sex, e.marks].filter((x) => x !== null).length;
      const key =
        e.microchip !== null ? "a microchip on both sides" : known === 0 ? `colours at most (${e.colors ? "colours" : "nothing"})` : `${Math.min(known, 2)}${known >= 2 ? "+" : ""} of breed, sex, marks`;
      const row = rows.get(key) ?? { n: 0, hit: 0 };
      row.n++;
      if (suggested[i]) row.hit++;
      rows.set(key, row);
    });
  }
  return [...rows].sort((a, b) => a[0].localeCompare(b[0]));
}

console.log("  true pairs in the window, by what both reports state beyond place and time:");
for (const [key, r] of recallByEvidence(heldOutCandidates)) {
  console.log(`    ${key.padEnd(30)} ${String(r.n).padStart(5)} pairs, suggested ${pct(r.hit / r.n)}`);
}

const calibrated = RUNS.find((r) => r.name === "l1-descr")!.weights;
console.log("\noperating points: l1-descr with its bias raised by, threshold alone | with the margin (both seeds):");
for (const shift of [0, 0.4, 0.8, 1.2, 1.6, 1.8, 2.0, 2.2, 2.4]) {
  const weights = { ...calibrated, bias: calibrated.bias + shift };
  const at = (data: typeof fitSet, pre: Candidate[][], policy: SuggestionPolicy) => line(evaluate(data, weights, pre, policy));
  console.log(
    `  +${shift.toFixed(1)}: seed ${fitSeed} ${at(fitSet, fitCandidates, "threshold")} | ${at(fitSet, fitCandidates, "margin")}\n` +
      `        seed ${heldOutSeed} ${at(heldOut, heldOutCandidates, "threshold")} | ${at(heldOut, heldOutCandidates, "margin")}`,
  );
}
