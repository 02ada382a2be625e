import type { ImageType } from "./sniff.js";

/**
 * Whether an upload's bytes end where their own structure says they end: a
 * JPEG reaches its EOI marker, a PNG its IEND chunk, a GIF its trailer, a
 * WebP its RIFF length, a HEIF its last box. Header reads (inspectImage)
 * cannot see a cut-off upload, and decoding it whole in the API would cost
 * what the processing job is there to spend; this walk is linear and reads
 * no pixel data. Returns why the data is incomplete, or null.
 */
export function findTruncation(bytes: Uint8Array, type: ImageType): string | null {
  switch (type) {
    case "jpeg":
      return jpegTruncation(bytes);
    case "png":
      return pngTruncation(bytes);
    case "gif":
      return gifTruncation(bytes);
    case "webp":
      return webpTruncation(bytes);
    case "heif":
      return heifTruncation(bytes);
  }
}

const u16be = (b: Uint8Array, at: number) => (b[at]! << 8) | b[at + 1]!;
const u32be = (b: Uint8Array, at: number) => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
const u32le = (b: Uint8Array, at: number) => (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;

// Markers with no length field: SOI, EOI, TEM and the restart markers RST0-7.
const standalone = (marker: number) => marker === 0xd8 || marker === 0xd9 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7);

/** Segments by their lengths; after each SOS, entropy-coded data up to the next marker; done at EOI. */
function jpegTruncation(b: Uint8Array): string | null {
  let at = 2; // after SOI
  while (at < b.length) {
    if (b[at] !== 0xff) return "JPEG segments are out of step";
    // Fill bytes: any number of 0xFF before a marker.
    while (at < b.length && b[at] === 0xff) at++;
    if (at >= b.length) break;
    const marker = b[at++]!;
    if (marker === 0xd9) return null;
    if (standalone(marker)) continue;
    if (at + 2 > b.length) break;
    const length = u16be(b, at);
    if (length < 2) return "JPEG segment length is invalid";
    at += length;
    if (at > b.length) break;
    if (marker === 0xda) {
      // Entropy-coded data: 0xFF is followed by 0x00 (a stuffed byte) or a restart marker inside it.
      while (at < b.length) {
        if (b[at] === 0xff && at + 1 < b.length && b[at + 1] !== 0x00 && !(b[at + 1]! >= 0xd0 && b[at + 1]! <= 0xd7)) break;
        at++;
      }
    }
  }
  return "JPEG data ends before its end-of-image marker";
}

/** Chunk by chunk (length, type, data, CRC) until IEND. */
function pngTruncation(b: Uint8Array): string | null {
  let at = 8;
  while (at + 8 <= b.length) {
    const length = u32be(b, at);
    const type = String.fromCharCode(b[at + 4]!, b[at + 5]!, b[at + 6]!, b[at + 7]!);
    at += 12 + length;
    if (at > b.length) break;
    if (type === "IEND") return null;
  }
  return "PNG data ends before its IEND chunk";
}

/** Skips a run of GIF data sub-blocks; the position after the terminator, or -1 past the end. */
function skipSubBlocks(b: Uint8Array, at: number): number {
  while (at < b.length) {
    const size = b[at]!;
    at += 1;
    if (size === 0) return at;
    at += size;
  }
  return -1;
}

/** Header, screen descriptor and colour table, then image and extension blocks until the 0x3B trailer. */
function gifTruncation(b: Uint8Array): string | null {
  if (b.length < 13) return "GIF data ends inside its header";
  let at = 13;
  if (b[10]! & 0x80) at += 3 * (1 << ((b[10]! & 0x07) + 1));
  while (at < b.length) {
    const block = b[at]!;
    if (block === 0x3b) return null;
    if (block === 0x21) {
      at = skipSubBlocks(b, at + 2);
    } else if (block === 0x2c) {
      if (at + 10 > b.length) break;
      const packed = b[at + 9]!;
      at += 10;
      if (packed & 0x80) at += 3 * (1 << ((packed & 0x07) + 1));
      at = skipSubBlocks(b, at + 1); // after the LZW minimum code size
    } else {
      return "GIF has an unknown block";
    }
    if (at < 0) break;
  }
  return "GIF data ends before its trailer";
}

function webpTruncation(b: Uint8Array): string | null {
  if (b.length < 12) return "WebP data ends inside its header";
  return b.length >= 8 + u32le(b, 4) ? null : "WebP data is shorter than its RIFF length";
}

/** Top-level ISO-BMFF boxes must each fit (size 0 runs to the end; size 1 has a 64-bit size). */
function heifTruncation(b: Uint8Array): string | null {
  let at = 0;
  while (at < b.length) {
    if (at + 8 > b.length) return "HEIF data ends inside a box header";
    let size = u32be(b, at);
    if (size === 0) return null;
    if (size === 1) {
      if (at + 16 > b.length) return "HEIF data ends inside a box header";
      size = u32be(b, at + 8) * 2 ** 32 + u32be(b, at + 12);
    }
    if (size < 8) return "HEIF box size is invalid";
    at += size;
  }
  return at === b.length ? null : "HEIF data ends inside a box";
}
