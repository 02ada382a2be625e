/**
 * Who goes missing, and how people write it down: breeds by rough popularity, how an owner
 * names the breed and how a finder guesses it (misspellings included), which breeds a finder
 * takes it for, and the coats it comes in. Written for the benchmark, from how reports on
 * lost-pet boards read, without looking at the scorer's vocabulary; frozen before fitting.
 */
export type Species = "dog" | "cat" | "rabbit" | "bird";
export type Family = "black" | "white" | "cream" | "golden" | "brown" | "ginger" | "grey" | "green";
export type Pattern = "tabby" | "brindle" | "tortoiseshell" | "calico" | "tuxedo" | "tricolour" | "merle" | "spotted" | "point" | "roan";

export interface Coat {
  families: Family[];
  pattern?: Pattern;
}

export interface BreedSpec {
  key: string;
  species: Species;
  popularity: number;
  /** How owners write it, most usual first (weights fall off by position). */
  owner: string[];
  /** How a finder who recognises it writes it. */
  finder: string[];
  /** Breeds a finder may take it for. */
  lookalikes: string[];
  coats: Array<[Coat, number]>;
}

const c = (families: Family[], pattern?: Pattern): Coat => (pattern ? { families, pattern } : { families });

export const SPECIES_SHARE: Array<[Species, number]> = [["dog", 55], ["cat", 38], ["rabbit", 4], ["bird", 3]];

