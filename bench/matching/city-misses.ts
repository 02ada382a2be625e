/**
 * Why an owner's true match is not first in the city: the city replayed as city.ts does, with
 * every candidate pair's evidence computed once, so a weight set or a feature change can be
 * replayed in about a second even at 1,000 owners. Prints the first rank and, for each owner
 * it misses, why: outside the window, below the threshold, outranked on the found side (the
 * margin), or listed behind another found report, and the reasons that put that one ahead.
 *
 *   npx tsx bench/matching/city-misses.ts [seed=1] [owners=200] [--list]   (--list: each miss's two pairs of evidence)
 */
import { pathToFileURL } from "node:url";
import {
  DEFAULT_WEIGHTS, DIFFERENT_CHIPS_MAX_SCORE, evidenceFeatures, isSuggested, type MatchEvidence, type MatchWeights, matchEvidence,
  SUGGESTION_THRESHOLD, WEIGHT_REASON, type WeightName, withinCandidateWindow,
} from "../../jobs/matching/score.js";
import { type CityReport, generateCity } from "./city.js";

export interface CityPairs {
  reports: CityReport[];
  /** Per report index: candidate report indices and the pair's evidence. */
  cands: Array<Array<{ other: number; evidence: MatchEvidence }>>;
}

export function cityPairs(seed: number, owners: number): CityPairs {
  const sizeKm = Math.round(40 * Math.sqrt(owners / 200) * 10) / 10;
  const reports = generateCity({ seed, owners, unclaimed: owners, otherLost: Math.round(owners * 1.5), sizeKm });
  const cands: CityPairs["cands"] = reports.map(() => []);
  reports.forEach((l, i) => {
    if (l.side !== "lost") return;
    reports.forEach((f, j) => {
      if (f.side !== "found" || !withinCandidateWindow(l.subject, f.subject)) return;
      const evidence = matchEvidence(l.subject, f.subject);
      cands[i]!.push({ other: j, evidence });
      cands[j]!.push({ other: i, evidence });
    });
  });
  return { reports, cands };
}

export type Features = (e: MatchEvidence) => MatchWeights;

export function pairScore(e: MatchEvidence, weights: MatchWeights, features: Features = evidenceFeatures): number {
  if (e.microchip === "equal") return 1;
  const f = features(e);
  let z = 0;
  for (const k of Object.keys(WEIGHT_REASON) as WeightName[]) z += weights[k] * f[k];
  const s = Math.round((1 / (1 + Math.exp(-z))) * 1e4) / 1e4;
  return e.microchip === "different" ? Math.min(s, DIFFERENT_CHIPS_MAX_SCORE) : s;
}

export interface Miss {
  owner: number;
  kind: "window" | "threshold" | "margin" | "behind";
  trueScore: number | null;
  /** The report ahead: the lost report that outranks the owner on the found side, or the found report ahead in the listing. */
  ahead: number | null;
  aheadScore: number | null;
}

/** city.ts `runCity`'s listing, from precomputed pairs: recall, first rank and each miss. */
export function replay(p: CityPairs, weights: MatchWeights = DEFAULT_WEIGHTS, features: Features = evidenceFeatures) {
  const { reports, cands } = p;
  const score = cands.map((cs) => cs.map((c) => pairScore(c.evidence, weights, features)));
  const best = new Array<number>(reports.length).fill(0);
  const listing = new Map<number, Map<number, number>>();
  reports.forEach((r, i) => {
    const present = cands[i]!.map((c, k) => ({ j: c.other, s: score[i]![k]! })).filter((c) => c.j < i);
    if (r.side === "lost") for (const c of present) best[c.j] = Math.max(best[c.j]!, c.s);
    else best[i] = Math.max(0, ...present.map((c) => c.s));
    for (const c of present) {
      const [lost, found] = r.side === "lost" ? [i, c.j] : [c.j, i];
      if (!isSuggested(c.s, best[found]!)) continue;
      const list = listing.get(lost) ?? new Map<number, number>();
      if (!list.has(found)) list.set(found, Math.round(c.s * 1000) / 1000);
      listing.set(lost, list);
    }
  });
  const foundOf = new Map(reports.flatMap((r, i) => (r.side === "found" ? [[r.animal, i] as const] : [])));
  const misses: Miss[] = [];
  let owners = 0;
  let recall = 0;
  let first = 0;
  reports.forEach((r, i) => {
    const f = r.side === "lost" ? foundOf.get(r.animal) : undefined;
    if (f === undefined) return;
    owners++;
    const list = listing.get(i) ?? new Map<number, number>();
    const k = cands[i]!.findIndex((c) => c.other === f);
    const s = k >= 0 ? score[i]![k]! : null;
    if (list.has(f)) {
      recall++;
      const t = list.get(f)!;
      const ahead = [...list].filter(([j, x]) => j !== f && x >= t).sort((a, b) => b[1] - a[1])[0];
      if (!ahead) first++;
      else misses.push({ owner: i, kind: "behind", trueScore: s, ahead: ahead[0], aheadScore: ahead[1] });
      return;
    }
    if (s === null) return misses.push({ owner: i, kind: "window", trueScore: null, ahead: null, aheadScore: null });
    if (s < SUGGESTION_THRESHOLD) return misses.push({ owner: i, kind: "threshold", trueScore: s, ahead: null, aheadScore: null });
    // Outranked on the found side when the later of the two reports ran.
    const at = Math.max(i, f);
    const rivals = cands[f]!.map((c, m) => ({ j: c.other, s: score[f]![m]! })).filter((c) => c.j <= at && c.j !== i).sort((a, b) => b.s - a.s);
    misses.push({ owner: i, kind: "margin", trueScore: s, ahead: rivals[0]?.j ?? null, aheadScore: rivals[0]?.s ?? null });
  });
  return { owners, recall: recall / owners, first: first / owners, misses, score };
}

