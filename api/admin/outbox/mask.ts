/**
 * Masks the sensitive fields of an event payload for the admin listing
 * (spec: email, phone, location, tokens and similar are masked by default).
 * Matching is by key name at any depth, case- and separator-insensitive, so
 * `fromContact`, `from_contact` and `FROM-CONTACT` are all caught. A masked
 * value is replaced whole, whatever its type: a location object hides its
 * coordinates and an array of phone numbers hides its length too.
 */
export const MASK = "***";

// Keys that are sensitive under exactly this (normalised) name.
const sensitiveKeys = new Set([
  "lat",
  "lon",
  "lng",
  "latitude",
  "longitude",
  "coordinates",
  "geo",
  "point",
  "message",
  "body",
  "note",
  "notes",
  "verificationdetail",
  "medicalnotes",
  "microchipid",
  "ip",
  "firstname",
  "lastname",
  "fullname",
  "dob",
  "dateofbirth",
]);

// Any key containing one of these is sensitive: fromContact, contactEmail, tokenHash, homeAddress, preciseLocation...
const sensitiveFragments = [
  "email",
  "phone",
  "mobile",
  "contact",
  "location",
  "address",
  "token",
  "secret",
  "password",
  "apikey",
  "credential",
  "authorization",
  "cookie",
  "session",
];

const normalise = (key: string) => key.toLowerCase().replace(/[^a-z0-9]/g, "");

export function isSensitiveKey(key: string): boolean {
  const k = normalise(key);
  return sensitiveKeys.has(k) || sensitiveFragments.some((fragment) => k.includes(fragment));
}

export function maskPayload(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskPayload);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [key, isSensitiveKey(key) ? MASK : maskPayload(inner)]),
    );
  }
  return value;
}
