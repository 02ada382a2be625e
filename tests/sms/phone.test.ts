import { describe, expect, it } from "vitest";
import { NO_PHONE, reasonCategory, type NotificationKind } from "../../lib/notifications.js";
import { PHONE_CODE_TRIES } from "../../lib/sms/codes.js";
import { channelsFor, emailPreferences } from "../../lib/notification-rows.js";
import { as } from "../helpers/app.js";
import { eventually } from "../helpers/stream.js";
import { newPhone, notify, settled, SMS, textTo, useSms, verifyPhone } from "./support.js";

/**
 * Phone numbers (contract part 4, "SMS"): PUT /v1/me/phone reads the number
 * with libphonenumber and texts a 6-digit code through the provider (a real
 * HTTP peer, tests/helpers/sms-provider.ts); the code is stored hashed, lives
 * 10 minutes and allows 5 tries; 3 codes an hour; nothing but the code goes to
 * a number until it is verified.
 */

const s = useSms();
const api = () => s.h.api.app;
const pool = () => s.h.api.pool;

const putPhone = (actor: string, phone: string | null) => api().inject({ method: "PUT", url: "/v1/me/phone", headers: as(actor), payload: { phone } });
const verify = (actor: string, code: string) => api().inject({ method: "POST", url: "/v1/me/phone/verify", headers: as(actor), payload: { code } });
const preferences = async (actor: string) => (await api().inject({ method: "GET", url: "/v1/me/notification-preferences", headers: as(actor) })).json();
const codeOf = (body: string) => /code: (\d{6})/.exec(body)![1]!;
const count = async (sql: string, values: unknown[] = []) => (await pool().query<{ n: number }>(`select count(*)::int as n from (${sql}) t`, values)).rows[0]!.n;

const smsNotification = (actor: string, kind: NotificationKind = "match") => notify(pool(), actor, { kind, channels: ["sms"] });

describe("PUT /v1/me/phone", () => {
  it("reads a national number in SMS_DEFAULT_REGION's region, texts a code, and answers with the status and last two digits only", async () => {
    const res = await putPhone("phone-national", "0176 1210 0901");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ phoneStatus: "pending", phoneEnding: "01" });
    expect(res.body).not.toContain("12100901");

    const text = await textTo(s.provider, "+4917612100901");
    expect(text.from).toBe(SMS.from);
    expect(text.body).toMatch(/^Animal Safety code: \d{6}\. It works for 10 minutes\./);
    expect(text.body.endsWith(`${SMS.publicBaseUrl}/`)).toBe(true);
    expect(text.statusCallback).toBe(`${SMS.publicBaseUrl}/v1/sms/status`);

    // Stored hashed only: the code is in no row, no job and no event.
    const code = codeOf(text.body);
    const { rows } = await pool().query(`select code_hash, expires_at from phone_verification where actor_id = 'phone-national'`);
    expect(rows[0].code_hash).toBeInstanceOf(Buffer);
    expect(rows[0].code_hash.toString("hex")).not.toContain(code);
    expect(rows[0].expires_at.getTime() - Date.now()).toBeGreaterThan(9 * 60_000);
    for (const sql of [
      `select body || data::text as t from notification`,
      `select payload::text as t from outbox_event`,
      `select payload::text as t from graphile_worker._private_jobs`,
    ]) {
      expect((await pool().query<{ t: string }>(sql)).rows.some((r) => r.t.includes(code)), sql).toBe(false);
    }
    expect(await preferences("phone-national")).toMatchObject({ phoneStatus: "pending", phoneEnding: "01" });
  });

  it("takes the international forms libphonenumber reads", async () => {
    const forms = ["+49 176 1210 0902", "+49 (0)176-1210-0903", "0049 176 12100904", "+33 6 12 34 56 78", "٠١٧٦ ١٢١٠ ٠٩٠٥", "tel:+4917612100906"];
    for (const [i, form] of forms.entries()) {
      const res = await putPhone(`phone-form-${i}`, form);
      expect(res.statusCode, `${form}: ${res.body}`).toBe(200);
    }
    await textTo(s.provider, "+33612345678");
    await textTo(s.provider, "+4917612100905");
  });

  it("refuses what is no phone number with 400 problem+json, and writes nothing", async () => {
    const notificationsBefore = await count(`select 1 from notification`);
    for (const phone of ["12345", "not a number", "+49 176", "0800 000"]) {
      const res = await putPhone("phone-bad", phone);
      expect(res.statusCode, phone).toBe(400);
      expect(res.headers["content-type"]).toMatch(/application\/problem\+json/);
      expect(res.json()).toMatchObject({ status: 400, errors: [{ path: "body.phone" }] });
    }
    const extra = await putPhone("phone-bad", { nested: true } as unknown as string);
    expect(extra.statusCode).toBe(400);
    expect(await count(`select 1 from phone_verification where actor_id = 'phone-bad'`)).toBe(0);
    expect(await count(`select 1 from notification`)).toBe(notificationsBefore);
  });

  it("verifies with the right code; a wrong one is 400 and counts a try; after 5 wrong tries even the right one is 409", async () => {
    const phone = newPhone();
    expect((await putPhone("phone-tries", phone)).statusCode).toBe(200);
    const code = codeOf((await textTo(s.provider, phone)).body);
    const wrong = code === "000000" ? "111111" : "000000";

    const first = await verify("phone-tries", wrong);
    expect(first.statusCode).toBe(400);
    expect(first.json()).toMatchObject({ triesLeft: PHONE_CODE_TRIES - 1, errors: [{ path: "body.code" }] });
    for (let i = 2; i <= PHONE_CODE_TRIES; i++) expect((await verify("phone-tries", wrong)).json().triesLeft).toBe(PHONE_CODE_TRIES - i);
    const late = await verify("phone-tries", code);
    expect(late.statusCode).toBe(409);
    expect(await preferences("phone-tries")).toMatchObject({ phoneStatus: "pending" });

    // A new code starts over.
    const again = newPhone();
    await putPhone("phone-tries", again);
    const fresh = codeOf((await textTo(s.provider, again)).body);
    const ok = await verify("phone-tries", fresh);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toEqual({ phoneStatus: "verified", phoneEnding: again.slice(-2) });
    expect(await preferences("phone-tries")).toMatchObject({ phoneStatus: "verified", phoneEnding: again.slice(-2), smsKinds: null });
    // Used up: the same code again has nothing to verify.
    expect((await verify("phone-tries", fresh)).statusCode).toBe(409);
  });

  it("refuses a code past its 10 minutes, and one whose text has not gone out", async () => {
    const phone = newPhone();
    await putPhone("phone-expired", phone);
    const code = codeOf((await textTo(s.provider, phone)).body);
    await pool().query(`update phone_verification set expires_at = now() - interval '1 second' where actor_id = 'phone-expired'`);
    expect((await verify("phone-expired", code)).statusCode).toBe(409);
    expect((await verify("phone-nothing", "123456")).statusCode).toBe(409);
    expect((await verify("phone-nothing", "12345")).statusCode).toBe(400);
  });

  it("sends at most 3 codes an hour per actor: the 4th PUT is 429 with Retry-After and changes nothing", async () => {
    const phones = [newPhone(), newPhone(), newPhone(), newPhone()];
    for (const phone of phones.slice(0, 3)) expect((await putPhone("phone-hourly", phone)).statusCode).toBe(200);
    const waiting = (await pool().query(`select id, phone from phone_verification where actor_id = 'phone-hourly'`)).rows[0];
    const refused = await putPhone("phone-hourly", phones[3]!);
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    expect((await pool().query(`select id, phone from phone_verification where actor_id = 'phone-hourly'`)).rows[0]).toEqual(waiting);
    expect(await count(`select 1 from notification where recipient_actor_id = 'phone-hourly'`)).toBe(3);
  });

  it("sends no code for the verified number chosen again, and null removes the number", async () => {
    const phone = newPhone();
    await verifyPhone(s, "phone-same", phone);
    const texts = s.provider.textsTo(phone).length;
    expect((await putPhone("phone-same", phone)).json()).toEqual({ phoneStatus: "verified", phoneEnding: phone.slice(-2) });
    expect((await putPhone("phone-same", null)).json()).toEqual({ phoneStatus: "none", phoneEnding: null });
    expect(s.provider.textsTo(phone)).toHaveLength(texts);
  });
});

