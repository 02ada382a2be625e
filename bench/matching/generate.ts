/**
 * A labelled, deterministic set of lost and found reports for the matching benchmark.
 *
 * Each found report is its own scene (scenes lie > 60 km apart): its true lost report, if the
 * owner filed one, and the other open lost reports of the same species around it, which are
 * the decoys. Noise: see population.ts, wording.ts, animals.ts, and the constants below.
 * Run `npx tsx bench/matching/generate.ts [seed] [pairs]` for a summary and a sample.
 */
import { pathToFileURL } from "node:url";
import { coarsen } from "../../lib/geo.js";
import type { MatchSubject } from "../../jobs/matching/score.js";
import { type Animal, finderWrites, makeAnimal, ownerWrites, randomBits } from "./animals.js";
import { Rng } from "./prng.js";
import { SPECIES_SHARE, type Species } from "./population.js";
import { PLACES } from "./wording.js";

export interface LabelledLost {
  id: string;
  scene: number;
  subject: MatchSubject;
}

export interface LabelledFound {
  id: string;
  scene: number;
  subject: MatchSubject;
  /** The lost report of the same animal, or null when its owner filed none. */
  trueLostId: string | null;
}

export interface MatchingDataset {
  seed: number;
  lost: LabelledLost[];
  found: LabelledFound[];
}

export interface GenerateOptions {
  seed: number;
  /** Found reports with a true lost report. */
  pairs: number;
  /** Extra found reports whose owner filed no lost report, as a share of `pairs`. */
  unmatchedShare?: number;
}

const DAY = 86_400_000;
const HOUR = 3_600_000;
/** How far animals stray (km, log-normal median and spread) and how often one is carried off by car. */
const STRAY: Record<Species, { median: number; sigma: number; carried: number }> = {
  dog: { median: 1.2, sigma: 1.1, carried: 0.06 }, cat: { median: 0.4, sigma: 1.0, carried: 0.03 },
  rabbit: { median: 0.3, sigma: 0.9, carried: 0.03 }, bird: { median: 2, sigma: 1.3, carried: 0.05 },
};
/** Days from lastSeenAt to foundAt (log-normal). */
const LAG: Record<Species, { median: number; sigma: number }> = {
  dog: { median: 0.8, sigma: 1.4 }, cat: { median: 4, sigma: 1.2 }, rabbit: { median: 1, sigma: 1.2 }, bird: { median: 1.5, sigma: 1.3 },
};
/** Open lost reports of the species around a found report (Poisson mean). */
const DECOYS: Record<Species, number> = { dog: 6, cat: 6, rabbit: 2, bird: 2 };

function offset(rng: Rng, from: { lat: number; lon: number }, km: number) {
  const bearing = rng.float(0, 2 * Math.PI);
  return {
    lat: from.lat + (km / 111.32) * Math.cos(bearing),
    lon: from.lon + (km / (111.32 * Math.cos((from.lat * Math.PI) / 180))) * Math.sin(bearing),
  };
}

function strayKm(rng: Rng, species: Species): number {
  const s = STRAY[species];
  return rng.chance(s.carried) ? rng.float(3, 40) : rng.lognormal(s.median, s.sigma);
}

/** Age of an open lost report: many are found (and closed) within days, the rest linger. */
function openReportAgeDays(rng: Rng): number {
  return rng.chance(0.45) ? rng.exponential(5) : rng.float(0, 62);
}

function subject(species: Species, point: { lat: number; lon: number }, at: Date, written: ReturnType<typeof ownerWrites>): MatchSubject {
  return { species, point: coarsen(point), at, ...written };
}

