import { coarsen } from "../../lib/geo.js";

/**
 * The privacy checker: what no public response may carry. Every abuse-suite
 * file runs it on every response of a public route (see harness.ts).
 */

// Field names that only private views, admin views or the owner may see.
const PRIVATE_KEYS = new Set(
  ["reporterId", "reporter_id", "ownerId", "owner_id", "fromContact", "from_contact", "verificationDetail", "verification_detail",
    "microchipId", "microchip_id", "email", "phone", "flaggedBy", "recipientActorId", "tokenHash"].map((k) => k.toLowerCase()),
);
const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+\.[A-Za-z0-9.-]+/;
// International form: a plus sign and at least 8 digits, spaces or dots between them allowed.
const PHONE = /\+\d(?:[\s.-]?\d){7,}/;

/** Everything in a public body that breaks the rules; `secrets` are seeded values (ids, contacts) that must never appear. */
export function privacyViolations(body: unknown, secrets: readonly string[], at = "$"): string[] {
  if (typeof body === "string") {
    const found: string[] = [];
    if (EMAIL.test(body)) found.push(`${at}: an email address`);
    if (PHONE.test(body)) found.push(`${at}: a phone number`);
    for (const secret of secrets) if (body.includes(secret)) found.push(`${at}: contains ${JSON.stringify(secret)}`);
    return found;
  }
  if (Array.isArray(body)) return body.flatMap((item, i) => privacyViolations(item, secrets, `${at}[${i}]`));
  if (body === null || typeof body !== "object") return [];
  const record = body as Record<string, unknown>;
  const found: string[] = [];
  if (typeof record.lat === "number" && typeof record.lon === "number") {
    const point = { lat: record.lat, lon: record.lon };
    const cell = coarsen(point);
    if (cell.lat !== point.lat || cell.lon !== point.lon) found.push(`${at}: precise point ${JSON.stringify(point)}`);
  }
  for (const [key, value] of Object.entries(record)) {
    if (PRIVATE_KEYS.has(key.toLowerCase())) found.push(`${at}.${key}: private field`);
    found.push(...privacyViolations(value, secrets, `${at}.${key}`));
    // Opaque cursors are base64url JSON: what they hide must be public too.
    if (key === "nextCursor" && typeof value === "string") {
      try {
        found.push(...privacyViolations(JSON.parse(Buffer.from(value, "base64url").toString("utf8")), secrets, `${at}.nextCursor(decoded)`));
      } catch {
        // not JSON: nothing inside to leak
      }
    }
  }
  return found;
}