describe("nothing but the code goes to a number until it is verified", () => {
  it("gives a pending number no sms row, and dead-letters one written anyway without a request to the provider", async () => {
    const verified = newPhone();
    await verifyPhone(s, "phone-pending", verified);
    const pending = newPhone();
    await putPhone("phone-pending", pending);
    await textTo(s.provider, pending, /code/);

    // Choosing another number stops texts to the one verified before, as for email.
    const prefs = await emailPreferences(pool(), ["phone-pending"]);
    expect(channelsFor("match", prefs.get("phone-pending"))).toEqual(["in_app"]);

    const attempts = s.provider.attempts.length;
    const id = await smsNotification("phone-pending");
    const row = await settled(pool(), id);
    expect(row).toMatchObject({ status: "dead_letter", attempts: 1, last_error: NO_PHONE });
    expect(reasonCategory(row.last_error)).toBe("permanent");
    expect(s.provider.attempts.length).toBe(attempts);
    expect(s.provider.textsTo(pending).filter((t) => !/code/.test(t.body))).toEqual([]);
  });

  it("texts a verified number the kinds of smsKinds: match, relay_message and tag_scanned unless chosen", async () => {
    const phone = newPhone();
    await verifyPhone(s, "phone-kinds", phone);
    const prefs = await emailPreferences(pool(), ["phone-kinds"]);
    const texted = (kind: NotificationKind, p = prefs) => channelsFor(kind, p.get("phone-kinds")).includes("sms");
    expect(["match", "relay_message", "tag_scanned"].every((k) => texted(k as NotificationKind))).toBe(true);
    expect(texted("nearby_lost")).toBe(false);
    expect(texted("sighting")).toBe(false);

    const put = await api().inject({
      method: "PUT",
      url: "/v1/me/notification-preferences",
      headers: as("phone-kinds"),
      payload: { smsKinds: ["nearby_lost"] },
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toMatchObject({ smsKinds: ["nearby_lost"], phoneStatus: "verified" });
    const after = await emailPreferences(pool(), ["phone-kinds"]);
    expect(texted("nearby_lost", after)).toBe(true);
    expect(texted("match", after)).toBe(false);
    // The service's own kinds are not a choice.
    const bad = await api().inject({
      method: "PUT",
      url: "/v1/me/notification-preferences",
      headers: as("phone-kinds"),
      payload: { smsKinds: ["phone_verification"] },
    });
    expect(bad.statusCode).toBe(400);

    const id = await smsNotification("phone-kinds", "nearby_lost");
    expect(await settled(pool(), id)).toMatchObject({ status: "sent" });
    const text = await eventually(async () => s.provider.textsTo(phone).find((t) => /found animal/.test(t.body)));
    expect(text.body).toMatch(/^Animal Safety: A found animal may be yours\. /);
    expect(text.body).toMatch(new RegExp(`${SMS.publicBaseUrl}/lost/[0-9a-f-]{36}$`));
  });
});
