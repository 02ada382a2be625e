import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import path from "node:path";
import webpush from "web-push";
import { refusedAddress, systemResolver, type Resolver } from "./checked-lookup.js";

/**
 * Web Push (RFC 8030, 8291, 8292) pieces the API and the notifier share:
 * the VAPID key pair, and the checks of a browser's subscription.
 */

/** At most this many push subscriptions per actor (contract part 3): a few phones and browsers. */
export const MAX_PUSH_SUBSCRIPTIONS_PER_ACTOR = 10;

export interface VapidKeys {
  publicKey: string;
  privateKey: string;
}

/** Where development keeps its pair: `.data/` is gitignored. */
export const DEVELOPMENT_VAPID_KEY_FILE = path.join(".data", "vapid-keys.json");

/**
 * The VAPID key pair of a development stack: read from `.data/vapid-keys.json`,
 * or made once with web-push's generateVAPIDKeys and written there, so the
 * API (which serves the public key) and the notifier (which signs) agree and
 * browsers' subscriptions survive restarts. Two processes starting at once
 * both try an exclusive create; the loser reads the winner's file.
 * Outside development the keys are settings (lib/config.ts), never this.
 */
export function developmentVapidKeys(file = DEVELOPMENT_VAPID_KEY_FILE): VapidKeys {
  let keys = developmentPairs.get(file);
  if (!keys) developmentPairs.set(file, (keys = loadOrMakePair(file)));
  return keys;
}

const developmentPairs = new Map<string, VapidKeys>();

function loadOrMakePair(file: string): VapidKeys {
  const read = (): VapidKeys | null => {
    try {
      const parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<VapidKeys>;
      return typeof parsed.publicKey === "string" && typeof parsed.privateKey === "string"
        ? { publicKey: parsed.publicKey, privateKey: parsed.privateKey }
        : null;
    } catch {
      return null;
    }
  };
  const existing = read();
  if (existing) return existing;
  const made = webpush.generateVAPIDKeys();
  mkdirSync(path.dirname(file), { recursive: true });
  try {
    writeFileSync(file, JSON.stringify(made, null, 2) + "\n", { flag: "wx", mode: 0o600 });
    return made;
  } catch {
    return read() ?? made;
  }
}

/** The configured public key, or development's (made on first use). */
export function vapidPublicKey(configured: string | undefined): string {
  return configured ?? developmentVapidKeys().publicKey;
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;

function base64urlBytes(value: string): Buffer | null {
  // Browsers give unpadded base64url; padding is tolerated and dropped.
  const bare = value.replace(/=+$/, "");
  return BASE64URL.test(bare) ? Buffer.from(bare, "base64url") : null;
}

/** Why a subscription's keys are refused, or null: p256dh a 65-byte uncompressed P-256 point, auth 16 bytes (RFC 8291). */
export function keysProblem(keys: { p256dh: string; auth: string }): { path: string; message: string } | null {
  const point = base64urlBytes(keys.p256dh);
  if (!point || point.length !== 65 || point[0] !== 0x04) {
    return { path: "body.keys.p256dh", message: "must be a 65-byte uncompressed P-256 public key in base64url" };
  }
  const auth = base64urlBytes(keys.auth);
  if (!auth || auth.length !== 16) return { path: "body.keys.auth", message: "must be 16 bytes in base64url" };
  return null;
}

export interface EndpointCheck {
  /** PUSH_ENDPOINT_ALLOW: hosts taken over http and on any address (tests). */
  allowHosts: readonly string[];
  /** Outside development, a host name is resolved and each of its addresses checked as a partner photo URL's is. */
  resolveNames: boolean;
  resolve?: Resolver;
}

/**
 * Why an endpoint is refused, or null. The notifier POSTs to it, so it is
 * checked as lib/safe-fetch.ts checks a partner's photo URL: https only, no
 * credentials, and no loopback, private, link-local or metadata address
 * (an IP literal always; a name's addresses outside development). An
 * allow-listed host (PUSH_ENDPOINT_ALLOW) may be http and anywhere. A name's
 * refusal never says which address it resolved to (lib/checked-lookup.ts);
 * the notifier checks the address again on every connection it opens.
 */
export async function endpointProblem(endpoint: string, check: EndpointCheck): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return "must be an absolute URL";
  }
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (check.allowHosts.includes(host)) return url.protocol === "https:" || url.protocol === "http:" ? null : "must be an https URL";
  if (url.protocol !== "https:") return "must be an https URL";
  if (url.username || url.password) return "must not carry credentials";
  if (isIP(host)) {
    const why = refusedAddress(host);
    return why ? `refused address: ${why}` : null;
  }
  if (host === "localhost" || host.endsWith(".localhost")) return "refused address: a loopback host";
  if (!check.resolveNames) return null;
  let addresses: { address: string }[];
  try {
    addresses = await (check.resolve ?? systemResolver)(host);
  } catch {
    return "its host does not resolve";
  }
  if (addresses.some(({ address }) => refusedAddress(address) !== null)) {
    return "refused address: its host resolves to a private, loopback, link-local or reserved address";
  }
  return addresses.length === 0 ? "its host does not resolve" : null;
}
