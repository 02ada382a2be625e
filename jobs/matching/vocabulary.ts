/**
 * Normalisation tables for matching lost and found reports: how people name breeds and
 * colours, and which words of a free-text description carry no identifying information.
 * English only. Written from general knowledge of how owners and finders describe pets,
 * not from the benchmark generator's word lists (bench/matching/), so the benchmark also
 * measures the words this file does not know.
 */

/** Lower case, accents removed, anything but letters and digits turned into single spaces. */
export function normalizeText(text: string): string {
  return text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/['’]s\b/g, "")
    .replace(/[^a-z0-9]+/g, " ")
    .trim();
}

/** Plain edit distance; only ever called on short words and phrases. */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}

/** Misspellings tolerated: none under 5 letters ("lab" vs "pug"), one up to 7, two beyond. */
export function closeSpelling(word: string, known: string): boolean {
  const n = Math.min(word.length, known.length);
  const allowed = n < 5 ? 0 : n < 8 ? 1 : 2;
  return allowed > 0 && Math.abs(word.length - known.length) <= allowed && editDistance(word, known) <= allowed;
}

// ---------------------------------------------------------------------------------------------
// Breeds. Key: canonical name. `aliases`: other ways people write it (normalised). `related`:
// breeds or types a person may confuse it with. `common`: so widespread that sharing it says
// little (most cats are domestic shorthairs).

interface BreedEntry {
  aliases?: string[];
  related?: string[];
  common?: boolean;
}

