/**
 * Field-by-field comparisons of two reports' descriptions of an animal: breed, colours and
 * the words of their marks and descriptions. Each answers "how alike", or null when either
 * side says nothing (a missing field is no evidence either way).
 */
import {
  AGE_FILLER,
  AGE_WORDS,
  AGE_YEARS,
  type AgeClass,
  BREED_FILLER,
  BREEDS,
  COLLAR_COLOUR_WORDS,
  COLOR_WORDS,
  collarColourSimilarity,
  type CoatPattern,
  type ColorFamily,
  closeSpelling,
  familySimilarity,
  MIXED_WORDS,
  normalizeText,
  patternSimilarity,
  SIZE_FILLER,
  SIZE_WORDS,
  type SizeClass,
  tokenize,
} from "./vocabulary.js";

const MAX_PHRASE_WORDS = 4;

const aliasToBreed = new Map<string, string>();
const relatedPairs = new Set<string>();
for (const [canonical, entry] of Object.entries(BREEDS)) {
  aliasToBreed.set(canonical, canonical);
  for (const alias of entry.aliases ?? []) aliasToBreed.set(alias, canonical);
  for (const other of entry.related ?? []) {
    relatedPairs.add(`${canonical}|${other}`);
    relatedPairs.add(`${other}|${canonical}`);
  }
}
const aliasesByWordCount = new Map<number, string[]>();
for (const alias of aliasToBreed.keys()) {
  const n = alias.split(" ").length;
  aliasesByWordCount.set(n, [...(aliasesByWordCount.get(n) ?? []), alias]);
}

export interface ParsedBreed {
  /** Canonical breeds named (several for a cross such as "Lab x Collie"). */
  breeds: Set<string>;
  /** Said to be a mix, a type or a guess. */
  approximate: boolean;
  /** Colour words in the breed field ("black lab"), counted with the colours. */
  colorWords: string[];
}

function findAlias(phrase: string, words: number): string | undefined {
  const exact = aliasToBreed.get(phrase);
  if (exact) return exact;
  if (phrase.length < 5) return undefined;
  for (const alias of aliasesByWordCount.get(words) ?? []) {
    if (closeSpelling(phrase, alias)) return aliasToBreed.get(alias);
  }
  return undefined;
}

function parseBreedUncached(text: string): ParsedBreed {
  const words = normalizeText(text).split(" ").filter(Boolean);
  const parsed: ParsedBreed = { breeds: new Set(), approximate: false, colorWords: [] };
  const unknown: string[] = [];
  let i = 0;
  while (i < words.length) {
    let matched = 0;
    // Longest phrase first, so "golden retriever" is one breed and not a colour plus a type.
    for (let n = Math.min(MAX_PHRASE_WORDS, words.length - i); n >= 1 && matched === 0; n--) {
      const breed = findAlias(words.slice(i, i + n).join(" "), n);
      if (breed) {
        parsed.breeds.add(breed);
        matched = n;
      }
    }
    if (matched > 0) {
      i += matched;
      continue;
    }
    const word = words[i]!;
    if (MIXED_WORDS.has(word)) parsed.approximate = true;
    else if (COLOR_WORDS[word]) parsed.colorWords.push(word);
    else if (!BREED_FILLER.has(word) && !/^\d+$/.test(word)) unknown.push(word);
    i++;
  }
  // A breed this file does not know still matches the same words on the other side.
  if (parsed.breeds.size === 0 && unknown.length > 0) parsed.breeds.add(unknown.join(" "));
  return parsed;
}

/**
 * `parse` remembering the last 10,000 or so texts: a job scores one side against tens of
 * candidates, and the same reports come back job after job.
 */
function memoized<T>(parse: (text: string) => T): (text: string) => T {
  const cache = new Map<string, T>();
  return (text) => {
    let parsed = cache.get(text);
    if (parsed === undefined) {
      if (cache.size > 10_000) cache.clear();
      parsed = parse(text);
      cache.set(text, parsed);
    }
    return parsed;
  };
}

export const parseBreed = memoized(parseBreedUncached);

/**
 * same: one pure breed on each side, the same one. common: the same, but a breed most animals
 * of the species have, or both sides say it is a mix. partial: a shared breed where one side is a mix or a guess. related:
 * breeds people confuse. weak: a mix on one side and nothing in common with a named breed. different: two pure,
 * unrelated breeds.
 */
export type BreedMatch = "same" | "common" | "partial" | "related" | "weak" | "different";
export const BREED_MATCHES: readonly BreedMatch[] = ["same", "common", "partial", "related", "weak", "different"];

