/**
 * Does what a photo says about coat colour separate look-alikes that text cannot? Generated
 * image pairs, compared by sharp's `stats().dominant` and by a coarse colour histogram (whole
 * picture, and its centre where the animal usually is):
 *
 * - same animal: two photos of one animal in two scenes (background, exposure, white balance,
 *   framing all differ, as between an owner's photo at home and a finder's in the street);
 * - look-alike: two animals of the same breed and the same coat as text names it (one colour
 *   family and pattern), each with its own shade, the case matching cannot tell apart today;
 * - other coat: a different coat, which text already separates (for reference).
 *
 * Reports the AUC of each distance (the chance that a same-animal pair is closer than a
 * look-alike pair; 0.5 is no better than a coin). README.md "Photos" has the outcome.
 *
 *   npx tsx bench/matching/photo-colours.ts [pairs=150] [seed=7]
 */
import sharp from "sharp";
import type { Family } from "./population.js";
import { Rng } from "./prng.js";

type Rgb = [number, number, number];
const FAMILY_RGB: Record<Exclude<Family, "green">, Rgb> = {
  black: [28, 26, 25], white: [232, 230, 225], cream: [224, 204, 168], golden: [204, 158, 82], brown: [122, 78, 42], ginger: [200, 112, 44], grey: [128, 128, 134],
};
const FAMILIES = Object.keys(FAMILY_RGB) as Array<keyof typeof FAMILY_RGB>;
/** Where photos of lost and found animals are taken. */
const SCENES: Rgb[] = [[72, 110, 52], [120, 120, 114], [190, 170, 140], [42, 40, 46], [228, 228, 232], [140, 100, 62], [160, 150, 120]];
const SIZE = 96;

interface Coat {
  base: Rgb;
  second: Rgb | null;
  striped: boolean;
}

const clamp = (x: number) => Math.max(0, Math.min(255, Math.round(x)));

/** An animal's own shade of its family: real coats vary within a colour name (tan to chocolate). */
function coatOf(rng: Rng, family: keyof typeof FAMILY_RGB, second: keyof typeof FAMILY_RGB | null, striped: boolean): Coat {
  const shade = (c: Rgb): Rgb => {
    const light = rng.float(0.8, 1.2);
    return c.map((v) => clamp(v * light + rng.float(-12, 12))) as Rgb;
  };
  return { base: shade(FAMILY_RGB[family]), second: second ? shade(FAMILY_RGB[second]) : null, striped };
}

/** One photo: a scene, the animal as a textured ellipse somewhere in it, then the light. */
async function photo(rng: Rng, coat: Coat): Promise<Buffer> {
  const scene = rng.pick(SCENES);
  const exposure = rng.float(0.65, 1.35);
  const balance: Rgb = [rng.float(0.88, 1.12), 1, rng.float(0.88, 1.12)];
  const cx = rng.float(0.35, 0.65) * SIZE;
  const cy = rng.float(0.35, 0.65) * SIZE;
  const rx = rng.float(0.22, 0.42) * SIZE;
  const ry = rng.float(0.18, 0.35) * SIZE;
  const patches = Array.from({ length: 3 }, () => ({ x: rng.float(cx - rx, cx + rx), y: rng.float(cy - ry, cy + ry), r: rng.float(0.2, 0.5) * rx }));
  const pixels = Buffer.alloc(SIZE * SIZE * 3);
  for (let y = 0; y < SIZE; y++) {
    for (let x = 0; x < SIZE; x++) {
      const inside = ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1;
      let c: Rgb = scene;
      if (inside) {
        c = coat.base;
        if (coat.second && patches.some((p) => (x - p.x) ** 2 + (y - p.y) ** 2 <= p.r ** 2)) c = coat.second;
        if (coat.striped && Math.floor((x + y * 0.3) / 4) % 2 === 0) c = c.map((v) => v * 0.6) as Rgb;
      }
      const noise = rng.float(-14, 14);
      for (let k = 0; k < 3; k++) pixels[(y * SIZE + x) * 3 + k] = clamp((c[k]! + noise) * exposure * balance[k]!);
    }
  }
  return sharp(pixels, { raw: { width: SIZE, height: SIZE, channels: 3 } }).jpeg({ quality: 80 }).toBuffer();
}

