import { createHash } from "node:crypto";

/**
 * A notification source id that is not an event's: the same text always
 * gives the same UUID (version 8, from its SHA-256), so a second writer of
 * the same notification (a retried job, a second notifier) meets the unique
 * (source, recipient, channel) instead of writing another.
 */
export function derivedSourceId(text: string): string {
  const hash = createHash("sha256").update(text).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x80; // version 8: custom
  hash[8] = (hash[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
