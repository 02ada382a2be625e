/**
 * Distinguishing marks and free-text descriptions as owners and finders write them. Each
 * trait has several phrasings, drawn independently by each side. Frozen with population.ts.
 */
import type { Species } from "./population.js";

export interface Trait {
  key: string;
  species: Species[];
  /** How often an animal of those species has it, relative. */
  weight: number;
  phrasings: string[];
  /** Seen by a finder (a vet-only fact is not). */
  visible: boolean;
}

const DOG_CAT: Species[] = ["dog", "cat"];
const ALL: Species[] = ["dog", "cat", "rabbit", "bird"];

export const TRAITS: Trait[] = [
  { key: "chest-patch", species: DOG_CAT, weight: 8, visible: true,
    phrasings: ["white patch on chest", "white spot on his chest", "white blaze on chest", "small white chest patch", "white mark on her chest", "white bib"] },
  { key: "white-paws", species: DOG_CAT, weight: 6, visible: true,
    phrasings: ["white paws", "white socks", "four white feet", "white feet", "white tips on paws", "white mittens"] },
  { key: "notched-ear", species: DOG_CAT, weight: 3, visible: true,
    phrasings: ["notched left ear", "torn ear", "nick in right ear", "ear has a notch", "missing a bit of left ear"] },
  { key: "tipped-ear", species: ["cat"], weight: 3, visible: true,
    phrasings: ["tipped ear", "ear tipped", "left ear clipped", "ear tip missing", "eartipped (TNR)"] },
  { key: "limp", species: ["dog", "cat", "rabbit"], weight: 2, visible: true,
    phrasings: ["limps on back leg", "limping", "walks with a limp", "favours left hind leg", "bad back leg"] },
  { key: "nose-scar", species: DOG_CAT, weight: 2, visible: true,
    phrasings: ["scar on nose", "scarred muzzle", "healed cut on snout", "small scar on her nose"] },
  { key: "grey-muzzle", species: ["dog"], weight: 4, visible: true,
    phrasings: ["grey muzzle", "greying face", "white around muzzle", "grey around the mouth", "older dog, grey face"] },
  { key: "docked-tail", species: ["dog"], weight: 2, visible: true,
    phrasings: ["docked tail", "short tail", "stumpy tail", "bobtail", "no tail"] },
  { key: "kinked-tail", species: ["cat"], weight: 2, visible: true, phrasings: ["kinked tail", "crooked tail", "bent tail tip", "kink at end of tail"] },
  { key: "one-eye", species: ALL, weight: 1, visible: true, phrasings: ["missing an eye", "one eye", "blind in one eye", "cloudy left eye"] },
  { key: "odd-eyes", species: DOG_CAT, weight: 1, visible: true,
    phrasings: ["different coloured eyes", "one blue eye", "odd eyes", "one blue one brown eye"] },
  { key: "overweight", species: ["dog", "cat", "rabbit"], weight: 3, visible: true, phrasings: ["overweight", "chubby", "very fat", "big belly", "a bit tubby"] },
  { key: "thin", species: ALL, weight: 2, visible: true, phrasings: ["very thin", "skinny", "underweight", "ribs showing"] },
  { key: "harness", species: ["dog"], weight: 3, visible: true, phrasings: ["black harness", "wearing a harness", "blue harness", "red harness"] },
  { key: "shaved-leg", species: DOG_CAT, weight: 1, visible: true,
    phrasings: ["shaved patch on leg", "shaved leg from vet", "clipped fur on foreleg", "shaved front leg"] },
  { key: "fluffy-tail", species: ["cat"], weight: 3, visible: true, phrasings: ["fluffy tail", "bushy tail", "long fluffy tail", "big bushy tail"] },
  { key: "white-tail-tip", species: DOG_CAT, weight: 3, visible: true, phrasings: ["white tip on tail", "white tail tip", "tail tipped white", "white end of tail"] },
  { key: "pink-nose", species: DOG_CAT, weight: 2, visible: true, phrasings: ["pink nose", "pink nose pad", "spotted nose", "pink and black nose"] },
  { key: "ear-tattoo", species: ["dog", "cat", "rabbit"], weight: 1, visible: false, phrasings: ["tattoo in ear", "ear tattoo", "tattooed ear"] },
  { key: "floppy-ear", species: ["dog", "rabbit"], weight: 2, visible: true, phrasings: ["one floppy ear", "one ear up one down", "floppy left ear", "one droopy ear"] },
  { key: "leg-ring", species: ["bird"], weight: 4, visible: true, phrasings: ["ring on left leg", "leg band", "ringed", "metal ring on leg"] },
  { key: "clipped-wings", species: ["bird"], weight: 3, visible: true, phrasings: ["clipped wings", "wings clipped", "cannot fly far"] },
  { key: "talks", species: ["bird"], weight: 2, visible: true, phrasings: ["talks", "says hello", "whistles a tune", "can say a few words"] },
];