export const BREEDS: Record<string, BreedEntry> = {
  // Dogs
  "labrador retriever": { aliases: ["lab", "labrador", "lab retriever", "labrador dog"], related: ["retriever", "golden retriever", "doodle"] },
  "golden retriever": { aliases: ["golden", "goldie"], related: ["retriever", "labrador retriever", "doodle"] },
  retriever: { aliases: ["flat coated retriever", "flatcoat"], related: ["labrador retriever", "golden retriever"] },
  "german shepherd": { aliases: ["gsd", "german shepherd dog", "alsatian", "shepherd", "gsd dog"], related: ["belgian malinois", "shepherd type"] },
  "shepherd type": { aliases: ["shepherd cross"], related: ["german shepherd", "belgian malinois", "australian shepherd"] },
  "belgian malinois": { aliases: ["malinois", "belgian shepherd"], related: ["german shepherd"] },
  "australian shepherd": { aliases: ["aussie", "aussie shepherd"], related: ["border collie", "shepherd type"] },
  "border collie": { aliases: ["collie", "bc"], related: ["australian shepherd", "rough collie"] },
  "rough collie": { aliases: ["lassie collie", "shetland sheepdog", "sheltie"], related: ["border collie"] },
  "french bulldog": { aliases: ["frenchie", "frenchy", "french bull dog"], related: ["bulldog", "boston terrier", "pug"] },
  bulldog: { aliases: ["english bulldog", "british bulldog", "bull dog"], related: ["french bulldog", "american bulldog"] },
  "american bulldog": { aliases: [], related: ["bulldog", "pit bull"] },
  "boston terrier": { aliases: ["boston"], related: ["french bulldog"] },
  beagle: { aliases: [], related: ["hound", "basset hound"] },
  "basset hound": { aliases: ["basset"], related: ["beagle", "hound"] },
  hound: { aliases: ["foxhound", "harrier"], related: ["beagle", "basset hound"] },
  poodle: { aliases: ["toy poodle", "miniature poodle", "mini poodle", "standard poodle"], related: ["doodle", "bichon frise"] },
  doodle: { aliases: ["labradoodle", "goldendoodle", "cockapoo", "cavapoo", "cavoodle", "poodle cross", "poodle mix", "spoodle"], related: ["poodle", "labrador retriever", "golden retriever", "cocker spaniel"] },
  rottweiler: { aliases: ["rottie", "rotty", "rott", "rotti"], related: ["dobermann"] },
  dobermann: { aliases: ["doberman", "doberman pinscher", "dobie"], related: ["rottweiler"] },
  dachshund: { aliases: ["sausage dog", "doxie", "doxy", "wiener dog", "weiner dog", "dachsie", "teckel", "mini dachshund", "miniature dachshund"] },
  "yorkshire terrier": { aliases: ["yorkie", "yorky", "york terrier"], related: ["terrier", "silky terrier"] },
  "silky terrier": { aliases: ["australian silky terrier"], related: ["yorkshire terrier"] },
  terrier: { aliases: ["terrier type", "terrier cross"], related: ["yorkshire terrier", "jack russell terrier", "border terrier", "west highland terrier"] },
  boxer: { related: ["american bulldog"] },
  "siberian husky": { aliases: ["husky", "huskey", "sibe"], related: ["alaskan malamute"] },
  "alaskan malamute": { aliases: ["malamute", "mal"], related: ["siberian husky"] },
  "staffordshire bull terrier": { aliases: ["staffy", "staffie", "staff", "sbt", "staffordshire", "english staffy", "staffy bull terrier"], related: ["pit bull", "american staffordshire terrier", "bull terrier"] },
  "american staffordshire terrier": { aliases: ["amstaff", "am staff", "american staffy"], related: ["pit bull", "staffordshire bull terrier"] },
  "pit bull": { aliases: ["pitbull", "pit", "pittie", "american pit bull terrier", "apbt", "pit bull terrier", "bully"], related: ["staffordshire bull terrier", "american staffordshire terrier", "american bulldog"] },
  "bull terrier": { aliases: ["english bull terrier"], related: ["staffordshire bull terrier"] },
  "jack russell terrier": { aliases: ["jack russell", "jack russel", "jrt", "jack"], related: ["parson russell terrier", "terrier"] },
  "parson russell terrier": { aliases: ["parson russell", "parson jack russell"], related: ["jack russell terrier"] },
  "border terrier": { related: ["terrier"] },
  "west highland terrier": { aliases: ["westie", "west highland white terrier", "west highland"], related: ["terrier"] },
  schnauzer: { aliases: ["miniature schnauzer", "mini schnauzer", "standard schnauzer"], related: ["terrier"] },
  chihuahua: { aliases: ["chi", "chiwawa", "chihuaha"], related: ["miniature pinscher"] },
  "miniature pinscher": { aliases: ["min pin", "minpin"], related: ["chihuahua"] },
  "cocker spaniel": { aliases: ["cocker", "english cocker spaniel", "american cocker spaniel", "english cocker"], related: ["spaniel", "springer spaniel", "doodle"] },
  "springer spaniel": { aliases: ["springer", "english springer spaniel", "english springer"], related: ["spaniel", "cocker spaniel"] },
  spaniel: { aliases: ["spaniel type"], related: ["cocker spaniel", "springer spaniel", "cavalier king charles spaniel"] },
  "cavalier king charles spaniel": { aliases: ["cavalier", "cavalier king charles", "king charles spaniel", "king charles", "ckcs"], related: ["spaniel"] },
  "shih tzu": { aliases: ["shihtzu", "shi tzu", "shitzu"], related: ["lhasa apso", "maltese"] },
  "lhasa apso": { aliases: ["lhasa"], related: ["shih tzu"] },
  maltese: { aliases: ["maltese terrier"], related: ["bichon frise", "shih tzu"] },
  "bichon frise": { aliases: ["bichon"], related: ["maltese", "poodle"] },
  greyhound: { aliases: ["grey hound", "italian greyhound", "iggy"], related: ["whippet", "lurcher"] },
  whippet: { related: ["greyhound", "lurcher"] },
  lurcher: { aliases: ["saluki cross"], related: ["greyhound", "whippet"] },
  pug: { related: ["french bulldog"] },
  "great dane": { aliases: ["dane"], related: ["mastiff"] },
  mastiff: { aliases: ["english mastiff", "bullmastiff", "cane corso", "neapolitan mastiff"], related: ["great dane"] },
  corgi: { aliases: ["pembroke welsh corgi", "welsh corgi", "cardigan corgi"] },
  "shiba inu": { aliases: ["shiba"], related: ["akita"] },
  akita: { aliases: ["akita inu"], related: ["shiba inu"] },
  pomeranian: { aliases: ["pom", "pomeranian spitz"], related: ["spitz"] },
  spitz: { aliases: ["german spitz", "japanese spitz"], related: ["pomeranian"] },
  weimaraner: { aliases: ["weim"], related: ["pointer"] },
  pointer: { aliases: ["german shorthaired pointer", "gsp", "english pointer"], related: ["weimaraner", "vizsla"] },
  vizsla: { aliases: ["hungarian vizsla"], related: ["pointer"] },
  "bernese mountain dog": { aliases: ["bernese", "berner"] },
  dalmatian: {},
  // Cats
  "domestic shorthair": { aliases: ["dsh", "domestic short hair", "short hair", "shorthair", "domestic", "house cat", "moggy", "moggie"], related: ["domestic medium hair", "british shorthair"], common: true },
  "domestic medium hair": { aliases: ["dmh", "domestic mediumhair", "medium hair", "mediumhair"], related: ["domestic shorthair", "domestic longhair"], common: true },
  "domestic longhair": { aliases: ["dlh", "domestic long hair", "long hair", "longhair", "longhaired"], related: ["domestic medium hair", "maine coon", "persian", "norwegian forest cat", "ragdoll"], common: true },
  siamese: { aliases: ["siamese cat", "colourpoint", "colorpoint", "thai"], related: ["balinese", "ragdoll", "birman"] },
  balinese: { related: ["siamese"] },
  birman: { aliases: ["sacred cat of burma"], related: ["ragdoll", "siamese"] },
  ragdoll: { aliases: ["rag doll"], related: ["birman", "siamese", "domestic longhair"] },
  "maine coon": { aliases: ["mainecoon", "coon cat", "maine coone"], related: ["norwegian forest cat", "domestic longhair"] },
  "norwegian forest cat": { aliases: ["norwegian forest", "wegie", "skogkatt"], related: ["maine coon", "domestic longhair"] },
  persian: { aliases: ["persian cat"], related: ["exotic shorthair", "domestic longhair"] },
  "exotic shorthair": { aliases: ["exotic"], related: ["persian", "british shorthair"] },
  "british shorthair": { aliases: ["bsh", "british blue", "british short hair"], related: ["russian blue", "chartreux", "domestic shorthair"] },
  "russian blue": { related: ["british shorthair", "chartreux"] },
  chartreux: { related: ["british shorthair", "russian blue"] },
  bengal: { aliases: ["bengal cat"], related: ["domestic shorthair"] },
  sphynx: { aliases: ["sphinx", "hairless"] },
  burmese: { related: ["tonkinese"] },
  tonkinese: { related: ["burmese", "siamese"] },
  abyssinian: { aliases: ["aby"] },
  // Rabbits
  lop: { aliases: ["holland lop", "mini lop", "french lop", "english lop", "lop eared", "lop ear", "dwarf lop"] },
  "netherland dwarf": { aliases: ["dwarf", "dwarf rabbit", "netherlands dwarf"], related: ["lionhead"] },
  rex: { aliases: ["mini rex", "rex rabbit"] },
  lionhead: { aliases: ["lion head", "lionhead rabbit"], related: ["netherland dwarf"] },
  dutch: { aliases: ["dutch rabbit"] },
  "flemish giant": { aliases: ["giant rabbit", "continental giant"] },
  // Birds
  budgerigar: { aliases: ["budgie", "budgy", "parakeet", "shell parakeet"], related: ["parrot"] },
  cockatiel: { aliases: ["tiel", "quarrion"], related: ["parrot", "cockatoo"] },
  cockatoo: { aliases: ["sulphur crested cockatoo", "galah"], related: ["cockatiel", "parrot"] },
  "african grey": { aliases: ["african grey parrot", "african gray", "grey parrot", "gray parrot", "congo grey"], related: ["parrot"] },
  parrot: { aliases: ["parrotlet", "macaw", "amazon", "conure", "quaker", "quaker parrot"], related: ["budgerigar", "cockatiel", "african grey", "cockatoo", "lovebird"] },
  lovebird: { aliases: ["love bird"], related: ["parrot"] },
  canary: { aliases: ["finch"] },
  pigeon: { aliases: ["dove", "racing pigeon"] },
};

