import { describe, expect, it } from "vitest";
import { ConfigError, loadApiConfig, loadDatabaseToolConfig, loadNotifierConfig, loadRelayConfig } from "../../lib/config.js";

const base = {
  DATABASE_URL: "postgres://x/y",
  NATS_URL: "nats://127.0.0.1:4222",
  ALERT_UNSUBSCRIBE_SECRET: "a-secret-of-at-least-thirty-two-characters",
  VAPID_PUBLIC_KEY: "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg",
  VAPID_PRIVATE_KEY: "vOL8GdN3rkoVXeIdJK-ZzSYFACe7-mn6uU66MPNm3vo",
  VAPID_SUBJECT: "mailto:ops@example.org",
};

describe("configuration uses the spec's defaults", () => {
  it("defaults each process's environment to production and the three listen addresses to :8080, :8081 and :8085", () => {
    const api = loadApiConfig({ ...base, API_ENV: "development" });
    expect(api.API_HTTP_ADDR).toEqual({ host: "127.0.0.1", port: 8080 });
    expect(api.NATS_STREAM).toBe("EVENTS");
    expect(api.AUTH_ROLES_CLAIM).toBe("roles");
    expect(loadRelayConfig(base).RELAY_HEALTH_ADDR).toEqual({ host: "0.0.0.0", port: 8081 });
    expect(loadApiConfig(production).API_ENV).toBe("production");
    expect(loadRelayConfig(base).RELAY_ENV).toBe("production");
    expect(loadNotifierConfig(production).NOTIFIER_ENV).toBe("production");
    // Outside development the notifier needs the photo bucket (tests/photos/config.test.ts).
    expect(loadNotifierConfig(production).NOTIFIER_HEALTH_ADDR).toEqual({ host: "0.0.0.0", port: 8085 });
  });

  it("parses the comma-separated lists", () => {
    const api = loadApiConfig({ ...base, API_ENV: "development", API_TRUSTED_PROXY_CIDRS: "10.0.0.0/8, 127.0.0.1/32" });
    expect(api.API_TRUSTED_PROXY_CIDRS).toEqual(["10.0.0.0/8", "127.0.0.1/32"]);
  });
});

const production = {
  ...base,
  API_ENV: "production",
  AUTH_JWKS_URL: "https://idp.example/jwks",
  AUTH_ISSUER: "i",
  AUTH_AUDIENCE: "a",
  API_CORS_ORIGINS: "https://app.example",
  OBJECT_STORAGE_ENDPOINT: "e",
  OBJECT_STORAGE_BUCKET: "b",
  OBJECT_STORAGE_ACCESS_KEY_ID: "k",
  OBJECT_STORAGE_SECRET_ACCESS_KEY: "s",
  PUBLIC_BASE_URL: "https://share.example",
};

describe("configuration outside development requires every security-sensitive setting", () => {
  it("names the first missing setting", () => {
    expect(() => loadApiConfig({ ...base, API_ENV: "test" })).toThrow(ConfigError);
    expect(() => loadApiConfig({ ...base })).toThrow(expect.objectContaining({ setting: "AUTH_JWKS_URL" }));
  });

  it("rejects a malformed value and names it", () => {
    expect(() => loadRelayConfig({ ...base, RELAY_HEALTH_ADDR: "nonsense" })).toThrow(/RELAY_HEALTH_ADDR/);
  });

  it("treats an empty API_CORS_ORIGINS as missing", () => {
    const full = { ...production, API_CORS_ORIGINS: " , " };
    expect(() => loadApiConfig(full)).toThrow(/API_CORS_ORIGINS/);
    expect(loadApiConfig({ ...full, API_CORS_ORIGINS: "https://app.example" }).API_CORS_ORIGINS).toEqual(["https://app.example"]);
  });

  it("accepts the complete production settings", () => {
    expect(loadApiConfig(production).OBJECT_STORAGE_SECRET_ACCESS_KEY).toBe("s");
  });

  it.each([
    "AUTH_JWKS_URL",
    "AUTH_ISSUER",
    "AUTH_AUDIENCE",
    "OBJECT_STORAGE_ENDPOINT",
    "OBJECT_STORAGE_BUCKET",
    "OBJECT_STORAGE_ACCESS_KEY_ID",
    "OBJECT_STORAGE_SECRET_ACCESS_KEY",
  ])("treats an empty or blank %s as missing and names it", (setting) => {
    for (const blank of ["", "   "]) {
      for (const apiEnv of ["production", "test"]) {
        const load = () => loadApiConfig({ ...production, API_ENV: apiEnv, [setting]: blank });
        expect(load).toThrow(ConfigError);
        expect(load).toThrow(expect.objectContaining({ setting, message: `${setting}: is required when API_ENV=${apiEnv}` }));
      }
    }
  });

  it("treats blank optional settings as unset in development instead of failing on them", () => {
    const dev = loadApiConfig({ ...base, API_ENV: "development", AUTH_JWKS_URL: "", OBJECT_STORAGE_SECRET_ACCESS_KEY: "" });
    expect(dev.AUTH_JWKS_URL).toBeUndefined();
    expect(dev.OBJECT_STORAGE_SECRET_ACCESS_KEY).toBeUndefined();
  });
});

