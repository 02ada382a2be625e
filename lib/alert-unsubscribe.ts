import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * One-click unsubscribe tokens for nearby_lost emails (RFC 8058). A token
 * names the subscriptions an email was about (one, or the few a digest
 * covered) and carries an HMAC of them under ALERT_UNSUBSCRIBE_SECRET, so it
 * can delete those subscriptions and nothing else. No row stores it: the
 * notifier signs it when it sends, the API checks it when it is used.
 *
 * Layout, base64url: version (1 byte), count n (1 byte), n × 16-byte UUIDs,
 * then the first 16 bytes of HMAC-SHA256 over everything before it.
 */

const VERSION = 1;
const MAC_BYTES = 16;
const MAX_IDS = 10;
const CONTEXT = "alert-unsubscribe";

const uuidBytes = (id: string) => Buffer.from(id.replaceAll("-", ""), "hex");
const uuidText = (bytes: Buffer) => {
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};
const mac = (secret: string, body: Buffer) =>
  createHmac("sha256", secret).update(CONTEXT).update(body).digest().subarray(0, MAC_BYTES);

export function signUnsubscribeToken(secret: string, subscriptionIds: string[]): string {
  const ids = [...new Set(subscriptionIds.map((id) => id.toLowerCase()))];
  if (ids.length < 1 || ids.length > MAX_IDS) throw new Error(`an unsubscribe token names 1 to ${MAX_IDS} subscriptions`);
  const body = Buffer.concat([Buffer.from([VERSION, ids.length]), ...ids.map(uuidBytes)]);
  return Buffer.concat([body, mac(secret, body)]).toString("base64url");
}

/** The subscription ids a token names, or null when it is malformed or its signature does not match. */
export function verifyUnsubscribeToken(secret: string, token: string): string[] | null {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(token)) return null;
  const bytes = Buffer.from(token, "base64url");
  const count = bytes[1] ?? 0;
  if (bytes[0] !== VERSION || count < 1 || count > MAX_IDS || bytes.length !== 2 + 16 * count + MAC_BYTES) return null;
  const body = bytes.subarray(0, 2 + 16 * count);
  if (!timingSafeEqual(mac(secret, body), bytes.subarray(body.length))) return null;
  return Array.from({ length: count }, (_, i) => uuidText(body.subarray(2 + 16 * i, 18 + 16 * i)));
}

export const UNSUBSCRIBE_PATH = "/v1/alert-subscriptions/unsubscribe";

/** The List-Unsubscribe URL for these subscriptions. */
export function unsubscribeUrl(publicBaseUrl: string, secret: string, subscriptionIds: string[]): string {
  return `${publicBaseUrl.replace(/\/$/, "")}${UNSUBSCRIBE_PATH}?token=${signUnsubscribeToken(secret, subscriptionIds)}`;
}