export const BREED_SPECS: BreedSpec[] = [
  // Dogs
  { key: "lab", species: "dog", popularity: 10, owner: ["Labrador Retriever", "Labrador", "Lab", "labrador", "Labrador retriever", "lab"],
    finder: ["Lab", "labrador", "lab mix", "Labrador type", "retriever", "labrador cross"], lookalikes: ["golden", "mixed-dog", "doodle"],
    coats: [[c(["black"]), 45], [c(["golden"]), 35], [c(["brown"]), 20]] },
  { key: "golden", species: "dog", popularity: 5, owner: ["Golden Retriever", "Golden retriever", "Golden"],
    finder: ["golden retriever", "Golden", "retriever", "golden retriever mix"], lookalikes: ["lab", "doodle"],
    coats: [[c(["golden"]), 70], [c(["cream"]), 20], [c(["ginger"]), 10]] },
  { key: "gsd", species: "dog", popularity: 6, owner: ["German Shepherd", "German Shepherd Dog", "GSD", "Alsatian", "german shepard"],
    finder: ["German Shepherd", "shepherd", "shepherd mix", "alsatian", "german shepard", "shepherd type"], lookalikes: ["malinois", "mixed-dog"],
    coats: [[c(["black", "brown"]), 70], [c(["brown", "black"], "brindle"), 5], [c(["black"]), 10], [c(["grey", "brown"]), 15]] },
  { key: "malinois", species: "dog", popularity: 1, owner: ["Belgian Malinois", "Malinois"], finder: ["malinois", "shepherd", "german shepherd"],
    lookalikes: ["gsd"], coats: [[c(["brown", "black"]), 100]] },
  { key: "frenchie", species: "dog", popularity: 5, owner: ["French Bulldog", "Frenchie", "French bulldog"],
    finder: ["French bulldog", "frenchie", "bulldog", "french bull dog"], lookalikes: ["pug", "bulldog"],
    coats: [[c(["brown"]), 40], [c(["black"], "brindle"), 35], [c(["cream"]), 15], [c(["grey"]), 10]] },
  { key: "bulldog", species: "dog", popularity: 2, owner: ["English Bulldog", "Bulldog", "British Bulldog"], finder: ["bulldog", "english bulldog"],
    lookalikes: ["frenchie", "staffy"], coats: [[c(["white", "brown"]), 50], [c(["white", "brown"], "brindle"), 30], [c(["brown"]), 20]] },
  { key: "beagle", species: "dog", popularity: 3, owner: ["Beagle", "beagle"], finder: ["beagle", "hound", "beagle mix", "beagel"],
    lookalikes: ["jrt", "mixed-dog"], coats: [[c(["black", "white", "brown"], "tricolour"), 80], [c(["cream", "white"]), 20]] },
  { key: "poodle", species: "dog", popularity: 3, owner: ["Poodle", "Toy Poodle", "Miniature Poodle", "Standard Poodle"],
    finder: ["poodle", "poodle mix", "poodle cross"], lookalikes: ["doodle", "bichon"],
    coats: [[c(["white"]), 30], [c(["black"]), 25], [c(["golden"]), 20], [c(["grey"]), 15], [c(["brown"]), 10]] },
  { key: "doodle", species: "dog", popularity: 5, owner: ["Labradoodle", "Cockapoo", "Goldendoodle", "Cavapoo", "cockerpoo"],
    finder: ["doodle", "poodle mix", "poodle cross", "curly haired mix", "labradoodle"], lookalikes: ["poodle", "golden", "mixed-dog"],
    coats: [[c(["golden"]), 35], [c(["cream"]), 25], [c(["black"]), 20], [c(["brown"]), 20]] },
  { key: "rottweiler", species: "dog", popularity: 2, owner: ["Rottweiler", "Rottie", "Rotweiler"], finder: ["Rottweiler", "rottweiler mix", "rotweiler"],
    lookalikes: ["mixed-dog", "dobermann"], coats: [[c(["black", "brown"]), 100]] },
  { key: "dobermann", species: "dog", popularity: 1, owner: ["Dobermann", "Doberman"], finder: ["doberman", "dobermann"],
    lookalikes: ["rottweiler"], coats: [[c(["black", "brown"]), 80], [c(["brown"]), 20]] },
  { key: "dachshund", species: "dog", popularity: 3, owner: ["Dachshund", "Miniature Dachshund", "Sausage dog", "Daschund"],
    finder: ["dachshund", "sausage dog", "daschund", "doxie"], lookalikes: ["mixed-dog"],
    coats: [[c(["ginger"]), 40], [c(["black", "brown"]), 35], [c(["brown"]), 15], [c(["grey", "brown"], "merle"), 10]] },
  { key: "yorkie", species: "dog", popularity: 3, owner: ["Yorkshire Terrier", "Yorkie"], finder: ["Yorkie", "terrier", "small terrier", "yorkshire terrier"],
    lookalikes: ["mixed-dog", "shihtzu"], coats: [[c(["grey", "brown"]), 50], [c(["black", "brown"]), 50]] },
  { key: "boxer", species: "dog", popularity: 2, owner: ["Boxer"], finder: ["boxer", "boxer mix", "boxer cross"], lookalikes: ["staffy", "mixed-dog"],
    coats: [[c(["brown", "white"]), 60], [c(["brown", "white"], "brindle"), 40]] },
  { key: "husky", species: "dog", popularity: 3, owner: ["Siberian Husky", "Husky", "Huskie"], finder: ["husky", "husky mix", "malamute", "huskie"],
    lookalikes: ["malamute", "mixed-dog"], coats: [[c(["grey", "white"]), 50], [c(["black", "white"]), 35], [c(["ginger", "white"]), 15]] },
  { key: "malamute", species: "dog", popularity: 1, owner: ["Alaskan Malamute", "Malamute"], finder: ["husky", "malamute"], lookalikes: ["husky"],
    coats: [[c(["grey", "white"]), 100]] },
  { key: "collie", species: "dog", popularity: 3, owner: ["Border Collie", "Collie", "border collie"], finder: ["collie", "border collie", "sheepdog", "collie cross"],
    lookalikes: ["mixed-dog", "aussie"], coats: [[c(["black", "white"]), 75], [c(["grey", "white"], "merle"), 10], [c(["brown", "white"]), 15]] },
  { key: "aussie", species: "dog", popularity: 1, owner: ["Australian Shepherd", "Aussie"], finder: ["collie", "aussie", "australian shepherd"],
    lookalikes: ["collie"], coats: [[c(["grey", "white"], "merle"), 60], [c(["black", "white", "brown"], "tricolour"), 40]] },
  { key: "staffy", species: "dog", popularity: 5, owner: ["Staffordshire Bull Terrier", "Staffy", "Staffie", "Staffordshire bull terrier", "Staff"],
    finder: ["staffy", "staffy cross", "pit bull", "bull terrier", "staffie", "pitbull mix"], lookalikes: ["pitbull", "boxer", "mixed-dog"],
    coats: [[c(["black"], "brindle"), 30], [c(["black", "white"]), 20], [c(["grey"]), 15], [c(["ginger"]), 10], [c(["white"]), 10], [c(["brown", "white"]), 15]] },
  { key: "pitbull", species: "dog", popularity: 4, owner: ["American Pit Bull Terrier", "Pit Bull", "Pitbull", "APBT", "pittie"],
    finder: ["pitbull", "pit mix", "staffy", "bully breed", "pit bull", "pitbull terrier"], lookalikes: ["staffy", "boxer", "mixed-dog"],
    coats: [[c(["grey"]), 25], [c(["black"], "brindle"), 25], [c(["black"]), 15], [c(["white", "brown"]), 20], [c(["brown"]), 15]] },
  { key: "jrt", species: "dog", popularity: 4, owner: ["Jack Russell Terrier", "Jack Russell", "JRT", "Jack Russel"],
    finder: ["jack russell", "terrier", "jack russel", "terrier mix", "jack russell cross"], lookalikes: ["beagle", "mixed-dog", "chihuahua"],
    coats: [[c(["white", "brown"]), 60], [c(["white", "black"]), 15], [c(["white", "black", "brown"], "tricolour"), 25]] },
  { key: "chihuahua", species: "dog", popularity: 4, owner: ["Chihuahua", "Chi", "chihuahua"], finder: ["chihuahua", "chihuahua mix", "chiwawa", "chihuaha"],
    lookalikes: ["jrt", "mixed-dog"], coats: [[c(["brown"]), 30], [c(["cream"]), 25], [c(["black", "brown"]), 20], [c(["white"]), 15], [c(["brown", "white"]), 10]] },
  { key: "cocker", species: "dog", popularity: 3, owner: ["Cocker Spaniel", "English Cocker Spaniel", "Cocker"], finder: ["spaniel", "cocker spaniel", "springer"],
    lookalikes: ["springer", "cavalier", "doodle"], coats: [[c(["golden"]), 35], [c(["black"]), 30], [c(["grey", "white"], "roan"), 15], [c(["brown", "white"]), 20]] },
  { key: "springer", species: "dog", popularity: 2, owner: ["English Springer Spaniel", "Springer Spaniel", "Springer"], finder: ["spaniel", "springer", "cocker spaniel", "springer spaniel"],
    lookalikes: ["cocker", "mixed-dog"], coats: [[c(["brown", "white"]), 70], [c(["black", "white"]), 30]] },
  { key: "cavalier", species: "dog", popularity: 2, owner: ["Cavalier King Charles Spaniel", "Cavalier", "King Charles"], finder: ["spaniel", "cavalier", "king charles spaniel"],
    lookalikes: ["cocker"], coats: [[c(["ginger", "white"]), 55], [c(["black", "white", "brown"], "tricolour"), 25], [c(["ginger"]), 20]] },
  { key: "shihtzu", species: "dog", popularity: 3, owner: ["Shih Tzu", "Shihtzu", "Shi Tzu"], finder: ["shih tzu", "small fluffy dog", "lhasa apso", "maltese mix", "shitzu"],
    lookalikes: ["bichon", "yorkie", "mixed-dog"], coats: [[c(["white", "golden"]), 45], [c(["white", "black"]), 30], [c(["grey", "white"]), 25]] },
  { key: "bichon", species: "dog", popularity: 1, owner: ["Bichon Frise", "Bichon"], finder: ["bichon", "poodle", "small white fluffy dog"],
    lookalikes: ["poodle", "shihtzu"], coats: [[c(["white"]), 100]] },
  { key: "greyhound", species: "dog", popularity: 2, owner: ["Greyhound", "Retired greyhound", "Lurcher", "Whippet"], finder: ["greyhound", "lurcher", "whippet"],
    lookalikes: ["mixed-dog"], coats: [[c(["black"]), 30], [c(["brown"], "brindle"), 30], [c(["brown"]), 20], [c(["grey"]), 20]] },
  { key: "pug", species: "dog", popularity: 2, owner: ["Pug"], finder: ["pug", "pug mix"], lookalikes: ["frenchie"], coats: [[c(["brown", "black"]), 75], [c(["black"]), 25]] },
  { key: "mixed-dog", species: "dog", popularity: 15,
    owner: ["Mixed breed", "Mix", "Mutt", "Crossbreed", "Mongrel", "Terrier mix", "Shepherd mix", "Lab mix", "Lab x Collie", "Staffy cross", "Unknown"],
    finder: ["mixed", "mix", "mutt", "crossbreed", "unknown", "terrier mix", "lab mix", "shepherd type", "not sure"], lookalikes: ["lab", "gsd", "staffy", "jrt"],
    coats: [[c(["black"]), 20], [c(["brown"]), 20], [c(["black", "white"]), 15], [c(["brown", "white"]), 15], [c(["brown"], "brindle"), 10], [c(["golden"]), 10], [c(["black", "brown"]), 10]] },
  // Cats
  { key: "dsh", species: "cat", popularity: 55, owner: ["Domestic Shorthair", "DSH", "Domestic short hair", "Moggy", "Shorthair", "Mixed", "Tabby"],
    finder: ["domestic shorthair", "DSH", "short hair", "moggy", "tabby", "unknown", "mixed", "short haired"], lookalikes: ["dlh", "bsh", "bengal"],
    coats: [[c(["brown"], "tabby"), 20], [c(["grey"], "tabby"), 10], [c(["ginger"], "tabby"), 15], [c(["black"]), 15], [c(["black", "white"], "tuxedo"), 12],
      [c(["black", "ginger"], "tortoiseshell"), 8], [c(["black", "ginger", "white"], "calico"), 5], [c(["grey"]), 7], [c(["white"]), 3], [c(["ginger", "white"]), 5]] },
  { key: "dlh", species: "cat", popularity: 12, owner: ["Domestic Longhair", "DLH", "Long hair", "Domestic long hair", "Fluffy"],
    finder: ["long haired", "longhair", "fluffy cat", "maine coon", "persian mix", "long hair"], lookalikes: ["mainecoon", "persian", "dsh"],
    coats: [[c(["black"]), 20], [c(["brown"], "tabby"), 20], [c(["grey"]), 15], [c(["ginger"]), 15], [c(["black", "white"], "tuxedo"), 15],
      [c(["black", "ginger"], "tortoiseshell"), 10], [c(["white"]), 5]] },
  { key: "siamese", species: "cat", popularity: 5, owner: ["Siamese", "Siamese cross", "siamese"], finder: ["siamese", "siamese mix", "ragdoll"],
    lookalikes: ["ragdoll", "dsh"], coats: [[c(["cream", "brown"], "point"), 70], [c(["cream", "grey"], "point"), 30]] },
  { key: "mainecoon", species: "cat", popularity: 5, owner: ["Maine Coon", "Maine coon", "Main Coon"], finder: ["maine coon", "long haired", "norwegian forest cat", "fluffy", "main coon"],
    lookalikes: ["dlh", "norwegian"], coats: [[c(["brown"], "tabby"), 50], [c(["ginger"], "tabby"), 20], [c(["black"]), 15], [c(["grey"]), 15]] },
  { key: "bsh", species: "cat", popularity: 4, owner: ["British Shorthair", "British Blue", "BSH"], finder: ["british blue", "grey cat", "russian blue", "short hair"],
    lookalikes: ["dsh"], coats: [[c(["grey"]), 80], [c(["cream"]), 20]] },
  { key: "bengal", species: "cat", popularity: 3, owner: ["Bengal"], finder: ["bengal", "spotted tabby", "leopard print", "bengal mix"],
    lookalikes: ["dsh"], coats: [[c(["golden", "brown"], "spotted"), 80], [c(["white", "grey"], "spotted"), 20]] },
  { key: "ragdoll", species: "cat", popularity: 3, owner: ["Ragdoll"], finder: ["ragdoll", "siamese mix", "fluffy"], lookalikes: ["siamese", "dlh"],
    coats: [[c(["cream", "brown"], "point"), 60], [c(["cream", "grey"], "point"), 40]] },
  { key: "persian", species: "cat", popularity: 3, owner: ["Persian"], finder: ["persian", "long haired", "fluffy"], lookalikes: ["dlh"],
    coats: [[c(["white"]), 35], [c(["grey"]), 25], [c(["cream"]), 20], [c(["ginger"]), 20]] },
  { key: "norwegian", species: "cat", popularity: 2, owner: ["Norwegian Forest Cat", "Wegie"], finder: ["maine coon", "long haired", "norwegian forest"],
    lookalikes: ["mainecoon", "dlh"], coats: [[c(["brown"], "tabby"), 60], [c(["black", "white"]), 40]] },
  // Rabbits
  { key: "lop", species: "rabbit", popularity: 40, owner: ["Holland Lop", "Mini Lop", "Lop", "Lop eared"], finder: ["lop", "lop eared rabbit", "lop ear"],
    lookalikes: ["mixed-rabbit"], coats: [[c(["white"]), 25], [c(["brown"]), 30], [c(["grey"]), 20], [c(["black", "white"]), 15], [c(["ginger"]), 10]] },
  { key: "dwarf", species: "rabbit", popularity: 20, owner: ["Netherland Dwarf", "Dwarf"], finder: ["dwarf rabbit", "small rabbit", "netherland dwarf"],
    lookalikes: ["lionhead", "mixed-rabbit"], coats: [[c(["white"]), 30], [c(["grey"]), 30], [c(["black"]), 20], [c(["brown"]), 20]] },
  { key: "lionhead", species: "rabbit", popularity: 20, owner: ["Lionhead"], finder: ["lionhead", "fluffy rabbit", "lion head"], lookalikes: ["dwarf"],
    coats: [[c(["white"]), 30], [c(["brown"]), 40], [c(["grey"]), 30]] },
  { key: "mixed-rabbit", species: "rabbit", popularity: 20, owner: ["Mixed", "Unknown", "Crossbreed"], finder: ["unknown", "mixed"], lookalikes: ["lop"],
    coats: [[c(["white"]), 25], [c(["brown"]), 35], [c(["black", "white"]), 20], [c(["grey"]), 20]] },
  // Birds
  { key: "budgie", species: "bird", popularity: 40, owner: ["Budgie", "Budgerigar"], finder: ["budgie", "parakeet", "small parrot"], lookalikes: ["cockatiel"],
    coats: [[c(["green", "golden"]), 55], [c(["grey", "white"]), 30], [c(["golden"]), 15]] },
  { key: "cockatiel", species: "bird", popularity: 30, owner: ["Cockatiel"], finder: ["cockatiel", "parrot"], lookalikes: ["budgie", "africangrey"],
    coats: [[c(["grey", "golden"]), 70], [c(["white", "golden"]), 30]] },
  { key: "africangrey", species: "bird", popularity: 15, owner: ["African Grey", "African Grey Parrot"], finder: ["african grey", "grey parrot", "parrot"],
    lookalikes: ["cockatiel"], coats: [[c(["grey", "ginger"]), 100]] },
  { key: "pigeon", species: "bird", popularity: 15, owner: ["Racing pigeon", "Pigeon"], finder: ["pigeon", "dove"], lookalikes: ["budgie"],
    coats: [[c(["grey"]), 70], [c(["white"]), 30]] },
];

