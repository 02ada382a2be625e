import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadApiConfig, loadNotifierConfig } from "../../lib/config.js";
import { developmentVapidKeys } from "../../lib/push.js";

const VAPID = {
  VAPID_PUBLIC_KEY: "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg",
  VAPID_PRIVATE_KEY: "vOL8GdN3rkoVXeIdJK-ZzSYFACe7-mn6uU66MPNm3vo",
  VAPID_SUBJECT: "mailto:ops@example.org",
};
const notifierProduction = {
  API_ENV: "production",
  DATABASE_URL: "postgres://x/y",
  NATS_URL: "nats://127.0.0.1:4222",
  ALERT_UNSUBSCRIBE_SECRET: "a-secret-of-at-least-thirty-two-characters",
  OBJECT_STORAGE_ENDPOINT: "e",
  OBJECT_STORAGE_BUCKET: "b",
  OBJECT_STORAGE_ACCESS_KEY_ID: "k",
  OBJECT_STORAGE_SECRET_ACCESS_KEY: "s",
  ...VAPID,
};
const apiProduction = {
  ...notifierProduction,
  AUTH_JWKS_URL: "https://idp.example/jwks",
  AUTH_ISSUER: "i",
  AUTH_AUDIENCE: "a",
  API_CORS_ORIGINS: "https://app.example",
  PUBLIC_BASE_URL: "https://share.example",
};

describe("the VAPID settings", () => {
  it.each(["production", "test"])("are required by the notifier when API_ENV=%s (and the public key by the API), a blank one counting as missing", (env) => {
    for (const setting of ["VAPID_PUBLIC_KEY", "VAPID_PRIVATE_KEY", "VAPID_SUBJECT"] as const) {
      for (const value of [undefined, " "]) {
        const { [setting]: _left, ...without } = notifierProduction;
        const notifierEnv = { ...without, API_ENV: env, ...(value === undefined ? {} : { [setting]: value }) };
        expect(() => loadNotifierConfig(notifierEnv)).toThrow(
          expect.objectContaining({ setting, message: `${setting}: is required when API_ENV=${env}` }),
        );
      }
    }
    const { VAPID_PUBLIC_KEY: _key, ...apiWithout } = apiProduction;
    expect(() => loadApiConfig({ ...apiWithout, API_ENV: env })).toThrow(expect.objectContaining({ setting: "VAPID_PUBLIC_KEY" }));
    expect(loadApiConfig({ ...apiProduction, API_ENV: env }).VAPID_PUBLIC_KEY).toBe(VAPID.VAPID_PUBLIC_KEY);
  });

  it("refuses keys of the wrong shape and a subject that is not mailto: or https:", () => {
    expect(() => loadNotifierConfig({ ...notifierProduction, VAPID_PUBLIC_KEY: "short" })).toThrow(/VAPID_PUBLIC_KEY: must be a 65-byte/);
    expect(() => loadNotifierConfig({ ...notifierProduction, VAPID_PRIVATE_KEY: "short" })).toThrow(/VAPID_PRIVATE_KEY: must be a 32-byte/);
    expect(() => loadNotifierConfig({ ...notifierProduction, VAPID_SUBJECT: "ops@example.org" })).toThrow(/VAPID_SUBJECT: must be a mailto/);
  });

  it("are optional in development, where a pair is made once and kept in a file only its owner reads", () => {
    const { VAPID_PUBLIC_KEY: _p, VAPID_PRIVATE_KEY: _k, VAPID_SUBJECT: _s, ...rest } = notifierProduction;
    expect(loadNotifierConfig({ ...rest, API_ENV: "development" }).VAPID_PUBLIC_KEY).toBeUndefined();

    const file = path.join(mkdtempSync(path.join(tmpdir(), "vapid-")), ".data", "vapid-keys.json");
    const made = developmentVapidKeys(file);
    expect(made.publicKey).toMatch(/^[A-Za-z0-9_-]{87}$/);
    expect(made.privateKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual(made);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(developmentVapidKeys(file)).toEqual(made);
  });
});
