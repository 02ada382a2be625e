import type { FastifyReply, FastifyRequest, onSendHookHandler, RouteOptions } from "fastify";
import { coarsen, type LatLon } from "../../lib/geo.js";

/**
 * The privacy checker: what no public response may carry. Every app the
 * shared builders make (tests/helpers/app.ts, tests/abuse/harness.ts) runs it
 * on every response of a public route and every response to an anonymous
 * request; tests/setup/each-file.ts fails the running test on a violation.
 *
 * Besides fixed rules (private field names, email and phone numbers, WKT
 * points, lat/lon pairs off their cell centre, GeoJSON positions), it learns
 * from the file's own successful writes what must stay private: the precise
 * coordinates sent, fromContact, verificationDetail, microchipId, email and
 * phone values, and the ids of the actors who wrote.
 */

/** Field names only private, owner or admin views may carry (compared lowercased, without underscores). */
const PRIVATE_KEYS = new Set(
  ["reporterId", "reporter", "ownerId", "actorId", "recipientActorId", "flaggedBy", "fromContact", "contact", "verificationDetail",
    "microchipId", "email", "emailAddress", "phone", "phoneNumber", "tokenHash", "preciseLocation"].map((k) => k.toLowerCase()),
);
/** Request fields whose values are private once written. */
const SECRET_VALUE_KEYS = new Set(["fromcontact", "contact", "verificationdetail", "microchipid", "email", "phone", "phonenumber"]);
const LAT_KEYS = new Set(["lat", "latitude"]);
const LON_KEYS = new Set(["lon", "lng", "long", "longitude"]);
const CURSOR_KEYS = new Set(["cursor", "nextcursor"]);
const normalise = (key: string) => key.toLowerCase().replaceAll("_", "");
/** `{name, kind: shelter|rescue|vet, phone?, email?, address?, website?}`: what a found report shows of its shelter partner. */
const isPartnerContact = (value: unknown): boolean =>
  typeof value === "object" && value !== null && !Array.isArray(value) &&
  ["shelter", "rescue", "vet"].includes((value as { kind?: unknown }).kind as string) &&
  Object.keys(value).every((k) => ["name", "kind", "phone", "email", "address", "website"].includes(k));