/** Words saying the breed named with them is only approximate: a mix, a type, a guess. */
export const MIXED_WORDS = new Set([
  "mix", "mixed", "mixture", "cross", "crossbreed", "crossbred", "crossed", "x", "mongrel", "mutt", "mut", "mutts",
  "type", "ish", "looking", "possibly", "maybe", "probably", "lookalike",
]);

/** Words in a breed field that name nothing. */
export const BREED_FILLER = new Set([
  "unknown", "unsure", "not", "sure", "dont", "know", "breed", "breeds", "bred", "with", "and", "or", "some", "part", "kind", "of", "a",
  "like", "dog", "cat", "puppy", "pup", "kitten", "rabbit", "bunny", "bird", "the", "big", "small", "little", "mini",
]);

// ---------------------------------------------------------------------------------------------
// Colours. Each word names colour families and/or a coat pattern. Families a person may
// confuse (in poor light, on a dirty coat, or by naming habit) are similar, not equal.

export type ColorFamily = "black" | "white" | "cream" | "golden" | "brown" | "ginger" | "grey" | "green";
export type CoatPattern =
  | "tabby" | "brindle" | "tortoiseshell" | "calico" | "bicolour" | "tricolour" | "merle" | "spotted" | "point" | "roan" | "sable";

interface ColorWord {
  families?: ColorFamily[];
  pattern?: CoatPattern;
}

