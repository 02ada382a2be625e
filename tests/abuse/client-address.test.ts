import { describe, expect, it } from "vitest";
import { clientAddressKey } from "../../lib/client-address.js";

describe("clientAddressKey keys IPv4 clients on their address and IPv6 clients on their /64", () => {
  it.each([
    ["192.0.2.1", "192.0.2.1"],
    ["10.0.0.255", "10.0.0.255"],
  ])("keeps an IPv4 address as it is: %s", (ip, key) => {
    expect(clientAddressKey(ip)).toBe(key);
  });

  it.each([
    ["::ffff:192.0.2.1", "192.0.2.1"],
    ["::FFFF:192.0.2.1", "192.0.2.1"],
    ["::ffff:c000:201", "192.0.2.1"],
    ["0:0:0:0:0:ffff:192.0.2.1", "192.0.2.1"],
    ["0000:0000:0000:0000:0000:ffff:7f00:0001", "127.0.0.1"],
  ])("reads an IPv4-mapped IPv6 address as its IPv4 address: %s", (ip, key) => {
    expect(clientAddressKey(ip)).toBe(key);
  });

  it.each([
    ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
    ["2001:DB8:0001:0002:0:0:0:ff", "2001:db8:1:2::/64"],
    ["2001:db8:1:2::", "2001:db8:1:2::/64"],
    ["2001:db8::1", "2001:db8::/64"],
    ["2001:db8:0:0:1::1", "2001:db8::/64"],
    ["2001:0:0:1::1", "2001:0:0:1::/64"],
    ["2001:db8:0:1::", "2001:db8:0:1::/64"],
    ["2001:db8:1:2::1.2.3.4", "2001:db8:1:2::/64"],
    ["::1", "::/64"],
    ["::", "::/64"],
    ["::ffff:0:192.0.2.1", "::/64"],
    ["fe80::1%eth0", "fe80::/64"],
    ["fe80::abcd:2%3", "fe80::/64"],
  ])("keys an IPv6 address on its /64 in RFC 5952 form: %s", (ip, key) => {
    expect(clientAddressKey(ip)).toBe(key);
  });

  it("gives every address of one /64 the same key, however it is written, and two /64s two keys", () => {
    const one = ["2001:db8:aa:bb::1", "2001:0db8:00aa:00bb:ffff:ffff:ffff:ffff", "2001:db8:aa:bb:1234::%wlan0"];
    expect(new Set(one.map(clientAddressKey))).toEqual(new Set(["2001:db8:aa:bb::/64"]));
    expect(clientAddressKey("2001:db8:aa:bc::1")).not.toBe(clientAddressKey("2001:db8:aa:bb::1"));
  });

  it("leaves what is no address as it is", () => {
    for (const value of ["unknown", "", "1.2.3.04", "[2001:db8::1]", "2001:db8::1::2"]) expect(clientAddressKey(value)).toBe(value);
  });
});