export function compareBreeds(a: string | null, b: string | null): BreedMatch | null {
  if (!a?.trim() || !b?.trim()) return null;
  const pa = parseBreed(a);
  const pb = parseBreed(b);
  // "Mixed" alone says something (not a pure breed); "not sure" says nothing. Against another
  // mix ("mutt" / "Lab x Collie") it agrees, but a third of city dogs are mixes, so it is a
  // common match, worth no more than two domestic shorthairs; only against a pure breed is it
  // weak. It was weak against every breed, which ranked a finder's "mixed" below a silent
  // finder's for the owner of a mixed-breed dog (bench/matching/README.md, "A city").
  if (pa.breeds.size === 0 || pb.breeds.size === 0) {
    const [bare, other] = pa.breeds.size === 0 ? [pa, pb] : [pb, pa];
    if (!bare.approximate) return null;
    if (other.approximate || other.breeds.size > 1) return "common";
    return other.breeds.size === 1 ? "weak" : null;
  }
  const shared = [...pa.breeds].filter((x) => pb.breeds.has(x));
  const pure = !pa.approximate && !pb.approximate && pa.breeds.size === 1 && pb.breeds.size === 1;
  if (shared.length > 0) {
    if (shared.every((x) => BREEDS[x]?.common)) return "common";
    return pure ? "same" : "partial";
  }
  for (const x of pa.breeds) for (const y of pb.breeds) if (relatedPairs.has(`${x}|${y}`)) return "related";
  // Words this file cannot read as a breed ("small fluffy dog", "leopard print") say nothing
  // for or against a breed it can: weak, as a mix is, not a different breed.
  if ([pa, pb].some((p) => [...p.breeds].every((x) => !BREEDS[x]))) return "weak";
  return pure ? "different" : "weak";
}

export interface ParsedColors {
  families: Set<ColorFamily>;
  patterns: Set<CoatPattern>;
}

const colorWordList = Object.keys(COLOR_WORDS);
const LIGHTER: Partial<Record<ColorFamily, ColorFamily>> = { brown: "cream", golden: "cream", grey: "white", ginger: "golden", black: "grey" };
const DARKER: Partial<Record<ColorFamily, ColorFamily>> = { brown: "black", grey: "black", golden: "brown", ginger: "brown", cream: "golden" };
const SHADES: Record<string, Partial<Record<ColorFamily, ColorFamily>>> = { light: LIGHTER, pale: LIGHTER, dark: DARKER, deep: DARKER };

function colorWord(word: string) {
  const known = COLOR_WORDS[word];
  if (known || word.length < 6) return known;
  const near = colorWordList.find((w) => closeSpelling(word, w));
  return near ? COLOR_WORDS[near] : undefined;
}

/** Families and patterns named by colour entries ("black and tan", "Tortie") and breed words. */
export function parseColors(entries: readonly string[]): ParsedColors | null {
  const parsed: ParsedColors = { families: new Set(), patterns: new Set() };
  for (const entry of entries) {
    const words = normalizeText(entry).split(" ");
    words.forEach((word, i) => {
      const color = colorWord(word);
      const shade = SHADES[words[i - 1] ?? ""];
      for (const f of color?.families ?? []) {
        parsed.families.add(f);
        // "light tan" is also a little cream, "dark grey" a little black.
        const neighbour = shade?.[f];
        if (neighbour) parsed.families.add(neighbour);
      }
      if (color?.pattern) parsed.patterns.add(color.pattern);
      // "dark" on its own: a dark coat, most often black.
      if (!color && word === "dark" && !colorWord(words[i + 1] ?? "")) parsed.families.add("black");
    });
  }
  return parsed.families.size + parsed.patterns.size > 0 ? parsed : null;
}

function bestMatchAverage<T>(from: Set<T>, to: Set<T>, similarity: (a: T, b: T) => number): number {
  let total = 0;
  for (const x of from) total += Math.max(...[...to].map((y) => similarity(x, y)));
  return total / from.size;
}

export interface ColorMatch {
  /** 0..1: each family named on one side is looked for on the other, both ways, averaged. */
  families: number | null;
  /** 0..1: the closest pair of coat patterns, when both sides name one. */
  pattern: number | null;
}

export function compareColors(a: ParsedColors | null, b: ParsedColors | null): ColorMatch | null {
  if (!a || !b) return null;
  const families =
    a.families.size > 0 && b.families.size > 0
      ? (bestMatchAverage(a.families, b.families, familySimilarity) +
          bestMatchAverage(b.families, a.families, familySimilarity)) /
        2
      : null;
  let pattern: number | null = null;
  if (a.patterns.size > 0 && b.patterns.size > 0) {
    pattern = 0;
    for (const x of a.patterns) for (const y of b.patterns) pattern = Math.max(pattern, patternSimilarity(x, y));
  }
  return families === null && pattern === null ? null : { families, pattern };
}

/** Weighted count of the words two texts share, or null when either side wrote nothing. */
export function sharedWords(a: string | null, b: string | null): number | null {
  const ta = tokenize(a);
  const tb = tokenize(b);
  if (ta.size === 0 || tb.size === 0) return null;
  let shared = 0;
  for (const [word, weight] of ta) if (tb.has(word)) shared += weight;
  return shared;
}

