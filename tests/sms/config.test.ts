import { describe, expect, it } from "vitest";
import { loadApiConfig, loadNotifierConfig } from "../../lib/config.js";
import { buildDeliverers } from "../../jobs/delivery/deliverers/index.js";

const notifierProduction = {
  API_ENV: "production",
  DATABASE_URL: "postgres://x/y",
  NATS_URL: "nats://127.0.0.1:4222",
  ALERT_UNSUBSCRIBE_SECRET: "a-secret-of-at-least-thirty-two-characters",
  OBJECT_STORAGE_ENDPOINT: "e",
  OBJECT_STORAGE_BUCKET: "b",
  OBJECT_STORAGE_ACCESS_KEY_ID: "k",
  OBJECT_STORAGE_SECRET_ACCESS_KEY: "s",
  VAPID_PUBLIC_KEY: "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg",
  VAPID_PRIVATE_KEY: "vOL8GdN3rkoVXeIdJK-ZzSYFACe7-mn6uU66MPNm3vo",
  VAPID_SUBJECT: "mailto:ops@example.org",
};
const SMS_ON = { SMS_ACCOUNT_SID: "AC0123456789abcdef", SMS_AUTH_TOKEN: "a-provider-token", SMS_FROM: "+4915112340000" };

describe("the SMS settings", () => {
  it("are optional: unset, the notifier has no sms channel", () => {
    const config = loadNotifierConfig(notifierProduction);
    expect(config.SMS_ACCOUNT_SID).toBeUndefined();
    expect(config).toMatchObject({ SMS_API_BASE_URL: "https://api.twilio.com", SMS_DAILY_LIMIT_PER_RECIPIENT: 10, SMS_DAILY_SEGMENTS: 1000 });
    expect(Object.keys(buildDeliverers(config, {} as never))).not.toContain("sms");
  });

  it("go all together or not at all, in every environment", () => {
    for (const env of ["production", "development"]) {
      for (const left of Object.keys(SMS_ON) as (keyof typeof SMS_ON)[]) {
        const { [left]: _gone, ...some } = SMS_ON;
        expect(() => loadNotifierConfig({ ...notifierProduction, API_ENV: env, PUBLIC_BASE_URL: "https://pets.example", ...some })).toThrow(
          expect.objectContaining({ setting: left, message: expect.stringMatching(/is required when .* set/) }),
        );
      }
    }
  });

  it("need PUBLIC_BASE_URL outside development, where the provider's status callbacks must reach the API", () => {
    expect(() => loadNotifierConfig({ ...notifierProduction, ...SMS_ON })).toThrow(expect.objectContaining({ setting: "PUBLIC_BASE_URL" }));
    const config = loadNotifierConfig({ ...notifierProduction, ...SMS_ON, PUBLIC_BASE_URL: "https://pets.example" });
    expect(Object.keys(buildDeliverers(config, {} as never))).toContain("sms");
    expect(() => loadNotifierConfig({ ...notifierProduction, ...SMS_ON, API_ENV: "development" })).not.toThrow();
  });

  it("refuse a number that is not E.164 and a region libphonenumber does not know", () => {
    const on = { ...notifierProduction, ...SMS_ON, PUBLIC_BASE_URL: "https://pets.example" };
    expect(() => loadNotifierConfig({ ...on, SMS_FROM: "015112340000" })).toThrow(/SMS_FROM: must be a number in E\.164 form/);
    expect(() => loadNotifierConfig({ ...on, SMS_DEFAULT_REGION: "XX" })).toThrow(/SMS_DEFAULT_REGION: must be an ISO 3166/);
    expect(loadNotifierConfig({ ...on, SMS_DEFAULT_REGION: "de" }).SMS_DEFAULT_REGION).toBe("DE");
    expect(() =>
      loadApiConfig({
        ...notifierProduction,
        AUTH_JWKS_URL: "https://idp.example/jwks",
        AUTH_ISSUER: "i",
        AUTH_AUDIENCE: "a",
        API_CORS_ORIGINS: "https://app.example",
        PUBLIC_BASE_URL: "https://share.example",
        SMS_DEFAULT_REGION: "Germany",
      }),
    ).toThrow(/SMS_DEFAULT_REGION/);
  });
});