const family = (...families: ColorFamily[]): ColorWord => ({ families });
const pattern = (p: CoatPattern, ...families: ColorFamily[]): ColorWord => ({ pattern: p, families });

export const COLOR_WORDS: Record<string, ColorWord> = {
  black: family("black"), ebony: family("black"), jet: family("black"), raven: family("black"), noir: family("black"),
  white: family("white"), snow: family("white"), ivory: family("white"), albino: family("white"),
  cream: family("cream"), champagne: family("cream"), buff: family("cream"), beige: family("cream"), biscuit: family("cream"),
  wheaten: family("cream", "golden"), wheat: family("cream", "golden"), blonde: family("cream", "golden"), blond: family("cream", "golden"),
  platinum: family("cream"), oatmeal: family("cream"), lemon: family("cream", "golden"),
  golden: family("golden"), gold: family("golden"), yellow: family("golden"), apricot: family("golden"), honey: family("golden"),
  sandy: family("golden"), sand: family("golden"), straw: family("golden"), butterscotch: family("golden"),
  brown: family("brown"), tan: family("brown"), chocolate: family("brown"), liver: family("brown"), fawn: family("brown", "golden"),
  caramel: family("brown"), mahogany: family("brown"), chestnut: family("brown"), bronze: family("brown"),
  cinnamon: family("brown"), mocha: family("brown"), coffee: family("brown"), hazel: family("brown"), dun: family("brown"),
  toffee: family("brown"), taupe: family("brown"), seal: family("brown"), brownish: family("brown"),
  ginger: family("ginger"), orange: family("ginger"), red: family("ginger"), marmalade: family("ginger"), rust: family("ginger"),
  copper: family("ginger"), auburn: family("ginger"), russet: family("ginger"), flame: family("ginger"), strawberry: family("ginger"),
  grey: family("grey"), gray: family("grey"), blue: family("grey"), silver: family("grey"), slate: family("grey"),
  smoke: family("grey"), smoky: family("grey"), smokey: family("grey"), ash: family("grey"), charcoal: family("grey", "black"),
  pewter: family("grey"), lilac: family("grey"), lavender: family("grey"), greyish: family("grey"), grizzle: family("grey"),
  green: family("green"), lime: family("green"), olive: family("green"), emerald: family("green"), teal: family("green", "grey"),
  tabby: pattern("tabby"), striped: pattern("tabby"), stripes: pattern("tabby"), stripey: pattern("tabby"), stripy: pattern("tabby"),
  mackerel: pattern("tabby"), tiger: pattern("tabby"),
  brindle: pattern("brindle"), brindled: pattern("brindle"),
  tortoiseshell: pattern("tortoiseshell", "black", "ginger"), tortie: pattern("tortoiseshell", "black", "ginger"),
  torti: pattern("tortoiseshell", "black", "ginger"), torby: pattern("tortoiseshell", "black", "ginger"),
  calico: pattern("calico", "black", "ginger", "white"),
  tuxedo: pattern("bicolour", "black", "white"), bicolour: pattern("bicolour"), bicolor: pattern("bicolour"),
  piebald: pattern("bicolour"), pied: pattern("bicolour"), patched: pattern("bicolour"), parti: pattern("bicolour"),
  tricolour: pattern("tricolour", "black", "white", "brown"), tricolor: pattern("tricolour", "black", "white", "brown"),
  tri: pattern("tricolour", "black", "white", "brown"),
  merle: pattern("merle"), dapple: pattern("merle"), dappled: pattern("merle"), harlequin: pattern("merle"),
  spotted: pattern("spotted"), spots: pattern("spotted"), spotty: pattern("spotted"), speckled: pattern("spotted"), ticked: pattern("spotted"),
  point: pattern("point"), points: pattern("point"), pointed: pattern("point"), colourpoint: pattern("point"), colorpoint: pattern("point"),
  roan: pattern("roan"), sable: pattern("sable", "brown"), agouti: pattern("sable", "brown"),
};

