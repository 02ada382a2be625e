/**
 * One animal and how each side writes it down: the owner (who knows it, but words it their
 * way) and the finder (who sees it once, guesses breed and sex, names colours as they look).
 */
import type { MatchSubject } from "../../jobs/matching/score.js";
import type { Rng } from "./prng.js";
import {
  BREED_SPECS, type BreedSpec, type Coat, type Family, FAMILY_CONFUSION, FAMILY_WORDS, PATTERN_CONFUSION, PATTERN_WORDS,
  type Species,
} from "./population.js";
import {
  COLLAR_COLOURS, COLLAR_PHRASINGS, FINDER_AGE, FINDER_TEMPERAMENT, NAMES, NO_COLLAR, OWNER_AGE, OWNER_TEMPERAMENT, SIZES,
  TRAITS, type Trait,
} from "./wording.js";

type Size = keyof typeof SIZES;
type Age = keyof typeof OWNER_AGE;

export interface Animal {
  species: Species;
  breed: BreedSpec;
  coat: Coat;
  sex: "male" | "female";
  chip: string | null;
  traits: Trait[];
  collar: string | null;
  size: Size;
  age: Age;
  name: string;
  /** The animal's look as a 64-bit pattern: photos of it are noisy copies. */
  look: [number, number];
}

/** Written fields of one report, before place and time. */
export type Written = Pick<MatchSubject, "breed" | "colors" | "sex" | "microchipId" | "marks" | "description" | "photoHashes">;

const byPosition = (items: string[]) => items.map((s, i) => [s, 1 / (i + 1)] as const);
const SIZES_BY_SPECIES: Record<Species, Size[]> = { dog: ["small", "medium", "large"], cat: ["small", "medium"], rabbit: ["small"], bird: ["small"] };
const PROFILE = {
  ownerBreed: { dog: 0.92, cat: 0.65, rabbit: 0.7, bird: 0.85 },
  finderBreed: { dog: 0.65, cat: 0.4, rabbit: 0.45, bird: 0.6 },
  ownerSex: { dog: 0.93, cat: 0.93, rabbit: 0.8, bird: 0.6 },
  finderSex: { dog: 0.6, cat: 0.45, rabbit: 0.3, bird: 0.1 },
  finderSexWrong: { dog: 0.04, cat: 0.12, rabbit: 0.2, bird: 0.3 },
  ownerPhoto: { dog: 0.8, cat: 0.75, rabbit: 0.6, bird: 0.6 },
};

export function randomBits(rng: Rng, base: [number, number], flip: number): [number, number] {
  const out: [number, number] = [base[0], base[1]];
  for (let i = 0; i < 64; i++) if (rng.chance(flip)) out[i >> 5] = (out[i >> 5]! ^ (1 << (i & 31))) >>> 0;
  return out;
}

export const hex = ([hi, lo]: [number, number]) => hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");

export function makeChip(rng: Rng): string {
  if (rng.chance(0.05)) return Array.from({ length: 10 }, () => rng.pick([..."0123456789ABCDEF"])).join("");
  return rng.pick(["985", "981", "900", "956", "941", "977"]) + Array.from({ length: 12 }, () => rng.int(0, 9)).join("");
}

/** Written as people type it; a finder (from a vet's scan) sometimes mistypes a digit. */
export function writeChip(rng: Rng, chip: string, mayMistype: boolean): string {
  let c = chip;
  if (mayMistype && rng.chance(0.03)) {
    const i = rng.int(3, c.length - 1);
    c = c.slice(0, i) + String((Number.parseInt(c[i]!, 16) + rng.int(1, 8)) % 10) + c.slice(i + 1);
  } else if (mayMistype && rng.chance(0.01)) {
    const i = rng.int(3, c.length - 2);
    c = c.slice(0, i) + c[i + 1] + c[i] + c.slice(i + 2);
  }
  if (c.length !== 15) return c;
  return rng.weighted([[c, 60], [c.match(/.{3}/g)!.join(" "), 25], [c.match(/.{3}/g)!.join("-"), 10], [`${c.slice(0, 3)} ${c.slice(3)}`, 5]]);
}

