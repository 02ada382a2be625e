import { describe, expect, it } from "vitest";
import { loadApiConfig, loadNotifierConfig, loadRelayConfig } from "../../lib/config.js";

const base = { DATABASE_URL: "postgres://x/y", NATS_URL: "nats://127.0.0.1:4222" };
const development = { ...base, API_ENV: "development", API_DEV_AUTH_BYPASS: "true" };
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
  ALERT_UNSUBSCRIBE_SECRET: "a-secret-of-at-least-thirty-two-characters",
  PUBLIC_BASE_URL: "https://share.example",
  VAPID_PUBLIC_KEY: "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg",
  VAPID_PRIVATE_KEY: "vOL8GdN3rkoVXeIdJK-ZzSYFACe7-mn6uU66MPNm3vo",
  VAPID_SUBJECT: "mailto:ops@example.org",
};

describe("listen addresses: loopback by default in development, every interface elsewhere", () => {
  it("binds the API and both health servers to 127.0.0.1 in development when no address is set", () => {
    expect(loadApiConfig(development).API_HTTP_ADDR).toEqual({ host: "127.0.0.1", port: 8080 });
    expect(loadRelayConfig(development).RELAY_HEALTH_ADDR).toEqual({ host: "127.0.0.1", port: 8081 });
    expect(loadNotifierConfig(development).NOTIFIER_HEALTH_ADDR).toEqual({ host: "127.0.0.1", port: 8085 });
  });

  it("keeps every interface as the default outside development", () => {
    expect(loadApiConfig(production).API_HTTP_ADDR).toEqual({ host: "0.0.0.0", port: 8080 });
    expect(loadRelayConfig(base).RELAY_HEALTH_ADDR).toEqual({ host: "0.0.0.0", port: 8081 });
    expect(loadNotifierConfig({ ...production, API_ENV: "test" }).NOTIFIER_HEALTH_ADDR).toEqual({ host: "0.0.0.0", port: 8085 });
  });

  it("puts the API's metrics listener on port 9464, on loopback in development and every interface elsewhere", () => {
    expect(loadApiConfig(development).API_METRICS_ADDR).toEqual({ host: "127.0.0.1", port: 9464 });
    expect(loadApiConfig(production).API_METRICS_ADDR).toEqual({ host: "0.0.0.0", port: 9464 });
    expect(loadApiConfig({ ...development, API_METRICS_ADDR: ":9500" }).API_METRICS_ADDR).toEqual({ host: "0.0.0.0", port: 9500 });
    expect(() => loadApiConfig({ ...development, API_METRICS_ADDR: "nonsense" })).toThrow(/^API_METRICS_ADDR: /);
  });

  it("takes an address that is set as written, in development too", () => {
    expect(loadApiConfig({ ...development, API_HTTP_ADDR: "0.0.0.0:9000" }).API_HTTP_ADDR).toEqual({ host: "0.0.0.0", port: 9000 });
    // `:port` is an explicit choice of every interface (compose.yml's containers rely on it).
    expect(loadRelayConfig({ ...development, RELAY_HEALTH_ADDR: ":9001" }).RELAY_HEALTH_ADDR).toEqual({ host: "0.0.0.0", port: 9001 });
    expect(loadNotifierConfig({ ...development, NOTIFIER_HEALTH_ADDR: "10.1.2.3:9002" }).NOTIFIER_HEALTH_ADDR).toEqual({
      host: "10.1.2.3",
      port: 9002,
    });
  });

  it("still refuses a malformed or blank address, naming the setting", () => {
    expect(() => loadApiConfig({ ...development, API_HTTP_ADDR: "" })).toThrow(/API_HTTP_ADDR: is empty/);
    expect(() => loadRelayConfig({ ...development, RELAY_HEALTH_ADDR: "nonsense" })).toThrow(/RELAY_HEALTH_ADDR/);
  });
});