export function generateDataset({ seed, pairs, unmatchedShare = 0.25 }: GenerateOptions): MatchingDataset {
  const rng = new Rng(seed);
  const template = randomBits(rng, [rng.int(0, 2 ** 32 - 1), rng.int(0, 2 ** 32 - 1)], 0.5);
  const data: MatchingDataset = { seed, lost: [], found: [] };
  const scenes = pairs + Math.round(pairs * unmatchedShare);
  for (let scene = 0; scene < scenes; scene++) {
    const matched = scene < pairs;
    const species = rng.weighted(SPECIES_SHARE);
    const centre = { lat: 20 + (scene % 60) * 0.7 + rng.float(0, 0.1), lon: -120 + Math.floor(scene / 60) * 1.5 + rng.float(0, 0.1) };
    const places = Array.from({ length: 5 }, () => rng.pick(PLACES));
    const foundAt = new Date(Date.UTC(2025, 0, 1) + rng.float(0, 365) * DAY);
    const animal = makeAnimal(rng, species, template, matched ? 0.15 : 0.1);
    const chipSides = rng.weighted([["both", 55], ["lost", 30], ["found", 15]] as const);
    const foundPlace = rng.pick(places);

    let truth: LabelledLost | null = null;
    let ownerPhotos: string[] = [];
    if (matched) {
      const km = strayKm(rng, species);
      const lastSeen = foundAt.getTime() - rng.lognormal(LAG[species].median, LAG[species].sigma) * DAY + rng.normal() * 3 * HOUR;
      const ownerPlace = km < 2 && rng.chance(0.5) ? foundPlace : rng.pick(places);
      const written = ownerWrites(rng, animal, { place: ownerPlace, template, chip: chipSides !== "found" });
      ownerPhotos = written.photoHashes;
      truth = { id: `L${data.lost.length}`, scene, subject: subject(species, offset(rng, centre, km), new Date(lastSeen), written) };
      data.lost.push(truth);
    }
    const finder = finderWrites(rng, animal, {
      place: foundPlace, template, chip: !matched || chipSides !== "lost", collarKept: rng.chance(0.75),
    });
    // Now and then the finder's picture is the owner's own photo, re-shared or re-cropped.
    if (ownerPhotos.length > 0 && finder.photoHashes.length > 0 && rng.chance(0.07)) {
      const [hi, lo] = [Number.parseInt(ownerPhotos[0]!.slice(0, 8), 16), Number.parseInt(ownerPhotos[0]!.slice(8), 16)];
      const near = randomBits(rng, [hi, lo], 0.05);
      finder.photoHashes.push(near[0].toString(16).padStart(8, "0") + near[1].toString(16).padStart(8, "0"));
    }
    data.found.push({ id: `F${data.found.length}`, scene, subject: subject(species, centre, foundAt, finder), trueLostId: truth?.id ?? null });

    for (let n = rng.poisson(DECOYS[species]); n > 0; n--) {
      const other: Animal = makeAnimal(rng, species, template, 0.12);
      // Lost reports cluster where people live: some in the same neighbourhood, the rest anywhere around.
      const km = rng.chance(0.4) ? rng.lognormal(2.5, 0.8) : 32 * Math.sqrt(rng.next());
      const lastSeen = foundAt.getTime() - openReportAgeDays(rng) * DAY + rng.float(-2, 0) * HOUR;
      const written = ownerWrites(rng, other, { place: rng.pick(places), template, chip: true });
      data.lost.push({ id: `L${data.lost.length}`, scene, subject: subject(species, offset(rng, centre, km), new Date(lastSeen), written) });
    }
  }
  return data;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const seed = Number(process.argv[2] ?? 1);
  const pairs = Number(process.argv[3] ?? 2000);
  const data = generateDataset({ seed, pairs });
  const share = (xs: { subject: MatchSubject }[], f: (s: MatchSubject) => boolean) =>
    `${Math.round((100 * xs.filter((x) => f(x.subject)).length) / xs.length)}%`;
  console.log(`seed ${seed}: ${data.found.length} found reports (${pairs} with a true lost report), ${data.lost.length} lost reports`);
  for (const [name, xs] of [["lost", data.lost], ["found", data.found]] as const) {
    console.log(
      `${name}: breed ${share(xs, (s) => !!s.breed)}, colours ${share(xs, (s) => s.colors.length > 0)}, sex ${share(xs, (s) => !!s.sex)}, ` +
        `chip ${share(xs, (s) => !!s.microchipId)}, marks ${share(xs, (s) => !!s.marks)}, description ${share(xs, (s) => !!s.description)}, ` +
        `photo ${share(xs, (s) => s.photoHashes.length > 0)}`,
    );
  }
  const lostById = new Map(data.lost.map((l) => [l.id, l]));
  for (const f of data.found.slice(0, 4)) {
    console.log("\nfound:", JSON.stringify({ ...f.subject, photoHashes: f.subject.photoHashes.length }));
    const t = f.trueLostId ? lostById.get(f.trueLostId) : undefined;
    if (t) console.log("true lost:", JSON.stringify({ ...t.subject, photoHashes: t.subject.photoHashes.length }));
  }
}
