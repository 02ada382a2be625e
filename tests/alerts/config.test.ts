import { describe, expect, it } from "vitest";
import { signUnsubscribeToken, verifyUnsubscribeToken } from "../../lib/alert-unsubscribe.js";
import { ConfigError, DEVELOPMENT_UNSUBSCRIBE_SECRET, loadApiConfig, loadNotifierConfig } from "../../lib/config.js";

/** ALERT_UNSUBSCRIBE_SECRET: the API checks what the notifier signs; required outside development like the other secrets. */
// The notifier also needs the photo bucket outside development (tests/photos/config.test.ts); given here so only the secret is missing.
const base = {
  DATABASE_URL: "postgres://x/y",
  NATS_URL: "nats://127.0.0.1:4222",
  OBJECT_STORAGE_ENDPOINT: "http://s3.example",
  OBJECT_STORAGE_BUCKET: "b",
  OBJECT_STORAGE_ACCESS_KEY_ID: "k",
  OBJECT_STORAGE_SECRET_ACCESS_KEY: "s",
  VAPID_PUBLIC_KEY: "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg",
  VAPID_PRIVATE_KEY: "vOL8GdN3rkoVXeIdJK-ZzSYFACe7-mn6uU66MPNm3vo",
  VAPID_SUBJECT: "mailto:ops@example.org",
};
const productionApi = {
  ...base,
  AUTH_JWKS_URL: "https://idp.example/jwks",
  AUTH_ISSUER: "i",
  AUTH_AUDIENCE: "a",
  API_CORS_ORIGINS: "https://app.example",
  OBJECT_STORAGE_ENDPOINT: "e",
  OBJECT_STORAGE_BUCKET: "b",
  OBJECT_STORAGE_ACCESS_KEY_ID: "k",
  OBJECT_STORAGE_SECRET_ACCESS_KEY: "s",
};
const SECRET = "a-secret-of-at-least-thirty-two-characters";

describe("ALERT_UNSUBSCRIBE_SECRET", () => {
  it.each(["production", "test"])("is required by the API and the notifier when API_ENV=%s, and a blank one counts as missing", (env) => {
    for (const value of [undefined, "", "   "]) {
      const extra = { API_ENV: env, ...(value === undefined ? {} : { ALERT_UNSUBSCRIBE_SECRET: value }) };
      const message = `ALERT_UNSUBSCRIBE_SECRET: is required when API_ENV=${env}`;
      expect(() => loadApiConfig({ ...productionApi, ...extra })).toThrow(expect.objectContaining({ setting: "ALERT_UNSUBSCRIBE_SECRET", message }));
      expect(() => loadNotifierConfig({ ...base, ...extra })).toThrow(expect.objectContaining({ setting: "ALERT_UNSUBSCRIBE_SECRET", message }));
    }
  });

  it("is checked after the settings the API required before it, so their failures still name them", () => {
    expect(() => loadApiConfig({ ...productionApi, AUTH_JWKS_URL: undefined })).toThrow(expect.objectContaining({ setting: "AUTH_JWKS_URL" }));
  });

  it("refuses a short secret in any environment", () => {
    const load = () => loadNotifierConfig({ ...base, API_ENV: "development", ALERT_UNSUBSCRIBE_SECRET: "short" });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/ALERT_UNSUBSCRIBE_SECRET: must be at least 32 characters/);
  });

  it("is the fixed development value in development when unset, the same in both processes", () => {
    expect(loadApiConfig({ ...base, API_ENV: "development" }).ALERT_UNSUBSCRIBE_SECRET).toBe(DEVELOPMENT_UNSUBSCRIBE_SECRET);
    expect(loadNotifierConfig({ ...base, API_ENV: "development" }).ALERT_UNSUBSCRIBE_SECRET).toBe(DEVELOPMENT_UNSUBSCRIBE_SECRET);
    const notifier = loadNotifierConfig({ ...base, ALERT_UNSUBSCRIBE_SECRET: SECRET, API_PUBLIC_BASE_URL: "https://api.example" });
    expect(notifier).toMatchObject({ ALERT_UNSUBSCRIBE_SECRET: SECRET, API_PUBLIC_BASE_URL: "https://api.example" });
    expect(Object.isFrozen(loadApiConfig({ ...base, API_ENV: "development" }))).toBe(true);
  });
});

describe("unsubscribe tokens", () => {
  const ids = ["0b5e8d1e-4a52-4f3a-9a4c-1f1d2f3a4b5c", "7c9e6679-7425-40de-944b-e07fc1f90ae7"];

  it("round-trip the subscription ids they name, and only under their own secret", () => {
    const token = signUnsubscribeToken(SECRET, ids);
    expect(verifyUnsubscribeToken(SECRET, token)).toEqual(ids);
    expect(verifyUnsubscribeToken(`${SECRET}x`, token)).toBeNull();
    expect(verifyUnsubscribeToken(SECRET, signUnsubscribeToken(SECRET, [ids[0]!.toUpperCase()]))).toEqual([ids[0]]);
  });

  it("refuse every single-bit change", () => {
    const bytes = Buffer.from(signUnsubscribeToken(SECRET, [ids[0]!]), "base64url");
    for (let bit = 0; bit < bytes.length * 8; bit++) {
      const changed = Buffer.from(bytes);
      changed[bit >> 3] = changed[bit >> 3]! ^ (1 << (bit & 7));
      expect(verifyUnsubscribeToken(SECRET, changed.toString("base64url")), `bit ${bit}`).toBeNull();
    }
  });

  it("name 1 to 10 subscriptions", () => {
    expect(() => signUnsubscribeToken(SECRET, [])).toThrow();
    expect(() => signUnsubscribeToken(SECRET, Array.from({ length: 11 }, () => crypto.randomUUID()))).toThrow();
  });
});