/** How alike two families look, symmetric; unlisted pairs of different families are 0. */
const FAMILY_SIMILARITY: Array<[ColorFamily, ColorFamily, number]> = [
  ["white", "cream", 0.75], ["cream", "golden", 0.6], ["golden", "brown", 0.5], ["golden", "ginger", 0.6],
  ["brown", "ginger", 0.5], ["brown", "black", 0.3], ["black", "grey", 0.4], ["grey", "white", 0.3], ["grey", "brown", 0.2], ["green", "golden", 0.2],
];

const PATTERN_SIMILARITY: Array<[CoatPattern, CoatPattern, number]> = [
  ["tabby", "brindle", 0.6], ["tortoiseshell", "calico", 0.75], ["calico", "tricolour", 0.5], ["bicolour", "calico", 0.3],
  ["merle", "spotted", 0.4], ["merle", "roan", 0.4], ["roan", "spotted", 0.4], ["sable", "brindle", 0.3], ["tabby", "sable", 0.3],
];

function lookup<T extends string>(pairs: Array<[T, T, number]>): (a: T, b: T) => number {
  const table = new Map<string, number>();
  for (const [a, b, s] of pairs) {
    table.set(`${a}|${b}`, s);
    table.set(`${b}|${a}`, s);
  }
  return (a, b) => (a === b ? 1 : (table.get(`${a}|${b}`) ?? 0));
}

export const familySimilarity = lookup(FAMILY_SIMILARITY);
export const patternSimilarity = lookup(PATTERN_SIMILARITY);

// ---------------------------------------------------------------------------------------------
// Free text (distinguishing marks, description).

/** Grammar words, and words every report shares (the species, the situation). */
export const STOP_WORDS = new Set(
  ("a an the and or but if of on in at to from by for with without about as is are was were be been being am " +
    "he she it they him her his hers its them their this that these those there here who which what when where " +
    "very really quite so too also just bit little lot lots some any all no not nor only own same than then " +
    "has have had having do does did can could will would should may might must i me my we our you your " +
    "dog dogs cat cats puppy pup kitten kitty pet animal bird rabbit bunny boy girl male female " +
    "lost found missing seen last near around wandering roaming ran running escaped went gone since " +
    "looks look looking like please call contact reward help owner home street road area today yesterday " +
    "answers answer name named called")
    .split(" "),
);