export const COLLAR_COLOURS = ["red", "blue", "black", "pink", "green", "purple", "orange", "brown leather", "camouflage", "yellow"];
export const COLLAR_PHRASINGS = ["{c} collar", "wearing a {c} collar", "{c} nylon collar", "{c} collar with tag", "{c} collar, no tag", "{c} collar with bell"];
export const NO_COLLAR = ["no collar", "not wearing a collar", "no collar or tag", "no collar, no tag"];

export const NAMES = [
  "Max", "Bella", "Luna", "Charlie", "Milo", "Daisy", "Rocky", "Coco", "Bailey", "Lucy", "Oscar", "Molly", "Teddy", "Loki",
  "Simba", "Nala", "Tiger", "Smokey", "Ginger", "Shadow", "Buddy", "Rosie", "Bear", "Pepper", "Poppy", "Alfie", "Willow",
  "Archie", "Biscuit", "Olive", "Misty", "Jasper", "Kiwi", "Pip", "Thor", "Ruby", "Honey", "Mango", "Leo", "Zeus",
];

export const PLACES = [
  "Victoria Park", "Elm Street", "Mill Lane", "the canal path", "Oak Road", "St Mary's church", "the primary school",
  "Station Road", "Riverside Walk", "the common", "High Street", "the Tesco car park", "Greenfield Avenue", "Brook Close",
  "the allotments", "Kingsway", "Church Lane", "the golf course", "Meadow Way", "the football ground", "Queens Road",
  "the retail park", "Park Crescent", "the woods behind the school", "Albert Road", "the train station", "Windmill Hill",
  "the leisure centre", "Cherry Tree Lane", "the industrial estate", "Manor Farm", "the bypass", "Willow Drive",
  "the cemetery", "Castle Street", "the playing fields", "Rose Hill", "the marina", "Forest Road", "the bus depot",
];

export const OWNER_TEMPERAMENT = ["very friendly", "shy with strangers", "nervous", "timid, may run", "loves people", "scared of men",
  "friendly but jumpy", "calm and gentle", "very skittish", "will come to food", "gets anxious", "playful"];
export const FINDER_TEMPERAMENT = ["friendly", "very scared", "nervous", "timid", "came straight to us", "hungry", "calm",
  "skittish, would not come close", "seems well cared for", "a bit wary", "playful", "exhausted"];
export const SIZES = { small: ["small", "little", "tiny"], medium: ["medium sized", "medium", "average size"], large: ["large", "big", "very big"] };
export const OWNER_AGE = { young: ["1 year old", "young", "only 8 months old", "puppy"], adult: ["4 years old", "6 years old", "adult"],
  senior: ["12 years old", "senior", "elderly", "old"] };
export const FINDER_AGE = { young: ["looks young", "young"], adult: ["adult", "middle aged"], senior: ["older", "looks old", "elderly"] };
