import { describe, expect, it } from "vitest";
import { ConfigError, loadApiConfig, loadNotifierConfig } from "../../lib/config.js";
import { createObjectStorage } from "../../lib/storage/index.js";

// The alert unsubscribe secret is required outside development too (tests/alerts/config.test.ts); given so only the bucket is in question.
const base = {
  DATABASE_URL: "postgres://x/y",
  NATS_URL: "nats://127.0.0.1:4222",
  ALERT_UNSUBSCRIBE_SECRET: "a-secret-of-at-least-thirty-two-characters",
  // Web Push's keys are required outside development too (tests/push/config.test.ts).
  VAPID_PUBLIC_KEY: "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg",
  VAPID_PRIVATE_KEY: "vOL8GdN3rkoVXeIdJK-ZzSYFACe7-mn6uU66MPNm3vo",
  VAPID_SUBJECT: "mailto:ops@example.org",
};
const bucket = {
  OBJECT_STORAGE_ENDPOINT: "http://s3.internal:9000",
  OBJECT_STORAGE_BUCKET: "photos",
  OBJECT_STORAGE_ACCESS_KEY_ID: "k",
  OBJECT_STORAGE_SECRET_ACCESS_KEY: "s",
};
const apiProduction = { ...base, API_ENV: "production", AUTH_JWKS_URL: "https://idp.example/jwks", AUTH_ISSUER: "i", AUTH_AUDIENCE: "a", API_CORS_ORIGINS: "https://app.example", PUBLIC_BASE_URL: "https://share.example" };

describe("photo storage settings: the API and the notifier read the same ones", () => {
  it("the notifier, which processes and deletes photos, refuses to start outside development without the bucket, naming the setting", () => {
    for (const API_ENV of ["production", "test"]) {
      const load = () => loadNotifierConfig({ ...base, API_ENV });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(expect.objectContaining({ setting: "OBJECT_STORAGE_ENDPOINT" }));
      const { OBJECT_STORAGE_SECRET_ACCESS_KEY: _s, ...withoutSecret } = bucket;
      expect(() => loadNotifierConfig({ ...base, API_ENV, ...withoutSecret })).toThrow(expect.objectContaining({ setting: "OBJECT_STORAGE_SECRET_ACCESS_KEY" }));
    }
    expect(createObjectStorage(loadNotifierConfig({ ...base, ...bucket })).kind).toBe("s3");
  });

  it("in development, no bucket setting means the local PHOTO_STORAGE_DIR; some but not all is refused by both processes", () => {
    const dev = { ...base, API_ENV: "development" };
    expect(createObjectStorage(loadNotifierConfig({ ...dev, PHOTO_STORAGE_DIR: "/tmp/x" })).kind).toBe("local");
    expect(createObjectStorage(loadApiConfig(dev)).kind).toBe("local");
    expect(loadApiConfig({ ...dev, PHOTO_STORAGE_DIR: "/tmp/x" }).PHOTO_STORAGE_DIR).toBe("/tmp/x");
    const partial = { ...dev, OBJECT_STORAGE_ENDPOINT: bucket.OBJECT_STORAGE_ENDPOINT, OBJECT_STORAGE_BUCKET: "photos" };
    for (const load of [loadApiConfig, loadNotifierConfig]) {
      expect(() => load(partial)).toThrow(expect.objectContaining({ setting: "OBJECT_STORAGE_ACCESS_KEY_ID" }));
    }
  });

  it("the API still refuses production without them", () => {
    expect(() => loadApiConfig(apiProduction)).toThrow(expect.objectContaining({ setting: "OBJECT_STORAGE_ENDPOINT" }));
    expect(loadApiConfig({ ...apiProduction, ...bucket, OBJECT_STORAGE_REGION: "eu-west-1" }).OBJECT_STORAGE_REGION).toBe("eu-west-1");
  });

  it("bounds the notifier's photo concurrency", () => {
    expect(loadNotifierConfig({ ...base, ...bucket }).NOTIFIER_PHOTO_CONCURRENCY).toBe(2);
    expect(() => loadNotifierConfig({ ...base, ...bucket, NOTIFIER_PHOTO_CONCURRENCY: "0" })).toThrow(expect.objectContaining({ setting: "NOTIFIER_PHOTO_CONCURRENCY" }));
  });
});