/** Words many unrelated animals share: they count, but for less. */
export const WEAK_WORDS = new Map<string, number>([
  ["collar", 0.3], ["friendly", 0.2], ["shy", 0.25], ["nervous", 0.25], ["scared", 0.2], ["timid", 0.25],
  ["tag", 0.3], ["small", 0.2], ["large", 0.2], ["big", 0.2], ["medium", 0.2], ["young", 0.2], ["old", 0.25],
  ["left", 0.3], ["right", 0.3], ["leg", 0.5], ["ear", 0.5], ["tail", 0.5], ["chest", 0.5], ["paw", 0.5],
  ["eye", 0.5], ["nose", 0.5], ["face", 0.5], ["back", 0.4], ["neck", 0.4], ["head", 0.4], ["patch", 0.6],
  ["fur", 0.3], ["coat", 0.3], ["hair", 0.3], ["short", 0.3], ["long", 0.3], ["calm", 0.2], ["sweet", 0.2],
  ["microchipped", 0.3], ["chipped", 0.3], ["neutered", 0.3], ["spayed", 0.3], ["park", 0.3], ["lane", 0.3], ["close", 0.3], ["avenue", 0.3], ["school", 0.4], ["shop", 0.4],
]);

/** Different words for the same mark, mapped onto one. */
export const MARK_SYNONYMS = new Map<string, string>(
  Object.entries({
    patch: ["spot", "blaze", "mark", "marking", "splash", "splodge", "bib", "star"],
    paw: ["foot", "feet", "sock", "boot", "toe", "mitten", "glove"],
    notch: ["nick", "torn", "tear", "cut", "split", "chunk"],
    tipped: ["clipped", "tip", "eartip", "snipped"],
    limp: ["lame", "hobble", "favour", "favor"],
    scar: ["scarred", "scarring", "wound", "healed"],
    docked: ["stumpy", "stump", "bobtail", "bob", "stubby"],
    kink: ["kinked", "crooked", "bent", "broken"],
    muzzle: ["snout", "mouth", "chin", "jaw"],
    overweight: ["fat", "chubby", "plump", "chunky", "belly", "tubby", "heavy"],
    thin: ["skinny", "underweight", "ribs", "bony", "scrawny"],
    blind: ["cloudy", "cataract", "milky"],
    floppy: ["droopy", "flop", "folded"],
    fluffy: ["bushy", "fuzzy", "fluffed"],
    tattoo: ["tattooed", "inked"],
    harness: ["vest"],
    eye: ["eyed"],
    ear: ["eared"],
  }).flatMap(([canonical, words]) => [canonical, ...words].map((w): [string, string] => [w, canonical])),
);

function stem(word: string): string {
  if (word.length > 4 && word.endsWith("ies")) return `${word.slice(0, -3)}y`;
  if (word.length > 5 && word.endsWith("ing")) return word.slice(0, -3);
  if (word.length > 5 && word.endsWith("ed")) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith("s") && !word.endsWith("ss")) return word.slice(0, -1);
  return word;
}

/**
 * The distinct meaningful words of a text with their weights: stop words dropped, simple
 * plurals and -ed/-ing endings removed, synonyms merged, colour words reduced to their family
 * (`colour:brown`), so "tan patch on chest" and "brown spot on his chest" share three words.
 */
export function tokenize(text: string | null | undefined): Map<string, number> {
  const tokens = new Map<string, number>();
  if (!text) return tokens;
  for (const raw of normalizeText(text).split(" ")) {
    if (raw.length < 2 || STOP_WORDS.has(raw) || /^\d+$/.test(raw)) continue;
    const color = COLOR_WORDS[raw];
    if (color) {
      for (const f of color.families ?? []) tokens.set(`colour:${f}`, 0.4);
      if (color.pattern) tokens.set(`pattern:${color.pattern}`, 0.6);
      continue;
    }
    const word = MARK_SYNONYMS.get(raw) ?? MARK_SYNONYMS.get(stem(raw)) ?? stem(raw);
    if (STOP_WORDS.has(word)) continue;
    tokens.set(word, WEAK_WORDS.get(raw) ?? WEAK_WORDS.get(word) ?? 1);
  }
  return tokens;
}

