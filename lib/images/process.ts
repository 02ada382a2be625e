import sharp, { type Sharp, type SharpOptions } from "sharp";
import { canDecodeHevcHeic } from "./heic-support.js";
import { perceptualHash } from "./phash.js";
import { sniffImageType, type ImageType } from "./sniff.js";

/** "40 megapixels" of the contract: width x height of the (first frame of the) original. */
export const MAX_IMAGE_PIXELS = 40_000_000;

/** Longest side of each variant in pixels; no variant is ever larger than the original. */
export const VARIANT_LONGEST_SIDE = { thumb: 320, display: 1600 } as const;
export type VariantName = keyof typeof VARIANT_LONGEST_SIDE;

const WEBP_QUALITY: Record<VariantName, number> = { thumb: 75, display: 82 };
/**
 * libwebp's effort (0–6; sharp's default is 4). At 2 the display encode of
 * a 1024 px photo takes 36 instead of 90 ms for 11 % more bytes, and the
 * encode is most of a photo's processing: a shelter's nightly 500 photos
 * are processed as fast as its calls arrive (`npm run bench:partners`,
 * `npx tsx bench/photo-processing.ts`).
 */
const WEBP_EFFORT = 2;
// A hard stop for one libvips pipeline: a photo takes well under a second on this kind of machine.
const PIPELINE_TIMEOUT_SECONDS = 60;

export type ImageRejectionReason = "too-many-pixels" | "unreadable" | "unsupported-type";

/** The upload is not an image this service takes; `reason` picks the HTTP answer (422 or 415). */
export class ImageRejected extends Error {
  constructor(
    readonly reason: ImageRejectionReason,
    message: string,
  ) {
    super(message);
    this.name = "ImageRejected";
  }
}

export interface ImageInfo {
  type: ImageType;
  /** As stored, before EXIF rotation. */
  width: number;
  height: number;
}

export interface ImageVariant {
  /** WebP, with no EXIF, XMP or IPTC metadata. */
  bytes: Buffer;
  width: number;
  height: number;
}

export interface ProcessedImage {
  type: ImageType;
  variants: Record<VariantName, ImageVariant>;
  /** Of the display variant, upright. */
  width: number;
  height: number;
  /** dHash of the upright picture, see phash.ts. */
  phash: string;
}

// libvips' own name for each sniffed type; a mismatch means the magic bytes lied.
const expectedFormat: Record<ImageType, string> = { jpeg: "jpeg", png: "png", webp: "webp", gif: "gif", heif: "heif" };

// failOn "error" refuses truncated and corrupt pixel data but tolerates the benign warnings of real cameras.
// pages 1: the first frame of an animated GIF or WebP, and only it is counted against the pixel limit.
const inputOptions: SharpOptions = { failOn: "error", limitInputPixels: MAX_IMAGE_PIXELS, pages: 1, page: 0 };

function rejectionFor(error: unknown): ImageRejected {
  const message = error instanceof Error ? error.message : String(error);
  if (/pixel limit/i.test(message)) return new ImageRejected("too-many-pixels", `image exceeds ${MAX_IMAGE_PIXELS} pixels`);
  if (/has not been built in|decoder plugin/i.test(message)) {
    return new ImageRejected("unsupported-type", "this server cannot decode the image's compression (HEVC HEIC)");
  }
  return new ImageRejected("unreadable", `image data is truncated or corrupt: ${message.split("\n")[0]}`);
}

/**
 * Type and dimensions from the bytes' headers only, without decoding
 * pixels, so an upload can be refused at once: a decompression bomb (a
 * 30000x30000 PNG of a few KB) costs a header read.
 */
export async function inspectImage(original: Buffer): Promise<ImageInfo> {
  const type = sniffImageType(original);
  if (type === null) throw new ImageRejected("unsupported-type", "not a JPEG, PNG, WebP, HEIC/HEIF or GIF image");
  let metadata;
  try {
    metadata = await sharp(original, inputOptions).metadata();
  } catch (error) {
    throw rejectionFor(error);
  }
  if (metadata.format !== expectedFormat[type]) {
    throw new ImageRejected("unsupported-type", `bytes start like ${type} but decode as ${metadata.format}`);
  }
  const { width, height } = metadata;
  if (!(width > 0 && height > 0)) throw new ImageRejected("unreadable", "image has no dimensions");
  if (width * height > MAX_IMAGE_PIXELS) {
    throw new ImageRejected("too-many-pixels", `image is ${width}x${height}, more than ${MAX_IMAGE_PIXELS} pixels`);
  }
  if (type === "heif" && metadata.compression === "hevc" && !(await canDecodeHevcHeic())) {
    throw new ImageRejected("unsupported-type", "HEVC-coded HEIC cannot be decoded by this server");
  }
  return { type, width, height };
}

async function toWebp(pixels: Sharp, name: VariantName): Promise<ImageVariant> {
  const side = VARIANT_LONGEST_SIDE[name];
  // No withMetadata/keep*: sharp then writes no EXIF, XMP or IPTC, and converts to sRGB.
  const { data, info } = await pixels
    .resize({ width: side, height: side, fit: "inside", withoutEnlargement: true })
    .webp({ quality: WEBP_QUALITY[name], effort: WEBP_EFFORT })
    .timeout({ seconds: PIPELINE_TIMEOUT_SECONDS })
    .toBuffer({ resolveWithObject: true });
  return { bytes: data, width: info.width, height: info.height };
}

/**
 * The variants of an uploaded original: decoded once (upright, first frame,
 * at most display size), then encoded as the display and thumb WebPs.
 * Throws ImageRejected for input the service does not take.
 */
export async function processImage(original: Buffer): Promise<ProcessedImage> {
  const { type } = await inspectImage(original);
  const side = VARIANT_LONGEST_SIDE.display;
  let raster;
  try {
    // limitInputPixels stays on: the pixel check above trusts headers, libvips enforces it on what it decodes.
    raster = await sharp(original, { ...inputOptions, autoOrient: true })
      .resize({ width: side, height: side, fit: "inside", withoutEnlargement: true })
      .raw()
      .timeout({ seconds: PIPELINE_TIMEOUT_SECONDS })
      .toBuffer({ resolveWithObject: true });
  } catch (error) {
    throw rejectionFor(error);
  }
  const { width, height, channels } = raster.info;
  const pixels = () => sharp(raster.data, { raw: { width, height, channels } });
  const display = await toWebp(pixels(), "display");
  const thumb = await toWebp(pixels(), "thumb");
  return { type, variants: { thumb, display }, width: display.width, height: display.height, phash: await perceptualHash(thumb.bytes) };
}
