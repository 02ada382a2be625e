import { describe, expect, it } from "vitest";
import { ConfigError, loadApiConfig } from "../../lib/config.js";

/**
 * API_TRUSTED_PROXY_CIDRS names the proxies whose X-Forwarded-For is believed.
 * A list that holds every address of a family would let any client write its
 * own address there and slip every per-address limit: it is refused at start,
 * naming the setting, however it is spelled.
 */
const development = { DATABASE_URL: "postgres://x/y", NATS_URL: "nats://127.0.0.1:4222", API_ENV: "development" };
const load = (cidrs: string) => loadApiConfig({ ...development, API_TRUSTED_PROXY_CIDRS: cidrs });

function refusal(cidrs: string): ConfigError {
  try {
    load(cidrs);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error(`${cidrs} was accepted`);
}

describe("API_TRUSTED_PROXY_CIDRS refuses a list that trusts every client", () => {
  it.each([
    ["0.0.0.0/0", "IPv4"],
    ["::/0", "IPv6"],
    ["0::0/0", "IPv6"],
    ["0:0:0:0:0:0:0:0/0", "IPv6"],
    ["192.168.1.1/0", "IPv4"],
    ["2001:db8::/0", "IPv6"],
    // The IPv4-mapped block is every IPv4 client, as the proxy check compares them.
    ["::ffff:0:0/96", "IPv4"],
    ["::ffff:0.0.0.0/96", "IPv4"],
    // Halves that add up to everything, beside a real proxy.
    ["10.0.0.1, 0.0.0.0/1, 128.0.0.0/1", "IPv4"],
    ["::/1,8000::/1", "IPv6"],
  ])("%s: ConfigError naming the setting (every %s client)", (cidrs, family) => {
    const err = refusal(cidrs);
    expect(err.setting).toBe("API_TRUSTED_PROXY_CIDRS");
    expect(err.message).toBe(`API_TRUSTED_PROXY_CIDRS: trusts every ${family} client: list only your proxies' addresses`);
  });

  it("takes proxies' addresses and networks, wide ones included", () => {
    expect(load("172.30.20.10/32").API_TRUSTED_PROXY_CIDRS).toEqual(["172.30.20.10/32"]);
    expect(load("10.0.0.0/8, fc00::/7, ::1, 127.0.0.1").API_TRUSTED_PROXY_CIDRS).toEqual(["10.0.0.0/8", "fc00::/7", "::1", "127.0.0.1"]);
    expect(load("0.0.0.0/1").API_TRUSTED_PROXY_CIDRS).toEqual(["0.0.0.0/1"]);
    expect(load("::ffff:0:0/95").API_TRUSTED_PROXY_CIDRS).toEqual(["::ffff:0:0/95"]);
    expect(load("").API_TRUSTED_PROXY_CIDRS).toEqual([]);
  });

  it("still names a malformed entry before anything else", () => {
    expect(refusal("0.0.0.0/0, nonsense").message).toBe('API_TRUSTED_PROXY_CIDRS: "nonsense" is not an IP address or CIDR');
  });
});