/** Wordings per family, with weights; "dark" and the like are what people write, too. */
export const FAMILY_WORDS: Record<Family, Array<[string, number]>> = {
  black: [["black", 12], ["jet black", 1], ["dark", 1]],
  white: [["white", 12], ["off-white", 1], ["snow white", 1]],
  cream: [["cream", 6], ["off white", 2], ["beige", 2], ["buff", 1], ["light tan", 1]],
  golden: [["golden", 4], ["yellow", 4], ["gold", 2], ["blonde", 1], ["apricot", 1], ["sandy", 1], ["fawn", 1], ["wheaten", 1]],
  brown: [["brown", 8], ["tan", 5], ["chocolate", 2], ["liver", 1], ["fawn", 2], ["light brown", 2], ["dark brown", 2], ["chestnut", 1], ["caramel", 1], ["brindle brown", 1]],
  ginger: [["ginger", 5], ["orange", 4], ["red", 3], ["marmalade", 1], ["rust", 1], ["copper", 1], ["gingery", 1]],
  grey: [["grey", 6], ["gray", 4], ["blue", 2], ["silver", 2], ["charcoal", 1], ["smokey", 1], ["greyish", 1]],
  green: [["green", 8], ["lime green", 1], ["olive", 1]],
};

/** Pattern wordings; "" means the pattern is left out and only the colours are named. */
export const PATTERN_WORDS: Record<Pattern, Array<[string, number]>> = {
  tabby: [["tabby", 8], ["striped", 2], ["stripy", 1], ["tiger striped", 1], ["mackerel tabby", 1]],
  brindle: [["brindle", 8], ["brindled", 1], ["tiger stripe", 1], ["striped", 1]],
  tortoiseshell: [["tortoiseshell", 5], ["tortie", 4], ["tortishell", 1], ["tortoise shell", 1]],
  calico: [["calico", 6], ["tricolour", 1], ["tortie and white", 2]],
  tuxedo: [["tuxedo", 3], ["", 6], ["bicolour", 1]],
  tricolour: [["tricolour", 4], ["tri-color", 2], ["tri colour", 1], ["", 5]],
  merle: [["merle", 5], ["blue merle", 2], ["dapple", 2]],
  spotted: [["spotted", 4], ["leopard spots", 2], ["rosettes", 1]],
  point: [["seal point", 3], ["colourpoint", 1], ["pointed", 1], ["siamese markings", 1]],
  roan: [["roan", 3], ["blue roan", 2], ["speckled", 1]],
};

/** What a finder may see instead of a family: poor light, a wet or dirty coat. */
export const FAMILY_CONFUSION: Record<Family, Family[]> = {
  black: ["grey", "brown"], white: ["cream", "grey"], cream: ["white", "golden"], golden: ["brown", "cream", "ginger"],
  brown: ["golden", "ginger", "black"], ginger: ["brown", "golden"], grey: ["black", "white", "brown"], green: ["golden"],
};

export const PATTERN_CONFUSION: Partial<Record<Pattern, Pattern>> = {
  tabby: "brindle", brindle: "tabby", tortoiseshell: "calico", calico: "tortoiseshell", merle: "spotted", roan: "spotted",
};
