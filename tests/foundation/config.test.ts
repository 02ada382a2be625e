import { describe, expect, it } from "vitest";
import { ConfigError, loadApiConfig, loadNotifierConfig, loadRelayConfig } from "../../lib/config.js";

const base = { DATABASE_URL: "postgres://x/y", NATS_URL: "nats://127.0.0.1:4222" };

describe("configuration uses the spec's defaults", () => {
  it("defaults API_ENV to production and the three listen addresses to :8080, :8081 and :8085", () => {
    const api = loadApiConfig({ ...base, API_ENV: "development" });
    expect(api.API_HTTP_ADDR).toEqual({ host: "0.0.0.0", port: 8080 });
    expect(api.NATS_STREAM).toBe("EVENTS");
    expect(api.AUTH_ROLES_CLAIM).toBe("roles");
    expect(loadRelayConfig(base).RELAY_HEALTH_ADDR).toEqual({ host: "0.0.0.0", port: 8081 });
    expect(loadRelayConfig(base).API_ENV).toBe("production");
    expect(loadNotifierConfig(base).NOTIFIER_HEALTH_ADDR).toEqual({ host: "0.0.0.0", port: 8085 });
  });

  it("parses the comma-separated lists", () => {
    const api = loadApiConfig({ ...base, API_ENV: "development", API_TRUSTED_PROXY_CIDRS: "10.0.0.0/8, 127.0.0.1/32" });
    expect(api.API_TRUSTED_PROXY_CIDRS).toEqual(["10.0.0.0/8", "127.0.0.1/32"]);
  });
});

describe("configuration outside development requires every security-sensitive setting", () => {
  it("names the first missing setting", () => {
    expect(() => loadApiConfig({ ...base, API_ENV: "test" })).toThrow(ConfigError);
    expect(() => loadApiConfig({ ...base })).toThrow(expect.objectContaining({ setting: "AUTH_JWKS_URL" }));
  });

  it("rejects a malformed value and names it", () => {
    expect(() => loadRelayConfig({ ...base, RELAY_HEALTH_ADDR: "nonsense" })).toThrow(/RELAY_HEALTH_ADDR/);
  });

  it("treats an empty API_CORS_ORIGINS as missing", () => {
    const full = {
      ...base,
      API_ENV: "production",
      AUTH_JWKS_URL: "https://idp.example/jwks",
      AUTH_ISSUER: "i",
      AUTH_AUDIENCE: "a",
      API_CORS_ORIGINS: " , ",
      OBJECT_STORAGE_ENDPOINT: "e",
      OBJECT_STORAGE_BUCKET: "b",
      OBJECT_STORAGE_ACCESS_KEY_ID: "k",
      OBJECT_STORAGE_SECRET_ACCESS_KEY: "s",
    };
    expect(() => loadApiConfig(full)).toThrow(/API_CORS_ORIGINS/);
    expect(loadApiConfig({ ...full, API_CORS_ORIGINS: "https://app.example" }).API_CORS_ORIGINS).toEqual(["https://app.example"]);
  });
});
