/**
 * A city dense on both sides: many found reports around each lost report and many lost reports
 * around each found one, all of dogs and cats drawn from the same shelter-intake breed and
 * coat mix, arriving over 8 days in a 40 × 40 km area. Reports are replayed in the order they
 * are created, and each is matched the way jobs/matching/matcher.ts does when its job runs:
 * against the reports already there, with the found side's margin (isSuggested), and the
 * lost side's alert rule (alertsOwner, against the rest of that lost report's listing)
 * deciding which new suggestion tells its owner at once.
 * Figures and sources: README.md, "A city".
 *
 *   npx tsx bench/matching/city.ts [seed=1] [owners=200] [--grid]
 *
 * With more owners the area and the other reports grow with them, at the same density
 * (1,000 owners: 89.4 × 89.4 km), to check a figure is not a small sample's.
 */
import { pathToFileURL } from "node:url";
import { coarsen } from "../../lib/geo.js";
import {
  alertsOwner, DEFAULT_WEIGHTS, isSuggested, type MatchEvidence, type MatchSubject, type MatchWeights, matchEvidence, OWNER_ALERT_MARGIN_LOG_ODDS,
  OWNER_ALERT_MIN_SCORE, weighEvidence, withinCandidateWindow,
} from "../../jobs/matching/score.js";
import { finderWrites, makeAnimal, ownerWrites, randomBits } from "./animals.js";
import type { BreedSpec, Species } from "./population.js";
import { Rng } from "./prng.js";
import { PLACES } from "./wording.js";

const DAY = 86_400_000;
const HOUR = 3_600_000;
const START = Date.UTC(2026, 2, 2);

/**
 * Shares, rounded from published figures (README.md "A city", sources):
 * - dogs and cats are nearly all of lost and found reports; dogs a little more than half of
 *   lost reports (Weiss et al. 2012);
 * - shelter intake is dominated by mixed breeds among dogs and by domestic short/long hair among
 *   cats (Shelter Animals Count; about 9 in 10 intake cats are domestic): here mixed-breed
 *   dogs count ×3 their pet popularity (about a third of dogs, plus pit-bull, Labrador,
 *   Chihuahua and shepherd types), domestic short hair ×1.6 (with long hair ≈ 80 % of cats).
 */
const CITY_SPECIES: Array<[Species, number]> = [["dog", 55], ["cat", 45]];
const INTAKE_SHARE = (b: BreedSpec) => b.popularity * (b.key === "mixed-dog" ? 3 : b.key === "dsh" ? 1.6 : 1);
/**
 * How far (km, log-normal) and how long (days from last seen to found) they stray: dogs are
 * mostly found within a day or two and a short way off, a few carried far by whoever picked
 * them up (Lord et al. 2007, dogs; Weiss et al. 2012); cats stay close, a few hundred metres,
 * but turn up after days (Lord et al. 2007, cats; Huang et al. 2018: outdoor-access cats a
 * median of about 300 m away).
 */
const STRAY: Record<"dog" | "cat", { km: number; sigma: number; carried: number }> = {
  dog: { km: 1.2, sigma: 1.1, carried: 0.06 }, cat: { km: 0.35, sigma: 1.0, carried: 0.03 },
};
const LAG: Record<"dog" | "cat", { days: number; sigma: number }> = { dog: { days: 0.8, sigma: 1.2 }, cat: { days: 3, sigma: 1.0 } };

export interface CityReport {
  id: string;
  side: "lost" | "found";
  /** The animal: a lost and a found report of one animal share it. */
  animal: number;
  subject: MatchSubject;
  /** When the report is created (and its matching job runs). */
  createdAt: number;
}

export interface CityOptions {
  seed: number;
  /** Owners whose animal a finder reports in the window. */
  owners?: number;
  /** Found animals whose owner filed no lost report here. */
  unclaimed?: number;
  /** Open lost reports whose animal is not found in the window (some older than it). */
  otherLost?: number;
  sizeKm?: number;
  days?: number;
}