/** `{phone?, email?, address?, website?}` under `publicContact`: a shelter partner's, listed by GET /v1/safety/shelters. */
const isPublicContact = (value: unknown): boolean =>
  typeof value === "object" && value !== null && !Array.isArray(value) &&
  Object.keys(value).every((k) => ["phone", "email", "address", "website"].includes(k));

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+\.[A-Za-z0-9.-]+/;
// International form: a plus sign and at least 8 digits, spaces, dots or dashes between them allowed.
const PHONE = /\+\d(?:[\s.-]?\d){7,}/;
// WKT or EWKT, as PostGIS prints a geography: the public API never answers with one.
const WKT = /\b(?:SRID=\d+;)?(?:MULTI)?POINT\s*(?:ZM|Z|M)?\s*\(/i;
/** A value coarse views round to one or two decimals never has: three or more decimals. */
const isFine = (x: number) => Number.isFinite(x) && Math.abs(x * 100 - Math.round(x * 100)) > 1e-6;
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** Matches `text` where it is not glued to letters or digits on either side (so "abcde" is not found inside a UUID). */
const bounded = (text: string) => new RegExp(`(?<![A-Za-z0-9])${escape(text)}(?![A-Za-z0-9])`);

/** True when the point is the centre of its ~1 km cell (what public views show), within the 6-decimal rounding. */
export function isCoarse(point: LatLon): boolean {
  const cell = coarsen(point);
  return Math.abs(cell.lat - point.lat) <= 1.5e-6 && Math.abs(cell.lon - point.lon) <= 1.5e-6;
}

const asCoordinate = (value: unknown): number | null => {
  const n = typeof value === "number" ? value : typeof value === "string" && /^\s*-?\d+(?:\.\d+)?\s*$/.test(value) ? Number(value) : NaN;
  return Number.isFinite(n) ? n : null;
};

/** The coordinate pair of an object with lat/lon-like keys: which keys, and the point when both parse. */
function pairOf(record: Record<string, unknown>): { keys: string[]; point: LatLon | null } {
  const keys = Object.keys(record);
  const latKey = keys.find((k) => LAT_KEYS.has(k.toLowerCase()));
  const lonKey = keys.find((k) => LON_KEYS.has(k.toLowerCase()));
  const lat = latKey === undefined ? null : asCoordinate(record[latKey]);
  const lon = lonKey === undefined ? null : asCoordinate(record[lonKey]);
  return {
    keys: [latKey, lonKey].filter((k): k is string => k !== undefined),
    point: lat !== null && lon !== null ? { lat, lon } : null,
  };
}

const MAX_LEARN_DEPTH = 32;

/** What must stay private: fixed rules plus values seeded explicitly or learnt from writes. */
export class PrivacyRules {
  private readonly coordinates = new Map<number, RegExp[]>();
  private readonly texts = new Map<string, RegExp>();
  private readonly actorIds = new Map<string, RegExp | null>();
  /** Strings some write sent in a public field: whoever sent them published them, so they are no secret. */
  private readonly published = new Set<string>();

  /** Forgets every seeded and learnt value: a new test file starts with the fixed rules only. */
  clear(): void {
    this.coordinates.clear();
    this.texts.clear();
    this.actorIds.clear();
    this.published.clear();
  }

  /** A precise point: neither coordinate may appear in a public body, as a number or in text. A cell centre is public by design. */
  point(point: LatLon): this {
    if (isCoarse(point)) return this;
    for (const value of [point.lat, point.lon]) {
      if (!isFine(value) || this.coordinates.has(value)) continue;
      const decimals = String(value).split(".")[1]?.length ?? 0;
      const forms = new Set([String(value)]);
      // Rounded or truncated to 4+ decimals (~11 m) is still precise.
      for (let d = 4; d < decimals; d++) {
        forms.add(value.toFixed(d));
        forms.add(String(Math.trunc(value * 10 ** d) / 10 ** d));
      }
      this.coordinates.set(value, [...forms].map((form) => new RegExp(`(?<![\\d.])${escape(form)}(?!\\d)`)));
    }
    return this;
  }

  /** A private value (contact, verification detail, microchip id); shorter than 5 characters it would match by chance. */
  text(value: string): this {
    const trimmed = value.trim();
    if (trimmed.length >= 5) this.texts.set(trimmed, bounded(trimmed));
    return this;
  }

  /** An actor id: found as a whole value, and inside text when it is distinctive (6+ characters, not only letters). */
  actor(id: string): this {
    if (id.length >= 3) this.actorIds.set(id, id.length >= 6 && /[^A-Za-z]/.test(id) ? bounded(id) : null);
    return this;
  }

  /** Learns from a successful write: its precise points, private values and its actor. */
  learn(body: unknown, actorId: string | null): void {
    if (actorId) this.actor(actorId);
    // The fuzzer sends deeply nested bodies that a route may accept and ignore;
    // no real payload nests deeper than a few levels.
    const walk = (value: unknown, key: string, depth: number) => {
      if (depth > MAX_LEARN_DEPTH) return;
      if (typeof value === "string") {
        if (SECRET_VALUE_KEYS.has(normalise(key))) this.text(value);
        else this.published.add(value.trim());
      } else if (Array.isArray(value)) {
        value.forEach((item) => walk(item, key, depth + 1));
      } else if (value !== null && typeof value === "object") {
        const { point } = pairOf(value as Record<string, unknown>);
        if (point) this.point(point);
        for (const [k, v] of Object.entries(value)) walk(v, k, depth + 1);
      }
    };
    walk(body, "", 0);
  }

  /** Everything in a public body that breaks the rules, each with its JSON path. */
  violations(body: unknown, at = "$"): string[] {
    return this.walk(body, at, false);
  }

  /** `cellCentre`: the value is a coordinate of a cell centre (a coarse point), public by design. */
  private walk(body: unknown, at: string, cellCentre: boolean): string[] {
    if (cellCentre) return [];
    if (typeof body === "string") return this.inText(body, at);
    if (typeof body === "number") return this.inNumber(body, at);
    if (Array.isArray(body)) return this.inArray(body, at);
    if (body === null || typeof body !== "object") return [];
    const record = body as Record<string, unknown>;
    const found: string[] = [];
    const pair = pairOf(record);
    const coarse = pair.point !== null && isCoarse(pair.point);
    if (pair.point && !coarse) found.push(`${at}: precise point ${JSON.stringify(pair.point)}`);
    if (!pair.point && pair.keys.some((k) => isFine(asCoordinate(record[k]) ?? 0))) found.push(`${at}: a lone coordinate (${pair.keys.join(", ")})`);
    for (const [key, value] of Object.entries(record)) {
      // A shelter partner's public contact, on a found report in its custody or in the shelters near a point, is public by design (contract parts 3 and 4).
      if (key === "partner" && isPartnerContact(value)) continue;
      if (key === "publicContact" && isPublicContact(value)) continue;
      if (PRIVATE_KEYS.has(normalise(key))) found.push(`${at}.${key}: private field`);
      found.push(...this.walk(value, `${at}.${key}`, coarse && pair.keys.includes(key)));
      // Opaque cursors are base64url JSON: what they hide must be public too.
      if (CURSOR_KEYS.has(key.toLowerCase()) && typeof value === "string") {
        let decoded: unknown;
        try {
          decoded = JSON.parse(Buffer.from(value, "base64url").toString("utf8"));
        } catch {
          continue; // not JSON: nothing inside to leak
        }
        found.push(...this.walk(decoded, `${at}.${key}(decoded)`, false));
      }
    }
    return found;
  }

  private inText(text: string, at: string): string[] {
    const found: string[] = [];
    if (EMAIL.test(text)) found.push(`${at}: an email address`);
    if (PHONE.test(text)) found.push(`${at}: a phone number`);
    if (WKT.test(text)) found.push(`${at}: a WKT point`);
    for (const [value, forms] of this.coordinates) {
      if (forms.some((form) => form.test(text))) found.push(`${at}: seeded coordinate ${value} in text`);
    }
    for (const [secret, pattern] of this.texts) {
      if (!this.published.has(secret) && pattern.test(text)) found.push(`${at}: contains private value ${JSON.stringify(secret)}`);
    }
    for (const [id, pattern] of this.actorIds) {
      if (this.published.has(id)) continue;
      if (text === id || pattern?.test(text)) found.push(`${at}: contains actor id ${JSON.stringify(id)}`);
    }
    return found;
  }

  private inNumber(value: number, at: string): string[] {
    if (!isFine(value)) return [];
    // The seeded value, or it rounded or truncated to 4+ decimals (within ~5 m).
    const hasFourDecimals = Math.abs(value * 1e3 - Math.round(value * 1e3)) > 1e-6;
    const seeded = hasFourDecimals ? [...this.coordinates.keys()].find((c) => Math.abs(c - value) < 1e-4) : undefined;
    return seeded === undefined ? [] : [`${at}: seeded coordinate ${seeded} as the number ${value}`];
  }

  private inArray(items: unknown[], at: string): string[] {
    // A GeoJSON position is [lon, lat].
    const [lon, lat] = items;
    if (items.length === 2 && typeof lon === "number" && typeof lat === "number" && Math.abs(lat) <= 90 && Math.abs(lon) <= 180 && (isFine(lat) || isFine(lon))) {
      return isCoarse({ lat, lon }) ? [] : [`${at}: precise GeoJSON position [${lon}, ${lat}]`];
    }
    return items.flatMap((item, i) => this.walk(item, `${at}[${i}]`, false));
  }
}

/** This test file's rules: seed them with `privacyRules.point(…)` etc.; successful writes add to them. */
export const privacyRules = new PrivacyRules();
const violations: string[] = [];
/** How many public responses the hook has checked in this file. */
export const privacyStats = { checked: 0, setupInstalled: false };

/** The violations recorded since the last call; tests/setup/each-file.ts asserts this is empty after each test. */
export function takePrivacyViolations(): string[] {
  return violations.splice(0);
}

function inspect(request: FastifyRequest, reply: FastifyReply, payload: unknown): void {
  const actor = (request as FastifyRequest & { actor?: { id: string } | null }).actor ?? null;
  if (reply.statusCode < 300 && !["GET", "HEAD", "OPTIONS"].includes(request.method)) privacyRules.learn(request.body, actor?.id ?? null);
  const options = request.routeOptions;
  // Hidden routes serve documents about the API (OpenAPI, docs, console, health, metrics), not records.
  if ((options.schema as { hide?: boolean } | undefined)?.hide) return;
  if ((options.config as { auth?: string }).auth !== "public" && actor !== null) return;
  const text = typeof payload === "string" ? payload : Buffer.isBuffer(payload) ? payload.toString("utf8") : null;
  if (!text) return;
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: checked as text
  }
  privacyStats.checked += 1;
  const where = `${request.method} ${request.url.slice(0, 120)} ${reply.statusCode}${actor ? "" : " (anonymous)"}`;
  violations.push(...privacyRules.violations(body).map((v) => `${where} ${v}`));
}

const privacyOnSend: onSendHookHandler = async (request, reply, payload) => {
  try {
    inspect(request, reply, payload);
  } catch (err) {
    violations.push(`${request.method} ${request.url.slice(0, 120)}: the privacy checker failed: ${(err as Error).message}`);
  }
  return payload;
};

/** An onRoute hook (buildApp's `onRoute`): adds the privacy check to the route's onSend hooks. */
export function checkPublicResponses(route: RouteOptions): void {
  route.onSend = [...[route.onSend ?? []].flat(), privacyOnSend];
}
