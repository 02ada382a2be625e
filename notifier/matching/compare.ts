/**
 * Field-by-field comparisons of two reports' descriptions of an animal: breed, colours and
 * the words of their marks and descriptions. Each answers "how alike", or null when either
 * side says nothing (a missing field is no evidence either way).
 */
import {
  BREED_FILLER,
  BREEDS,
  COLOR_WORDS,
  type CoatPattern,
  type ColorFamily,
  closeSpelling,
  familySimilarity,
  MIXED_WORDS,
  normalizeText,
  patternSimilarity,
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

const breedCache = new Map<string, ParsedBreed>();
export function parseBreed(text: string): ParsedBreed {
  let parsed = breedCache.get(text);
  if (!parsed) {
    if (breedCache.size > 10_000) breedCache.clear();
    parsed = parseBreedUncached(text);
    breedCache.set(text, parsed);
  }
  return parsed;
}

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
