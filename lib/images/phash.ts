import sharp from "sharp";

/** 16 lowercase hex digits: the 64 bits of a dHash. */
export const PHASH_PATTERN = /^[0-9a-f]{16}$/;

/**
 * A 64-bit difference hash (dHash) of any image sharp reads: upright by its
 * EXIF orientation, transparency on white, greyscale, squeezed to 9x8, and
 * one bit per horizontal neighbour pair (1 where the right pixel is
 * brighter). Resizing and recompression barely change it; a different
 * picture differs in about half the bits.
 */
export async function perceptualHash(image: Buffer): Promise<string> {
  const { data, info } = await sharp(image, { autoOrient: true, failOn: "error", limitInputPixels: 40_000_000 })
    .flatten({ background: "#ffffff" })
    .greyscale()
    .resize(9, 8, { fit: "fill" })
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.width !== 9 || info.height !== 8 || info.channels !== 1) {
    throw new Error(`unexpected dHash raster ${info.width}x${info.height}x${info.channels}`);
  }
  let hash = 0n;
  for (let y = 0; y < 8; y++) {
    for (let x = 0; x < 8; x++) {
      const left = data[y * 9 + x]!;
      const right = data[y * 9 + x + 1]!;
      hash = (hash << 1n) | (right > left ? 1n : 0n);
    }
  }
  return hash.toString(16).padStart(16, "0");
}

/** How many of the 64 bits differ: 0 is the same picture, around 32 unrelated ones. */
export function hammingDistance(a: string, b: string): number {
  if (!PHASH_PATTERN.test(a) || !PHASH_PATTERN.test(b)) throw new Error("hammingDistance needs two 16-hex-digit hashes");
  let diff = BigInt(`0x${a}`) ^ BigInt(`0x${b}`);
  let count = 0;
  while (diff !== 0n) {
    diff &= diff - 1n;
    count++;
  }
  return count;
}
