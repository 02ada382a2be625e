import { lookup as dnsLookup } from "node:dns";
import http from "node:http";
import https from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";

/**
 * Fetching a URL someone else gave us (a partner's photo URL) without letting
 * it reach what only this server can reach: server-side request forgery.
 *
 * - `https` only, unless the URL's host is allow-listed (PARTNER_PHOTO_FETCH_ALLOW,
 *   which tests use for a loopback server); an allow-listed host may also
 *   resolve to any address.
 * - Every address the host resolves to is checked, after DNS resolution, and
 *   the connection goes to the address that was checked: the check is the
 *   request's own `lookup`, so there is no second lookup a rebinding DNS
 *   server could answer differently. An IP literal is checked the same way.
 * - Refused: loopback, private (RFC 1918, ULA), link-local, CGNAT, multicast,
 *   unspecified, broadcast, documentation and benchmarking ranges, cloud
 *   metadata (169.254.169.254, fd00:ec2::254), and IPv4-mapped or translated
 *   IPv6 forms of any of them.
 * - At most 3 redirects, each checked like the first URL.
 * - At most 10 MiB (a larger Content-Length is refused before its body; a
 *   body that grows past it is cut off) and 10 s from the first connection to
 *   the last byte.
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

/** Resolves a host name to its addresses (dns.lookup by default; tests give their own). */
export type Resolver = (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) =>
      err ? reject(err) : resolve(addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }))),
    ),
  );

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

const blocked = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // CGNAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata (169.254.169.254)
  ["172.16.0.0", 12],
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16],
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 128], // unspecified
  ["::1", 128],
  ["::", 96], // IPv4-compatible (deprecated)
  ["64:ff9b::", 96], // NAT64: translates to an IPv4 address of the gateway's choosing
  ["64:ff9b:1::", 48],
  ["100::", 64], // discard
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4: embeds an IPv4 address
  ["fc00::", 7], // unique local, cloud metadata (fd00:ec2::254)
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
] as const) {
  blocked.addSubnet(network, prefix, "ipv6");
}

/** The eight 16-bit groups of an IPv6 address (with `::` and a dotted IPv4 tail expanded). */
function ipv6Groups(address: string): number[] {
  let text = address.split("%", 1)[0]!.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, -dotted[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const parse = (part: string | undefined) => (part ? part.split(":").map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  const fill = tail === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...fill, ...right];
}

/** Why an address may not be fetched from, or null when it may. */
export function refusedAddress(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  if (family === 6) {
    const groups = ipv6Groups(address);
    // IPv4-mapped (::ffff:a.b.c.d): the IPv4 address is what the socket reaches.
    if (groups.length === 8 && groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
      const v4 = [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255].join(".");
      return blocked.check(v4, "ipv4") ? `${address} (${v4}) is in a private, loopback, link-local or reserved range` : null;
    }
    return blocked.check(address, "ipv6") ? `${address} is in a private, loopback, link-local, multicast or reserved range` : null;
  }
  return blocked.check(address, "ipv4") ? `${address} is in a private, loopback, link-local, multicast or reserved range` : null;
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

/**
 * The request's own DNS lookup: resolves, refuses when any address is
 * refused, and hands the socket exactly the checked addresses.
 */
function checkedLookup(resolve: Resolver, allowed: boolean): LookupFunction {
  return (hostname, options, callback) => {
    const all = typeof options === "object" && options !== null && (options as { all?: boolean }).all === true;
    const check = async () => {
      const addresses = await resolve(hostname);
      if (addresses.length === 0) throw new FetchRefused("network", `${hostname} has no address`);
      if (!allowed) {
        for (const { address } of addresses) {
          const why = refusedAddress(address);
          if (why) throw new FetchRefused("address", `refused address of ${hostname}: ${why}`);
        }
      }
      return addresses;
    };
    check().then(
      (addresses) => {
        if (all) (callback as (err: null, addresses: { address: string; family: number }[]) => void)(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: unknown) => callback(err instanceof Error ? (err as NodeJS.ErrnoException) : new Error(String(err)), "", 4),
    );
  };
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
    const lookup = checkedLookup(options.resolve ?? systemResolver, allowed);
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
      if (status >= 300 && status < 400 && response.headers.location) {
        response.resume();
        resolve({ status, location: response.headers.location, contentType, bytes: null });
        return;
      }
      if (status < 200 || status >= 300) {
        response.resume();
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
    const code = (err as NodeJS.ErrnoException).code;
    throw new FetchRefused("network", `the photo could not be fetched${code ? ` (${code})` : ""}`);
  } finally {
    clearTimeout(timer);
  }
}
