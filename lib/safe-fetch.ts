import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { AddressRefused, checkedLookup, refusedAddress, systemResolver, type Resolver } from "./checked-lookup.js";

export { refusedAddress, systemResolver, type Resolver } from "./checked-lookup.js";

/**
 * Fetching a URL someone else gave us (a partner's photo URL) without letting
 * it reach what only this server can reach: server-side request forgery.
 *
 * - `https` only, unless the URL's host is allow-listed (PARTNER_PHOTO_FETCH_ALLOW,
 *   which tests use for a loopback server); an allow-listed host may also
 *   resolve to any address.
 * - Every address the host resolves to is checked, after DNS resolution, and
 *   the connection goes to the address that was checked (lib/checked-lookup.ts,
 *   which lists the refused ranges); a refusal never names the address a name
 *   resolved to. An IP literal is checked the same way.
 * - At most 3 redirects, each checked like the first URL.
 * - At most 10 MiB (a larger Content-Length is refused before its body; a
 *   body that grows past it is cut off) and 10 s (PARTNER_PHOTO_FETCH_DEADLINE_MS)
 *   from the first connection to the last byte. A redirect's or an error's
 *   body is not read.
 */

export const SAFE_FETCH_MAX_BYTES = 10 * 1024 * 1024;
export const SAFE_FETCH_TIMEOUT_MS = 10_000;
export const SAFE_FETCH_MAX_REDIRECTS = 3;

/** Why a fetch was refused or failed: the message is what the partner reads. */
export class FetchRefused extends Error {
  override name = "FetchRefused";
  constructor(
    readonly reason: "scheme" | "address" | "redirects" | "too-large" | "timeout" | "status" | "network" | "url",
    message: string,
  ) {
    super(message);
  }
}

export interface SafeFetchOptions {
  /** Host names (lowercase, no port) fetched over http too and to any address: PARTNER_PHOTO_FETCH_ALLOW. */
  allowHosts?: readonly string[];
  maxBytes?: number;
  timeoutMs?: number;
  maxRedirects?: number;
  resolve?: Resolver;
  /** Extra trusted CA certificates (PEM), for a test server's certificate. */
  ca?: string | Buffer;
}

export interface FetchedBody {
  bytes: Buffer;
  contentType: string | null;
  /** The URL the body came from, after redirects. */
  url: string;
}

const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "").toLowerCase();

/** Checks a URL before it is requested: scheme, and an IP literal host's address. */
function checkUrl(url: URL, allow: ReadonlySet<string>): void {
  const host = hostOf(url);
  const allowed = allow.has(host);
  if (url.protocol !== "https:" && !(allowed && url.protocol === "http:")) {
    throw new FetchRefused("scheme", `refused ${url.protocol.replace(/:$/, "")} URL: only https is fetched`);
  }
  if (url.username || url.password) throw new FetchRefused("url", "refused a URL with credentials in it");
  if (!allowed && isIP(host)) {
    const why = refusedAddress(host);
    if (why) throw new FetchRefused("address", `refused address: ${why}`);
  }
}

interface Hop {
  status: number;
  location: string | null;
  contentType: string | null;
  bytes: Buffer | null;
}

/** One request, no redirect followed: a redirect's Location, or the body. */
function requestOnce(url: URL, options: Required<Pick<SafeFetchOptions, "maxBytes">> & SafeFetchOptions, allow: ReadonlySet<string>, signal: AbortSignal): Promise<Hop> {
  return new Promise<Hop>((resolve, reject) => {
    const allowed = allow.has(hostOf(url));
    const lookup = checkedLookup(options.resolve ?? systemResolver, () => allowed);
    const module = url.protocol === "https:" ? https : http;
    const request = module.request(url, {
      method: "GET",
      lookup,
      signal,
      // No pooled socket: each request connects to the address its own lookup checked.
      agent: false,
      headers: { accept: "image/*", "user-agent": "animal-safety-photo-fetch/1" },
      ...(url.protocol === "https:" && options.ca ? { ca: options.ca } : {}),
    });
    request.on("error", (err) => reject(err));
    request.on("response", (response) => {
      const status = response.statusCode ?? 0;
      const contentType = response.headers["content-type"] ?? null;
      // A redirect's or an error's body is never read: the connection is not reused (agent: false).
      if (status >= 300 && status < 400 && response.headers.location) {
        response.destroy();
        resolve({ status, location: response.headers.location, contentType, bytes: null });
        return;
      }
      if (status < 200 || status >= 300) {
        response.destroy();
        reject(new FetchRefused("status", `the server answered HTTP ${status}`));
        return;
      }
      const declared = Number(response.headers["content-length"]);
      if (Number.isFinite(declared) && declared > options.maxBytes) {
        response.destroy();
        reject(new FetchRefused("too-large", `the photo is larger than ${options.maxBytes} bytes (Content-Length ${declared})`));
        return;
      }
      const chunks: Buffer[] = [];
      let received = 0;
      response.on("data", (chunk: Buffer) => {
        received += chunk.length;
        if (received > options.maxBytes) {
          response.destroy();
          request.destroy();
          reject(new FetchRefused("too-large", `the photo is larger than ${options.maxBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      response.on("error", (err) => reject(err));
      response.on("close", () => {
        if (!response.complete) reject(new FetchRefused("network", "the connection closed before the photo was complete"));
      });
      response.on("end", () => resolve({ status, location: null, contentType, bytes: Buffer.concat(chunks) }));
    });
    request.end();
  });
}

/** Fetches `input` under the guard; throws FetchRefused with the reason a partner can read. */
export async function safeFetch(input: string, options: SafeFetchOptions = {}): Promise<FetchedBody> {
  const settings = { ...options, maxBytes: options.maxBytes ?? SAFE_FETCH_MAX_BYTES };
  const allow = new Set((options.allowHosts ?? []).map((h) => h.toLowerCase()));
  const timeoutMs = options.timeoutMs ?? SAFE_FETCH_TIMEOUT_MS;
  const maxRedirects = options.maxRedirects ?? SAFE_FETCH_MAX_REDIRECTS;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    clearTimeout(timer);
    throw new FetchRefused("url", "the URL is malformed");
  }
  try {
    for (let redirects = 0; ; redirects++) {
      checkUrl(url, allow);
      const hop = await requestOnce(url, settings, allow, controller.signal);
      if (hop.bytes) return { bytes: hop.bytes, contentType: hop.contentType, url: url.toString() };
      if (redirects >= maxRedirects) throw new FetchRefused("redirects", `more than ${maxRedirects} redirects`);
      try {
        url = new URL(hop.location!, url);
      } catch {
        throw new FetchRefused("url", "a redirect's Location is malformed");
      }
    }
  } catch (err) {
    // A stalled server's connection is closed by the timer: that is a timeout, whatever error the close raised.
    if (controller.signal.aborted && !(err instanceof FetchRefused && err.reason !== "network")) throw new FetchRefused("timeout", `the photo did not arrive within ${timeoutMs / 1000} s`);
    if (err instanceof FetchRefused) throw err;
    if (err instanceof AddressRefused) throw new FetchRefused("address", err.message);
    const code = (err as NodeJS.ErrnoException).code;
    throw new FetchRefused("network", `the photo could not be fetched${code ? ` (${code})` : ""}`);
  } finally {
    clearTimeout(timer);
  }
}