export function generateCity({ seed, owners = 200, unclaimed = 200, otherLost = 300, sizeKm = 40, days = 8 }: CityOptions): CityReport[] {
  const rng = new Rng(seed);
  const template = randomBits(rng, [rng.int(0, 2 ** 32 - 1), rng.int(0, 2 ** 32 - 1)], 0.5);
  const origin = { lat: 52.3, lon: 13.1 };
  const point = (x: number, y: number) => ({ lat: origin.lat + y / 111.32, lon: origin.lon + x / (111.32 * Math.cos((origin.lat * Math.PI) / 180)) });
  const inside = () => ({ x: rng.float(0, sizeKm), y: rng.float(0, sizeKm) });
  const reports: CityReport[] = [];
  let animals = 0;
  const add = (side: "lost" | "found", animal: number, species: Species, at: { x: number; y: number }, time: number, written: ReturnType<typeof ownerWrites>) => {
    // Owners file within hours of noticing; finders post soon after picking the animal up.
    const createdAt = Math.max(time, START) + rng.exponential(side === "lost" ? 8 : 3) * HOUR;
    reports.push({ id: `${side === "lost" ? "L" : "F"}${reports.length}`, side, animal, createdAt,
      subject: { species, point: coarsen(point(at.x, at.y)), at: new Date(time), ...written } });
  };
  const place = () => rng.pick(PLACES);
  for (let i = 0; i < owners; i++) {
    const species = rng.weighted(CITY_SPECIES) as "dog" | "cat";
    const animal = makeAnimal(rng, species, template, 0.15, INTAKE_SHARE);
    let lost: { x: number; y: number };
    let found: { x: number; y: number };
    let lastSeen: number;
    let foundAt: number;
    do {
      lost = inside();
      const km = rng.chance(STRAY[species].carried) ? rng.float(3, 25) : rng.lognormal(STRAY[species].km, STRAY[species].sigma);
      const bearing = rng.float(0, 2 * Math.PI);
      found = { x: lost.x + km * Math.cos(bearing), y: lost.y + km * Math.sin(bearing) };
      lastSeen = START + rng.float(0, days) * DAY;
      foundAt = lastSeen + rng.lognormal(LAG[species].days, LAG[species].sigma) * DAY;
    } while (found.x < 0 || found.y < 0 || found.x > sizeKm || found.y > sizeKm || foundAt > START + days * DAY);
    const chipSides = rng.weighted([["both", 55], ["lost", 30], ["found", 15]] as const);
    const shared = place();
    const a = animals++;
    // The owner's memory of the time is off by a few hours either way.
    add("lost", a, species, lost, lastSeen + rng.normal() * 3 * HOUR, ownerWrites(rng, animal, { place: shared, template, chip: chipSides !== "found" }));
    add("found", a, species, found, foundAt, finderWrites(rng, animal, { place: rng.chance(0.5) ? shared : place(), template, chip: chipSides !== "lost", collarKept: rng.chance(0.75) }));
  }
  for (let i = 0; i < unclaimed; i++) {
    const species = rng.weighted(CITY_SPECIES) as "dog" | "cat";
    const animal = makeAnimal(rng, species, template, 0.1, INTAKE_SHARE);
    add("found", animals++, species, inside(), START + rng.float(0, days) * DAY, finderWrites(rng, animal, { place: place(), template, chip: true, collarKept: rng.chance(0.75) }));
  }
  for (let i = 0; i < otherLost; i++) {
    const species = rng.weighted(CITY_SPECIES) as "dog" | "cat";
    const animal = makeAnimal(rng, species, template, 0.12, INTAKE_SHARE);
    // Open lost reports: filed in the window, or up to three weeks before it and still open.
    const lastSeen = START + (rng.chance(0.6) ? rng.float(0, days) : -rng.float(0, 21)) * DAY;
    add("lost", animals++, species, inside(), lastSeen, ownerWrites(rng, animal, { place: place(), template, chip: true }));
  }
  return reports.sort((a, b) => a.createdAt - b.createdAt);
}

/** Every candidate pair of the city (lost × found through the candidate window), labelled, for fitting. */
export function cityEvidence(reports: CityReport[]): Array<{ evidence: MatchEvidence; isTrue: boolean }> {
  const found = reports.filter((r) => r.side === "found");
  return reports
    .filter((r) => r.side === "lost")
    .flatMap((lost) =>
      found
        .filter((f) => withinCandidateWindow(lost.subject, f.subject))
        .map((f) => ({ evidence: matchEvidence(lost.subject, f.subject), isTrue: f.animal === lost.animal })),
    );
}

/** How the lost report's owner is told of a new suggestion. */
export type AlertPolicy = { name: string; alerts: (score: number, bestOtherOfLost: number, chipEqual: boolean) => boolean };

export const TODAY: AlertPolicy = { name: "every suggestion alerts (before)", alerts: () => true };
export const SHIPPED: AlertPolicy = { name: `alertsOwner (margin ${OWNER_ALERT_MARGIN_LOG_ODDS}, min ${OWNER_ALERT_MIN_SCORE})`, alerts: alertsOwner };