describe("API_TRUSTED_PROXY_CIDRS accepts only IP addresses and CIDR blocks", () => {
  it("accepts IPv4 and IPv6 addresses and blocks with an in-range prefix", () => {
    // A /0 trusts every client and is refused: tests/foundation/trusted-proxy-cidrs.test.ts.
    const value = "10.0.0.0/8, 192.168.1.7, ::1, fe80::/10, 2001:db8::/128, 172.16.0.0/12";
    expect(loadApiConfig({ ...production, API_TRUSTED_PROXY_CIDRS: value }).API_TRUSTED_PROXY_CIDRS).toEqual([
      "10.0.0.0/8",
      "192.168.1.7",
      "::1",
      "fe80::/10",
      "2001:db8::/128",
      "172.16.0.0/12",
    ]);
  });

  it.each(["proxy.internal", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0/8", "10.0.0.1/8x", "/8", "256.1.1.1"])(
    "refuses %s and names the setting",
    (entry) => {
      const load = () => loadApiConfig({ ...production, API_TRUSTED_PROXY_CIDRS: `127.0.0.1/32,${entry}` });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(expect.objectContaining({ setting: "API_TRUSTED_PROXY_CIDRS" }));
      expect(load).toThrow(entry);
    },
  );
});

describe("the database tools (`api migrate`, operator tasks) parse their one setting through the schema", () => {
  it("requires a non-blank DATABASE_URL and names it", () => {
    expect(loadDatabaseToolConfig({ DATABASE_URL: "postgres://x/y" }).DATABASE_URL).toBe("postgres://x/y");
    expect(() => loadDatabaseToolConfig({})).toThrow(expect.objectContaining({ setting: "DATABASE_URL", message: "DATABASE_URL: is required" }));
    expect(() => loadDatabaseToolConfig({ DATABASE_URL: " " })).toThrow(expect.objectContaining({ setting: "DATABASE_URL" }));
  });
});

describe("each process has its own environment setting, and API_ENV stands in when it is unset", () => {
  it("RELAY_ENV wins over API_ENV, either way round", () => {
    const relay = loadRelayConfig({ ...base, API_ENV: "production", RELAY_ENV: "development" });
    expect(relay.RELAY_ENV).toBe("development");
    expect(relay.RELAY_HEALTH_ADDR).toEqual({ host: "127.0.0.1", port: 8081 });
    const { RELAY_ENV, RELAY_HEALTH_ADDR } = loadRelayConfig({ ...base, API_ENV: "development", RELAY_ENV: "production" });
    expect({ RELAY_ENV, RELAY_HEALTH_ADDR }).toEqual({ RELAY_ENV: "production", RELAY_HEALTH_ADDR: { host: "0.0.0.0", port: 8081 } });
  });

  it("NOTIFIER_ENV wins over API_ENV, and the rules go by it and name it", () => {
    const { ALERT_UNSUBSCRIBE_SECRET: _secret, ...withoutSecret } = base;
    const development = loadNotifierConfig({ ...withoutSecret, API_ENV: "production", NOTIFIER_ENV: "development" });
    expect(development.NOTIFIER_ENV).toBe("development");
    expect(development.NOTIFIER_HEALTH_ADDR).toEqual({ host: "127.0.0.1", port: 8085 });
    const load = () => loadNotifierConfig({ ...base, API_ENV: "development", NOTIFIER_ENV: "test" });
    expect(load).toThrow(
      expect.objectContaining({ setting: "OBJECT_STORAGE_ENDPOINT", message: "OBJECT_STORAGE_ENDPOINT: is required when NOTIFIER_ENV=test" }),
    );
  });

  it("API_ENV alone still configures all three, and the messages name it", () => {
    const relay = loadRelayConfig({ ...base, API_ENV: "development" });
    expect(relay.RELAY_ENV).toBe("development");
    expect(relay.RELAY_HEALTH_ADDR).toEqual({ host: "127.0.0.1", port: 8081 });
    expect(loadNotifierConfig({ ...base, API_ENV: "development" }).NOTIFIER_ENV).toBe("development");
    expect(loadNotifierConfig(production).NOTIFIER_ENV).toBe("production");
    const { OBJECT_STORAGE_ENDPOINT: _endpoint, ...withoutBucket } = production;
    expect(() => loadNotifierConfig({ ...withoutBucket, API_ENV: "test" })).toThrow(
      expect.objectContaining({ setting: "OBJECT_STORAGE_ENDPOINT", message: "OBJECT_STORAGE_ENDPOINT: is required when API_ENV=test" }),
    );
  });

  it("the API reads only API_ENV", () => {
    const load = () => loadApiConfig({ ...base, RELAY_ENV: "development", NOTIFIER_ENV: "development" });
    expect(load).toThrow(expect.objectContaining({ setting: "AUTH_JWKS_URL", message: "AUTH_JWKS_URL: is required when API_ENV=production" }));
  });

  it("names a bad API_ENV as such when a process takes its environment from it", () => {
    expect(() => loadRelayConfig({ ...base, API_ENV: "staging" })).toThrow(expect.objectContaining({ setting: "API_ENV" }));
    expect(() => loadNotifierConfig({ ...base, API_ENV: "staging" })).toThrow(expect.objectContaining({ setting: "API_ENV" }));
    expect(() => loadRelayConfig({ ...base, RELAY_ENV: "staging" })).toThrow(expect.objectContaining({ setting: "RELAY_ENV" }));
  });
});