interface PhotoColours {
  dominant: Rgb;
  histogram: number[];
  centre: number[];
}

/** 4 levels per channel, 64 bins, normalised. */
function histogramOf(raw: Buffer): number[] {
  const bins = new Array<number>(64).fill(0);
  for (let i = 0; i < raw.length; i += 3) bins[(raw[i]! >> 6) * 16 + (raw[i + 1]! >> 6) * 4 + (raw[i + 2]! >> 6)]!++;
  const n = raw.length / 3;
  return bins.map((b) => b / n);
}

async function coloursOf(image: Buffer): Promise<PhotoColours> {
  const { dominant } = await sharp(image).stats();
  const small = await sharp(image).resize(32, 32, { fit: "fill" }).removeAlpha().raw().toBuffer();
  const middle = await sharp(image).extract({ left: SIZE / 4, top: SIZE / 4, width: SIZE / 2, height: SIZE / 2 }).resize(16, 16).removeAlpha().raw().toBuffer();
  return { dominant: [dominant.r, dominant.g, dominant.b], histogram: histogramOf(small), centre: histogramOf(middle) };
}

const intersection = (a: number[], b: number[]) => 1 - a.reduce((s, x, i) => s + Math.min(x, b[i]!), 0);
const DISTANCES = {
  "stats().dominant, RGB distance": (a: PhotoColours, b: PhotoColours) => Math.hypot(...a.dominant.map((v, i) => v - b.dominant[i]!)),
  "histogram 4×4×4, whole photo": (a: PhotoColours, b: PhotoColours) => intersection(a.histogram, b.histogram),
  "histogram 4×4×4, centre quarter": (a: PhotoColours, b: PhotoColours) => intersection(a.centre, b.centre),
};

/** P(a same-animal pair is closer than the other pair), ties half. */
function auc(same: number[], other: number[]): number {
  let wins = 0;
  for (const s of same) for (const o of other) wins += s < o ? 1 : s === o ? 0.5 : 0;
  return wins / (same.length * other.length);
}

export async function measurePhotoColours(pairs: number, seed: number) {
  const rng = new Rng(seed);
  const kinds = { same: [] as Array<[PhotoColours, PhotoColours]>, lookalike: [] as Array<[PhotoColours, PhotoColours]>, other: [] as Array<[PhotoColours, PhotoColours]> };
  for (let i = 0; i < pairs; i++) {
    const family = rng.pick(FAMILIES);
    const second = rng.chance(0.4) ? rng.pick(FAMILIES.filter((f) => f !== family)) : null;
    const striped = rng.chance(0.2);
    const animal = coatOf(rng, family, second, striped);
    const twin = coatOf(rng, family, second, striped);
    const otherFamily = rng.pick(FAMILIES.filter((f) => f !== family));
    const stranger = coatOf(rng, otherFamily, null, false);
    const [a, b, c, d] = await Promise.all([photo(rng, animal), photo(rng, animal), photo(rng, twin), photo(rng, stranger)]);
    const [ca, cb, cc, cd] = await Promise.all([a, b, c, d].map(coloursOf));
    kinds.same.push([ca!, cb!]);
    kinds.lookalike.push([ca!, cc!]);
    kinds.other.push([ca!, cd!]);
  }
  return Object.entries(DISTANCES).map(([name, distance]) => {
    const of = (list: Array<[PhotoColours, PhotoColours]>) => list.map(([x, y]) => distance(x, y));
    return { name, lookalikeAuc: auc(of(kinds.same), of(kinds.lookalike)), otherCoatAuc: auc(of(kinds.same), of(kinds.other)) };
  });
}

if (process.argv[1]?.endsWith("photo-colours.ts")) {
  const [pairs = 150, seed = 7] = process.argv.slice(2).map(Number);
  console.log(`${pairs} generated photo triples (seed ${seed}), ${SIZE}×${SIZE} JPEG: AUC of same animal against`);
  console.log(`${"distance".padEnd(34)} | look-alike (same breed and coat in words) | other coat (text tells apart already)`);
  for (const r of await measurePhotoColours(pairs, seed)) {
    console.log(`${r.name.padEnd(34)} | ${r.lookalikeAuc.toFixed(3).padStart(41)} | ${r.otherCoatAuc.toFixed(3).padStart(37)}`);
  }
}