/** `share` weighs the breeds instead of their popularity (the dense city population uses shelter-intake shares). */
export function makeAnimal(
  rng: Rng, species: Species, template: [number, number], chipShare: number, share: (b: BreedSpec) => number = (b) => b.popularity,
): Animal {
  const breed = rng.weighted(BREED_SPECS.filter((b) => b.species === species).map((b) => [b, share(b)] as const));
  const traits: Trait[] = [];
  const pool = TRAITS.filter((t) => t.species.includes(species));
  for (let n = Math.min(3, rng.poisson(1.2)); n > 0; n--) {
    const t = rng.weighted(pool.map((x) => [x, x.weight] as const));
    if (!traits.includes(t)) traits.push(t);
  }
  const collarShare = species === "dog" ? 0.6 : species === "cat" ? 0.35 : 0;
  return {
    species, breed, coat: rng.weighted(breed.coats), sex: rng.chance(0.5) ? "male" : "female",
    chip: rng.chance(chipShare) ? makeChip(rng) : null, traits, collar: rng.chance(collarShare) ? rng.pick(COLLAR_COLOURS) : null,
    size: rng.pick(SIZES_BY_SPECIES[species]), age: rng.weighted([["young", 3], ["adult", 5], ["senior", 2]] as const),
    name: rng.pick(NAMES), look: randomBits(rng, template, 0.3),
  };
}

function writeColors(rng: Rng, coat: Coat, finder: boolean): string[] {
  if (rng.chance(finder ? 0.12 : 0.04)) return [];
  let families: Family[] = coat.families.map((f) => (finder && rng.chance(0.12) ? rng.pick(FAMILY_CONFUSION[f]) : f));
  families = [...new Set(families)].filter((_, i) => i === 0 || !rng.chance(finder ? 0.35 : 0.1));
  let pattern = coat.pattern;
  if (pattern && finder && rng.chance(0.1)) pattern = PATTERN_CONFUSION[pattern] ?? pattern;
  if (pattern && rng.chance(finder ? 0.35 : 0.1)) pattern = undefined;
  const patternWord = pattern ? rng.weighted(PATTERN_WORDS[pattern]) : "";
  const impliesColours = ["tortoiseshell", "calico", "tuxedo", "tricolour"].includes(pattern ?? "");
  const words = patternWord && impliesColours && rng.chance(0.5) ? [] : [...new Set(families.map((f) => rng.weighted(FAMILY_WORDS[f])))];
  if (rng.chance(0.5)) return [[words.join(rng.pick([" and ", " & ", "/", " with "])), patternWord].filter(Boolean).join(" ")];
  return [...words, patternWord].filter(Boolean);
}

function writeBreed(rng: Rng, animal: Animal, finder: boolean): string | null {
  const give = (finder ? PROFILE.finderBreed : PROFILE.ownerBreed)[animal.species];
  if (!rng.chance(give)) return null;
  if (!finder) return rng.weighted(byPosition(animal.breed.owner));
  const same = BREED_SPECS.filter((b) => b.species === animal.species);
  return rng.weighted([
    [() => rng.weighted(byPosition(animal.breed.finder)), 55],
    [() => rng.pick(same.find((b) => b.key === rng.pick(animal.breed.lookalikes))?.finder ?? animal.breed.finder), 20],
    [() => rng.pick(["mixed", "mix", "mutt", "unknown", "not sure", "crossbreed"]), 15],
    [() => rng.pick(rng.pick(same).finder), 10],
  ] as const)();
}

function writeSex(rng: Rng, animal: Animal, finder: boolean): string | null {
  if (!finder) return rng.chance(PROFILE.ownerSex[animal.species]) ? animal.sex : rng.chance(0.3) ? "unknown" : null;
  if (!rng.chance(PROFILE.finderSex[animal.species])) return null;
  const seen = rng.chance(PROFILE.finderSexWrong[animal.species]) ? (animal.sex === "male" ? "female" : "male") : animal.sex;
  if (!rng.chance(0.15)) return seen;
  return rng.pick(seen === "male" ? ["M", "boy", "neutered male", "Male"] : ["F", "girl", "spayed female", "Female"]);
}

