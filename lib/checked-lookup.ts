import { lookup as dnsLookup } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";

/**
 * Connecting only to an address that was checked, for a URL someone else
 * gave us (a partner's photo URL, a browser's push endpoint): the check is the
 * connection's own DNS lookup, so the socket goes to exactly the addresses the
 * check saw, and there is no second lookup a rebinding DNS server could answer
 * differently. Resolved once per connection.
 *
 * Refused: loopback, private (RFC 1918, ULA), link-local, CGNAT, multicast,
 * unspecified, broadcast, documentation and benchmarking ranges, cloud
 * metadata (169.254.169.254, fd00:ec2::254), and IPv4-mapped or translated
 * IPv6 forms of any of them.
 *
 * A refusal of a name never says which address the name resolved to: that
 * would tell whoever chose the name what this server's DNS sees (an address
 * oracle). An IP literal's refusal may name it: it is what they wrote.
 */

/** Resolves a host name to its addresses (dns.lookup by default; tests give their own). */
export type Resolver = (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) =>
      err ? reject(err) : resolve(addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }))),
    ),
  );

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

/** Why a name is refused, without the address it resolved to. */
export const refusedNameText = (hostname: string) =>
  `refused address of ${hostname}: it resolves to a private, loopback, link-local or reserved address`;

/** A connection refused by its checked lookup; its message names no resolved address. */
export class AddressRefused extends Error {
  override name = "AddressRefused";
  readonly code = "EADDRREFUSED";
}

/**
 * A connection's own DNS lookup (the `lookup` of a request or an agent):
 * resolves, refuses when any address is refused, and hands the socket exactly
 * the checked addresses. A host `allowed` says yes to (a test's loopback peer)
 * may resolve to any address.
 */
export function checkedLookup(resolve: Resolver, allowed: (hostname: string) => boolean = () => false): LookupFunction {
  return (hostname, options, callback) => {
    const all = typeof options === "object" && options !== null && (options as { all?: boolean }).all === true;
    const check = async () => {
      const addresses = await resolve(hostname);
      if (addresses.length === 0) throw Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" });
      if (!allowed(hostname.toLowerCase()) && addresses.some(({ address }) => refusedAddress(address) !== null)) {
        throw new AddressRefused(refusedNameText(hostname));
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