/** Log-odds per reason of one pair. */
export function contributions(e: MatchEvidence, weights: MatchWeights = DEFAULT_WEIGHTS, features: Features = evidenceFeatures) {
  const f = features(e);
  const out: Record<string, number> = {};
  for (const k of Object.keys(WEIGHT_REASON) as WeightName[]) {
    const reason = WEIGHT_REASON[k] ?? "bias";
    if (f[k] !== 0) out[reason] = (out[reason] ?? 0) + weights[k] * f[k];
  }
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [seed = 1, owners = 200] = process.argv.slice(2).filter((a) => !a.startsWith("--")).map(Number);
  const p = cityPairs(seed, owners);
  const r = replay(p);
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  console.log(`seed ${seed}, ${r.owners} owners: recall ${pct(r.recall)}, first ${pct(r.first)}`);
  const byKind = new Map<string, number>();
  for (const m of r.misses) byKind.set(m.kind, (byKind.get(m.kind) ?? 0) + 1);
  console.log([...byKind].map(([k, n]) => `${k} ${n}`).join(", "));
  const ev = (a: number, b: number) => p.cands[a]!.find((c) => c.other === b)!.evidence;
  // Per miss outranked or behind, what each reason gains the report ahead over the true pair (log-odds):
  // summed per reason, and the one reason that gains it most.
  const diff: Record<string, number[]> = {};
  const lead = new Map<string, number>();
  for (const m of r.misses) {
    if (m.kind !== "behind" && m.kind !== "margin") continue;
    const f = foundOfOwner(p, m.owner);
    const [trueE, aheadE] = m.kind === "behind" ? [ev(m.owner, f), ev(m.owner, m.ahead!)] : [ev(m.owner, f), ev(m.ahead!, f)];
    const a = contributions(trueE);
    const b = contributions(aheadE);
    const gains = [...new Set([...Object.keys(a), ...Object.keys(b)])].map((k) => [k, (b[k] ?? 0) - (a[k] ?? 0)] as const);
    for (const [k, g] of gains) (diff[`${m.kind}:${k}`] ??= []).push(g);
    const key = `${m.kind}:${gains.sort((x, y) => y[1] - x[1])[0]![0]}`;
    lead.set(key, (lead.get(key) ?? 0) + 1);
  }
  console.log(`  largest gain of the report ahead: ${[...lead].sort((x, y) => y[1] - x[1]).map(([k, n]) => `${k} ${n}`).join(", ")}`);
  // Below the threshold: the reason that sinks the true pair most.
  const sink = new Map<string, number>();
  for (const m of r.misses.filter((x) => x.kind === "threshold")) {
    const c = Object.entries(contributions(ev(m.owner, foundOfOwner(p, m.owner)))).filter(([k]) => k !== "bias").sort((x, y) => x[1] - y[1]);
    const key = c[0] && c[0][1] < 0 ? c[0][0] : "nothing against, too little for";
    sink.set(key, (sink.get(key) ?? 0) + 1);
  }
  console.log(`  below the threshold, most against: ${[...sink].sort((x, y) => y[1] - x[1]).map(([k, n]) => `${k} ${n}`).join(", ")}`);
  const gap = r.misses.filter((m) => m.kind === "behind").map((m) => Math.log(m.aheadScore! / (1 - m.aheadScore!)) - Math.log(m.trueScore! / (1 - m.trueScore!)));
  console.log(`  behind by under 0.5 log-odds: ${gap.filter((g) => g < 0.5).length} of ${gap.length}`);
  for (const [k, xs] of Object.entries(diff).sort()) {
    const pos = xs.filter((x) => x > 0.05).length;
    console.log(`  ${k.padEnd(20)} mean ahead−true ${(xs.reduce((s, x) => s + x, 0) / xs.length).toFixed(2).padStart(6)}, ahead gains in ${pos}/${xs.length}`);
  }
  if (process.argv.includes("--list")) {
    for (const m of r.misses) {
      const f = foundOfOwner(p, m.owner);
      const show = (e: MatchEvidence | null) =>
        e ? `${JSON.stringify({ ...e, distanceKm: +e.distanceKm.toFixed(2), gapDays: +e.gapDays.toFixed(2), species: undefined })}` : "-";
      const trueE = p.cands[m.owner]!.find((c) => c.other === f)?.evidence ?? null;
      const aheadE = m.ahead === null ? null : m.kind === "behind" ? ev(m.owner, m.ahead) : ev(m.ahead, f);
      console.log(`${m.kind} ${m.trueScore} vs ${m.aheadScore}\n  true  ${show(trueE)}\n  ahead ${show(aheadE)}`);
    }
  }
}

function foundOfOwner(p: CityPairs, owner: number): number {
  const animal = p.reports[owner]!.animal;
  return p.reports.findIndex((r) => r.side === "found" && r.animal === animal);
}