// ---------------------------------------------------------------------------------------------
// What both sides say of the animal as a whole: its size, its age, and its collar. Lost and
// found forms ask for them, and a finder can see them (a collar's colour, a small or a big
// dog, a puppy or a grey old one), so a disagreement is evidence against, where the shared-word
// count only ever saw agreement (and counted "nylon" on a pink and a green collar as alike).

export type SizeClass = "small" | "medium" | "large";
export const SIZE_WORDS: Record<string, SizeClass> = {
  small: "small", little: "small", tiny: "small", toy: "small", petite: "small", mini: "small",
  medium: "medium", average: "medium", mid: "medium", midsize: "medium", normal: "medium",
  large: "large", big: "large", huge: "large", giant: "large", massive: "large",
};
/** Words a size phrase may carry besides the size ("a very big dog", "medium sized"). */
export const SIZE_FILLER = new Set([
  "a", "an", "the", "very", "quite", "fairly", "rather", "really", "bit", "sized", "size", "build", "built", "frame", "breed",
  "dog", "cat", "puppy", "pup", "kitten", "boy", "girl", "one", "looking", "looks", "seems",
]);

export type AgeClass = "young" | "adult" | "senior";
export const AGE_WORDS: Record<string, AgeClass> = {
  young: "young", puppy: "young", pup: "young", kitten: "young", baby: "young", juvenile: "young", youngster: "young",
  adult: "adult", grown: "adult", mature: "adult",
  old: "senior", older: "senior", elderly: "senior", senior: "senior", geriatric: "senior", aged: "senior",
};
/** Words an age phrase may carry besides the age ("looks old", "only 8 months old", "middle aged"). */
export const AGE_FILLER = new Set([
  "a", "an", "the", "very", "quite", "fairly", "rather", "only", "about", "around", "approx", "approximately", "maybe", "roughly",
  "looks", "look", "looking", "seems", "probably", "dog", "cat", "boy", "girl", "one", "fully",
]);
/** Age in years where a young animal becomes an adult, and an adult a senior. */
export const AGE_YEARS = { adultFrom: 2, seniorFrom: 9 };

/** Collar colours as collars come, not as coats: blue is blue here, not grey. */
export const COLLAR_COLOUR_WORDS: Record<string, string> = {
  red: "red", scarlet: "red", maroon: "red", burgundy: "red", pink: "pink", rose: "pink", magenta: "pink",
  orange: "orange", yellow: "yellow", gold: "yellow", green: "green", lime: "green", olive: "green", teal: "blue",
  blue: "blue", navy: "blue", turquoise: "blue", purple: "purple", violet: "purple", lilac: "purple", lavender: "purple",
  black: "black", white: "white", grey: "grey", gray: "grey", silver: "grey", brown: "brown", tan: "brown", leather: "brown",
  camouflage: "camouflage", camo: "camouflage", tartan: "tartan", plaid: "tartan",
};
/** Collar colours a finder may name for one another (in poor light, or by habit), symmetric. */
export const collarColourSimilarity = lookup<string>([
  ["red", "pink", 0.4], ["red", "orange", 0.4], ["red", "purple", 0.3], ["pink", "purple", 0.4], ["blue", "purple", 0.4],
  ["orange", "yellow", 0.4], ["orange", "brown", 0.3], ["blue", "grey", 0.3], ["black", "grey", 0.3], ["green", "camouflage", 0.5],
  ["brown", "camouflage", 0.5], ["red", "tartan", 0.5], ["green", "tartan", 0.3], ["blue", "black", 0.2],
]);
