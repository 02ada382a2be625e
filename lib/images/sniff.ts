/** The image types an upload may be; "heif" covers HEIC and the other HEIF brands. */
export type ImageType = "jpeg" | "png" | "webp" | "heif" | "gif";

export const IMAGE_MIME_TYPES: Readonly<Record<ImageType, string>> = {
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  heif: "image/heif",
  gif: "image/gif",
};

// ISO-BMFF brands of still HEIF images and image sequences (HEVC-coded and generic).
// AVIF files declare mif1/miaf among theirs, and are HEIF images too.
const heifBrands = new Set(["heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs", "mif1", "mif2", "msf1", "avif", "avis"]);

const startsWith = (bytes: Uint8Array, prefix: readonly number[], at = 0): boolean =>
  bytes.length >= at + prefix.length && prefix.every((b, i) => bytes[at + i] === b);

const ascii = (text: string): number[] => [...text].map((c) => c.charCodeAt(0));

function isHeif(bytes: Uint8Array): boolean {
  // An `ftyp` box first: size(4) "ftyp" major-brand(4) minor-version(4) compatible-brands(4 each).
  if (!startsWith(bytes, ascii("ftyp"), 4) || bytes.length < 16) return false;
  const boxSize = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
  if (boxSize < 16 || boxSize % 4 !== 0) return false;
  const end = Math.min(boxSize, bytes.length, 4096);
  const brand = (at: number) => String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);
  if (heifBrands.has(brand(8))) return true;
  for (let at = 16; at + 4 <= end; at += 4) {
    if (heifBrands.has(brand(at))) return true;
  }
  return false;
}

/**
 * The image type the bytes really are, from their magic numbers, whatever
 * name or content type came with them; null for anything else.
 */
export function sniffImageType(bytes: Uint8Array): ImageType | null {
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "jpeg";
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "png";
  if (startsWith(bytes, ascii("GIF87a")) || startsWith(bytes, ascii("GIF89a"))) return "gif";
  if (startsWith(bytes, ascii("RIFF")) && startsWith(bytes, ascii("WEBP"), 8)) return "webp";
  if (isHeif(bytes)) return "heif";
  return null;
}
