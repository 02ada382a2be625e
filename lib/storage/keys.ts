import { createHash } from "node:crypto";

const sha256Pattern = /^[0-9a-f]{64}$/;

export function sha256Hex(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function assertSha256(digest: string): void {
  if (!sha256Pattern.test(digest)) throw new Error(`not a lowercase hex SHA-256 digest: ${JSON.stringify(digest.slice(0, 80))}`);
}

/** Originals live under their own prefix, which is never served, so a bucket policy can keep it private. */
export const ORIGINALS_PREFIX = "originals/";
export const VARIANTS_PREFIX = "variants/";

/** `originals/<sha256 of the uploaded bytes>`. */
export function originalKey(sha256: string): string {
  assertSha256(sha256);
  return `${ORIGINALS_PREFIX}${sha256}`;
}

/** `variants/<sha256 of the WebP bytes>.webp`: content-addressed, so equal bytes are stored once. */
export function variantKey(sha256: string): string {
  assertSha256(sha256);
  return `${VARIANTS_PREFIX}${sha256}.webp`;
}

export function originalKeyFor(bytes: Buffer): string {
  return originalKey(sha256Hex(bytes));
}

export function variantKeyFor(webpBytes: Buffer): string {
  return variantKey(sha256Hex(webpBytes));
}
