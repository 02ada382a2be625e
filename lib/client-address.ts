import { isIPv4, isIPv6 } from "node:net";

/**
 * The key every per-client limit counts under: an IPv4 address as it is,
 * an IPv6 address by its /64 (`2001:db8:1:2::/64`). One subscriber, one
 * LAN, is routinely given a whole /64 and picks any address in it, so a
 * limit keyed on the full IPv6 address would give one client 2^64 buckets.
 * An IPv4-mapped address (`::ffff:192.0.2.1`, how a dual-stack socket shows
 * an IPv4 peer) is that IPv4 address, so one client has one key whichever
 * way it arrived. A zone id (`fe80::1%eth0`) names the server's interface,
 * not the client, and is dropped. Anything else (only a misconfigured proxy
 * sends X-Forwarded-For that is no address) is its own key, unchanged.
 */
export function clientAddressKey(ip: string): string {
  if (isIPv4(ip)) return ip;
  const address = ip.split("%", 1)[0]!;
  if (!isIPv6(address)) return ip;
  const groups = ipv6Groups(address);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255].join(".");
  }
  return `${formatIpv6([...groups.slice(0, 4), 0, 0, 0, 0])}/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (isIPv6), a trailing dotted IPv4 part included. */
export function ipv6Groups(address: string): number[] {
  const parse = (part: string): number[] =>
    part === ""
      ? []
      : part.split(":").flatMap((field) => {
          if (!field.includes(".")) return [parseInt(field, 16)];
          const [a, b, c, d] = field.split(".").map(Number) as [number, number, number, number];
          return [(a << 8) | b, (c << 8) | d];
        });
  const [head, tail] = address.split("::") as [string, string | undefined];
  if (tail === undefined) return parse(head);
  const [before, after] = [parse(head), parse(tail)];
  return [...before, ...Array<number>(8 - before.length - after.length).fill(0), ...after];
}

/** RFC 5952's text: lowercase hex, no leading zeros, the first longest run of two or more zero groups as `::`. */
function formatIpv6(groups: number[]): string {
  let best = { at: -1, length: 1 };
  for (let i = 0; i < groups.length; ) {
    let j = i;
    while (j < groups.length && groups[j] === 0) j++;
    if (j - i > best.length) best = { at: i, length: j - i };
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.at < 0) return hex.join(":");
  return `${hex.slice(0, best.at).join(":")}::${hex.slice(best.at + best.length).join(":")}`;
}