/**
 * What a report's marks and description say of the animal as a whole, phrase by phrase (split
 * at punctuation): its size ("a very big dog"), its age ("looks old", "8 months old") and its
 * collar ("red collar with tag", "no collar"). A size or an age counts only in a phrase that says
 * nothing else, so "big belly" or "small white chest patch" is a mark, not a size; a phrase that
 * names a collar is about the collar. A side that names two sizes or two ages says neither.
 */
export interface Described {
  size: SizeClass | null;
  age: AgeClass | null;
  /** The collar's colours (none named: empty), "none" when the report says it wore none. */
  collar: Set<string> | "none" | null;
  /** The text without the phrases above: what the shared-word count compares. */
  rest: string | null;
}

const SIZE_ORDER: SizeClass[] = ["small", "medium", "large"];
const AGE_ORDER: AgeClass[] = ["young", "adult", "senior"];
const NEGATIONS = new Set(["no", "not", "without", "none", "lost", "missing"]);

function sizeOf(words: string[]): SizeClass | null {
  const rest = words.filter((w) => !SIZE_FILLER.has(w) && !COLOR_WORDS[w]);
  const sizes = new Set(rest.map((w) => SIZE_WORDS[w]));
  return rest.length > 0 && sizes.size === 1 && !sizes.has(undefined) ? [...sizes][0]! : null;
}

function ageOf(words: string[]): AgeClass | null {
  const rest = words.filter((w) => !AGE_FILLER.has(w));
  const years = /^(\d+(?:\.\d+)?) (year|years|yr|yrs|month|months|mo|week|weeks|wk|wks) old$/.exec(rest.join(" "));
  if (years) {
    const n = Number(years[1]) / (years[2]!.startsWith("m") ? 12 : years[2]!.startsWith("w") ? 52 : 1);
    return n < AGE_YEARS.adultFrom ? "young" : n < AGE_YEARS.seniorFrom ? "adult" : "senior";
  }
  if (rest.join(" ") === "middle aged") return "adult";
  const ages = new Set(rest.map((w) => AGE_WORDS[w]));
  return rest.length > 0 && ages.size === 1 && !ages.has(undefined) ? [...ages][0]! : null;
}

function describeUncached(text: string): Described {
  const sizes = new Set<SizeClass>();
  const ages = new Set<AgeClass>();
  let collar: Described["collar"] = null;
  const rest: string[] = [];
  for (const phrase of text.split(/[.,;:!?()\n]+/)) {
    const words = normalizeText(phrase).split(" ").filter(Boolean);
    if (words.length === 0) continue;
    const at = words.findIndex((w) => w === "collar" || w === "collars");
    if (at >= 0) {
      if (words.slice(0, at).some((w) => NEGATIONS.has(w))) collar = collar ?? "none";
      else {
        const colours = words.flatMap((w) => (COLLAR_COLOUR_WORDS[w] ? [COLLAR_COLOUR_WORDS[w]!] : []));
        const before = collar as Described["collar"];
        collar = before instanceof Set ? new Set([...before, ...colours]) : new Set(colours);
      }
      continue;
    }
    const size = sizeOf(words);
    const age = size ? null : ageOf(words);
    if (size) sizes.add(size);
    else if (age) ages.add(age);
    else rest.push(phrase.trim());
  }
  return {
    size: sizes.size === 1 ? [...sizes][0]! : null,
    age: ages.size === 1 ? [...ages][0]! : null,
    collar,
    rest: rest.length > 0 ? rest.join(". ") : null,
  };
}

const describeText = memoized(describeUncached);
export function describe(text: string | null): Described {
  return text?.trim() ? describeText(text) : { size: null, age: null, collar: null, rest: null };
}

/** 0 when both sides put the animal in one class, 1 a class apart, 2 two apart; null when either says nothing. */
const classesApart = <T>(order: T[], a: T | null, b: T | null) => (a && b ? Math.abs(order.indexOf(a) - order.indexOf(b)) : null);
export const compareSizes = (a: SizeClass | null, b: SizeClass | null) => classesApart(SIZE_ORDER, a, b);
export const compareAges = (a: AgeClass | null, b: AgeClass | null) => classesApart(AGE_ORDER, a, b);

/**
 * Two collars: how alike their colours are (0..1) when both name some, "missing" when one side
 * says the animal wore none and the other names a collar (collars slip off), else null.
 */
export function compareCollars(a: Described["collar"], b: Described["collar"]): number | "missing" | null {
  if (a === null || b === null) return null;
  if (a === "none" || b === "none") return a === b ? null : "missing";
  if (a.size === 0 || b.size === 0) return null;
  let best = 0;
  for (const x of a) for (const y of b) best = Math.max(best, collarColourSimilarity(x, y));
  return best;
}