function writeMarks(rng: Rng, animal: Animal, finder: boolean, collarKept: boolean): string | null {
  if (!rng.chance(finder ? 0.45 : 0.65)) return null;
  const parts = animal.traits
    .filter((t) => (finder ? t.visible && rng.chance(0.55) : rng.chance(0.85)))
    .map((t) => rng.pick(t.phrasings));
  const wearing = animal.collar && (!finder || collarKept);
  if (wearing && rng.chance(finder ? 0.8 : 0.7)) parts.push(rng.pick(COLLAR_PHRASINGS).replace("{c}", animal.collar!));
  else if (finder && !wearing && rng.chance(0.3)) parts.push(rng.pick(NO_COLLAR));
  return parts.length > 0 ? parts.join(rng.pick([", ", ". ", "; "])) : null;
}

function writeDescription(rng: Rng, animal: Animal, finder: boolean, place: string): string | null {
  if (!rng.chance(finder ? 0.6 : 0.7)) return null;
  const parts: string[] = [];
  if (finder) {
    if (rng.chance(0.5)) parts.push(`found near ${place}`);
    if (rng.chance(0.6)) parts.push(rng.pick(FINDER_TEMPERAMENT));
    const sizes = SIZES_BY_SPECIES[animal.species];
    const size = rng.chance(0.2) ? rng.pick(sizes) : animal.size;
    if (rng.chance(0.4)) parts.push(`${rng.pick(SIZES[size])} ${animal.species}`);
    if (rng.chance(0.3)) parts.push(rng.pick(FINDER_AGE[animal.age]));
    if (rng.chance(0.2)) parts.push("no tag");
  } else {
    if (rng.chance(0.6)) parts.push(rng.pick(OWNER_TEMPERAMENT));
    if (rng.chance(0.5)) parts.push(`answers to ${animal.name}`);
    if (rng.chance(0.5)) parts.push(`last seen near ${place}`);
    if (rng.chance(0.4)) parts.push(rng.pick(SIZES[animal.size]));
    if (rng.chance(0.4)) parts.push(rng.pick(OWNER_AGE[animal.age]));
    if (animal.chip && rng.chance(0.4)) parts.push("microchipped");
    if (rng.chance(0.3)) parts.push(animal.sex === "male" ? "neutered" : "spayed");
  }
  return parts.length > 0 ? parts.join(rng.pick([". ", ", "])) : null;
}

function photos(rng: Rng, animal: Animal, template: [number, number], count: number): string[] {
  return Array.from({ length: count }, () =>
    // A few photos are dark or blurred; their hashes all look alike.
    hex(rng.chance(0.02) ? randomBits(rng, template, 0.05) : randomBits(rng, animal.look, 0.3)),
  );
}

export interface WriteOptions {
  place: string;
  template: [number, number];
  /** Whether this side knows the chip number. */
  chip: boolean;
  /** Still wearing its collar when found. */
  collarKept?: boolean;
}

export function ownerWrites(rng: Rng, animal: Animal, o: WriteOptions): Written {
  return {
    breed: writeBreed(rng, animal, false), colors: writeColors(rng, animal.coat, false), sex: writeSex(rng, animal, false),
    microchipId: o.chip && animal.chip ? writeChip(rng, animal.chip, false) : null,
    marks: writeMarks(rng, animal, false, true), description: writeDescription(rng, animal, false, o.place),
    photoHashes: rng.chance(PROFILE.ownerPhoto[animal.species]) ? photos(rng, animal, o.template, rng.int(1, 3)) : [],
  };
}

export function finderWrites(rng: Rng, animal: Animal, o: WriteOptions): Written {
  return {
    breed: writeBreed(rng, animal, true), colors: writeColors(rng, animal.coat, true), sex: writeSex(rng, animal, true),
    microchipId: o.chip && animal.chip ? writeChip(rng, animal.chip, true) : null,
    marks: writeMarks(rng, animal, true, o.collarKept ?? true), description: writeDescription(rng, animal, true, o.place),
    photoHashes: rng.chance(0.65) ? photos(rng, animal, o.template, rng.int(1, 2)) : [],
  };
}