export interface CityRun {
  owners: number;
  /** Owners whose true match is in their listing at the end, and ranked first there. */
  recall: number;
  first: number;
  /** Listing sizes of the owners' lost reports at the end. */
  listing: { mean: number; p90: number; max: number };
  /** Share of all suggestions that are right. */
  precision: number;
  /** Immediate `match` alerts per owner, and the share about their own animal. */
  alertsPerOwner: number;
  alertsTrue: number;
  /** Owners with at least one alert about their animal. */
  ownersAlertedTrue: number;
  /** Daily "N possible matches" notifications per owner (one per lost report per 24 h at most). */
  digestsPerOwner: number;
  /** Alerts and digests per owner together. */
  matchNotificationsPerOwner: number;
  /** The same over every lost report, decoys' owners included. */
  alertsPerLostReport: number;
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? 0;
};

/** Replays the reports in creation order through the matcher's rules. */
export function runCity(reports: CityReport[], policy: AlertPolicy, weights: MatchWeights = DEFAULT_WEIGHTS, digestQuietAfterAlert = false): CityRun {
  const present: CityReport[] = [];
  const scores = new Map<string, { score: number; chip: boolean }>();
  const score = (lost: CityReport, found: CityReport) => {
    const key = `${lost.id}:${found.id}`;
    let s = scores.get(key);
    if (!s) {
      const e = matchEvidence(lost.subject, found.subject);
      s = withinCandidateWindow(lost.subject, found.subject) ? { score: weighEvidence(e, weights).score, chip: e.microchip === "equal" } : { score: -1, chip: false };
      scores.set(key, s);
    }
    return s;
  };
  const pair = (a: CityReport, b: CityReport) => (a.side === "lost" ? score(a, b) : score(b, a));
  /** Each report's candidates so far, kept as reports arrive. */
  const candidateLists = new Map<string, CityReport[]>();
  const candidatesOf = (r: CityReport) => candidateLists.get(r.id) ?? [];
  /** Per lost report: its suggestions (target, score) and its alert and digest times. */
  const listing = new Map<string, Array<{ found: CityReport; score: number }>>();
  const alerts = new Map<string, CityReport[]>();
  const digests = new Map<string, number[]>();
  const alertTimes = new Map<string, number>();
  for (const r of reports) {
    const cands = present.filter((o) => o.side !== r.side && pair(r, o).score >= 0);
    present.push(r);
    candidateLists.set(r.id, cands);
    for (const c of cands) candidateLists.get(c.id)!.push(r);
    const suggested: Array<{ lost: CityReport; found: CityReport; score: number; chip: boolean }> = [];
    for (const c of cands) {
      const [lost, found] = r.side === "lost" ? [r, c] : [c, r];
      const { score: s, chip } = pair(lost, found);
      const bestOfFound = Math.max(0, ...candidatesOf(found).map((l) => pair(l, found).score));
      if (isSuggested(s, bestOfFound)) suggested.push({ lost, found, score: s, chip });
    }
    // As the matcher: write this run's new suggestions, then weigh each against the rest of its listing.
    const fresh = suggested.filter(({ lost, found }) => {
      const list = listing.get(lost.id) ?? [];
      if (list.some((x) => x.found.id === found.id)) return false;
      list.push({ found, score: Math.round(pair(lost, found).score * 1000) / 1000 });
      listing.set(lost.id, list);
      return true;
    });
    for (const { lost, found, score: s, chip } of fresh) {
      const bestOther = Math.max(0, ...listing.get(lost.id)!.filter((x) => x.found.id !== found.id).map((x) => x.score));
      if (policy.alerts(s, bestOther, chip)) {
        alerts.set(lost.id, [...(alerts.get(lost.id) ?? []), found]);
        alertTimes.set(lost.id, r.createdAt);
      } else {
        // The daily "N possible matches": a new one only 24 h after the last opened.
        const times = digests.get(lost.id) ?? [];
        const lastAlert = alertTimes.get(lost.id);
        const quiet = digestQuietAfterAlert && lastAlert !== undefined && r.createdAt - lastAlert < DAY;
        if (!quiet && (times.length === 0 || r.createdAt - times.at(-1)! >= DAY)) times.push(r.createdAt);
        digests.set(lost.id, times);
      }
    }
  }
  const foundOf = new Map(reports.filter((r) => r.side === "found").map((r) => [r.animal, r]));
  const owners = reports.filter((r) => r.side === "lost" && foundOf.has(r.animal));
  let recall = 0;
  let first = 0;
  let alertCount = 0;
  let alertTrue = 0;
  let ownersAlertedTrue = 0;
  let digestCount = 0;
  const sizes: number[] = [];
  for (const o of owners) {
    const list = listing.get(o.id) ?? [];
    sizes.push(list.length);
    const truth = list.find((x) => x.found.animal === o.animal);
    if (truth) {
      recall++;
      if (!list.some((x) => x !== truth && x.score >= truth.score)) first++;
    }
    const told = alerts.get(o.id) ?? [];
    alertCount += told.length;
    const right = told.filter((f) => f.animal === o.animal).length;
    alertTrue += right;
    if (right > 0) ownersAlertedTrue++;
    digestCount += digests.get(o.id)?.length ?? 0;
  }
  const allSuggestions = [...listing].flatMap(([lostId, list]) => list.map((x) => ({ lostId, ...x })));
  const lostById = new Map(reports.map((r) => [r.id, r]));
  const right = allSuggestions.filter((x) => lostById.get(x.lostId)!.animal === x.found.animal).length;
  const lostCount = reports.filter((r) => r.side === "lost").length;
  const n = owners.length;
  return {
    owners: n,
    recall: recall / n,
    first: first / n,
    listing: { mean: sizes.reduce((a, b) => a + b, 0) / n, p90: percentile(sizes, 90), max: Math.max(...sizes) },
    precision: right / Math.max(1, allSuggestions.length),
    alertsPerOwner: alertCount / n,
    alertsTrue: alertTrue / Math.max(1, alertCount),
    ownersAlertedTrue: ownersAlertedTrue / n,
    digestsPerOwner: digestCount / n,
    matchNotificationsPerOwner: (alertCount + digestCount) / n,
    alertsPerLostReport: [...alerts.values()].reduce((a, b) => a + b.length, 0) / lostCount,
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
export const formatCityRun = (name: string, r: CityRun) =>
  `${name}\n  listing: recall ${pct(r.recall)}, true match first ${pct(r.first)}, precision ${pct(r.precision)}; ` +
  `suggestions per owner mean ${r.listing.mean.toFixed(2)}, p90 ${r.listing.p90}, max ${r.listing.max}\n` +
  `  alerts per owner ${r.alertsPerOwner.toFixed(2)}, ${pct(r.alertsTrue)} about their animal (owners alerted about it: ${pct(r.ownersAlertedTrue)}); ` +
  `daily digests per owner ${r.digestsPerOwner.toFixed(2)}; all match notifications per owner ${r.matchNotificationsPerOwner.toFixed(2)}; ` +
  `alerts per lost report (all) ${r.alertsPerLostReport.toFixed(2)}`;

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [seed = 1, owners = 200] = process.argv.slice(2).filter((a) => !a.startsWith("--")).map(Number);
  // More owners: the area and the other reports grow with them, so the density stays the same.
  const sizeKm = Math.round(40 * Math.sqrt(owners / 200) * 10) / 10;
  const reports = generateCity({ seed, owners, unclaimed: owners, otherLost: Math.round(owners * 1.5), sizeKm });
  const lost = reports.filter((r) => r.side === "lost");
  const found = reports.filter((r) => r.side === "found");
  console.log(`seed ${seed}: ${lost.length} lost reports (${owners} whose animal is found), ${found.length} found reports, ${sizeKm} × ${sizeKm} km, 8 days`);
  console.log(formatCityRun(TODAY.name, runCity(reports, TODAY)));
  console.log(formatCityRun(SHIPPED.name, runCity(reports, SHIPPED)));
  if (process.argv.includes("--grid")) {
    for (const min of [0.5, 0.6, 0.7, 0.8]) {
      for (const margin of [0.5, 1, 1.5, 2, 2.5]) {
        const lo = (s: number) => Math.log(s / (1 - s));
        const policy: AlertPolicy = {
          name: `margin ${margin}, min ${min}`,
          alerts: (s, other, chip) => chip || (s >= min && (other <= 0 || lo(s) - lo(Math.min(other, 0.9999)) >= margin)),
        };
        const r = runCity(reports, policy);
        console.log(`  ${policy.name.padEnd(20)} alerts/owner ${r.alertsPerOwner.toFixed(2)}  true ${pct(r.alertsTrue)}  owners told of theirs ${pct(r.ownersAlertedTrue)}  digests/owner ${r.digestsPerOwner.toFixed(2)}`);
      }
    }
  }
}
