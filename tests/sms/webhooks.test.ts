import { randomUUID } from "node:crypto";
import { getExpectedTwilioSignature } from "twilio/lib/webhooks/webhooks.js";
import { describe, expect, it } from "vitest";
import { SMS_STOPPED } from "../../lib/notifications.js";
import { as, buildTestApi, devEnv } from "../helpers/app.js";
import { eventually } from "../helpers/stream.js";
import { newPhone, notify, settled, SMS, textTo, useSms, verifyPhone } from "./support.js";

/**
 * The provider's webhooks (contract part 4, "SMS"): every request is signed
 * by the test provider with the twilio package's own getExpectedTwilioSignature
 * over PUBLIC_BASE_URL + path and the sorted parameters, and checked by the API
 * with twilio's validateRequest. Unsigned or badly signed is 403 and changes
 * nothing.
 */

const s = useSms();
const pool = () => s.h.api.pool;

/** Everything a webhook could change, to compare before and after a refused one. */
async function snapshot() {
  const tables = ["sms_number", "sms_send", "sms_inbound", "notification", "outbox_event"];
  const counts = await Promise.all(tables.map(async (t) => [t, (await pool().query(`select count(*)::int as n from ${t}`)).rows[0].n]));
  const sends = (await pool().query(`select sid, status, error_code from sms_send order by sid`)).rows;
  const numbers = (await pool().query(`select phone, stopped_at, wrote_at from sms_number order by phone`)).rows;
  return { counts: Object.fromEntries(counts), sends, numbers };
}

/** A text to a verified phone through the deliverer, so the provider has a sid to call back about. */
async function textOnce(actor: string, phone: string) {
  await verifyPhone(s, actor, phone);
  return textTo(s.provider, phone);
}

async function sendStatus(sid: string) {
  return (await pool().query(`select status, error_code as "errorCode", notification_id as "notificationId" from sms_send where sid = $1`, [sid])).rows[0];
}

describe("POST /v1/sms/status", () => {
  it("records the provider's delivery status of a text, never replacing a later status with an earlier one", async () => {
    const text = await textOnce("status-owner", newPhone());
    expect(await sendStatus(text.sid)).toMatchObject({ status: "queued" });
    expect((await sendStatus(text.sid)).notificationId).toMatch(/^[0-9a-f-]{36}$/);

    const sent = await s.provider.statusCallback(text, "sent");
    expect(sent.status, sent.body).toBe(200);
    expect(JSON.parse(sent.body)).toEqual({ messageSid: text.sid, status: "sent" });
    expect(await sendStatus(text.sid)).toMatchObject({ status: "sent" });
    expect((await s.provider.statusCallback(text, "delivered")).status).toBe(200);
    // Callbacks may arrive out of order.
    const late = await s.provider.statusCallback(text, "sent");
    expect(JSON.parse(late.body)).toEqual({ messageSid: text.sid, status: "delivered" });
    expect(await sendStatus(text.sid)).toMatchObject({ status: "delivered", errorCode: null });
  });

  it("records a failure's ErrorCode, and 21610 (opted out) stops the number", async () => {
    const phone = newPhone();
    const text = await textOnce("status-optout", phone);
    expect((await s.provider.statusCallback(text, "undelivered", 21610)).status).toBe(200);
    expect(await sendStatus(text.sid)).toMatchObject({ status: "undelivered", errorCode: 21610 });
    expect((await pool().query(`select stopped_at from sms_number where phone = $1`, [phone])).rows[0].stopped_at).toBeInstanceOf(Date);
    const prefs = await s.h.api.app.inject({ method: "GET", url: "/v1/me/notification-preferences", headers: as("status-optout") });
    expect(prefs.json()).toMatchObject({ phoneStatus: "stopped" });
  });

  it("refuses an unknown status with 400 problem+json, once the signature is good", async () => {
    const res = await s.provider.post("/v1/sms/status", { MessageSid: "SM0123", MessageStatus: "teleported" });
    expect(res.status).toBe(400);
    expect(res.contentType).toMatch(/application\/problem\+json/);
  });
});

describe("a webhook without a valid X-Twilio-Signature is 403 and changes nothing", () => {
  it("unsigned, signed with another token, over another URL, or with a parameter changed after signing", async () => {
    const text = await textOnce("forged", newPhone());
    const stop = { MessageSid: `SM${randomUUID().replaceAll("-", "")}`, From: text.to, To: SMS.from, Body: "STOP", AccountSid: SMS.accountSid };
    const status = { MessageSid: text.sid, MessageStatus: "failed", ErrorCode: "21610", To: text.to };
    const url = (path: string) => `${SMS.publicBaseUrl}${path}`;
    const before = await snapshot();
    const forgeries: Array<[string, Record<string, string>, boolean | string]> = [
      ["/v1/sms/inbound", stop, false],
      ["/v1/sms/status", status, false],
      ["/v1/sms/inbound", stop, getExpectedTwilioSignature("another-accounts-token", url("/v1/sms/inbound"), stop)],
      ["/v1/sms/status", status, getExpectedTwilioSignature(SMS.authToken, "https://elsewhere.example/v1/sms/status", status)],
      ["/v1/sms/inbound", stop, getExpectedTwilioSignature(SMS.authToken, url("/v1/sms/inbound"), { ...stop, Body: "HELP" })],
      ["/v1/sms/status", status, getExpectedTwilioSignature(SMS.authToken, url("/v1/sms/inbound"), status)],
      ["/v1/sms/status", status, "not base64 at all"],
      ["/v1/sms/status", { MessageSid: "?" }, false],
    ];
    for (const [path, params, sign] of forgeries) {
      const res = await s.provider.post(path, params, sign);
      expect(res.status, `${path} ${JSON.stringify(sign)}`).toBe(403);
      expect(res.contentType).toMatch(/application\/problem\+json/);
    }
    // Not a form at all: no parser refuses it first; the signature check does.
    for (const [contentType, payload] of [["application/json", JSON.stringify(stop)], ["text/plain", "STOP"], ["application/xml", "<stop/>"]]) {
      const res = await s.h.api.app.inject({ method: "POST", url: "/v1/sms/inbound", headers: { "content-type": contentType! }, payload });
      expect(res.statusCode, contentType).toBe(403);
    }
    expect((await s.h.api.app.inject({ method: "POST", url: "/v1/sms/status" })).statusCode).toBe(403);
    expect(await snapshot()).toEqual(before);
  });

  it("is 403 for every request when the API has no SMS_AUTH_TOKEN, and PUT /v1/me/phone is 409", async () => {
    const off = await buildTestApi(devEnv(s.h.db.url, s.h.bus.url, { PUBLIC_BASE_URL: SMS.publicBaseUrl }));
    try {
      const params = { MessageSid: "SM1", MessageStatus: "sent" };
      const signature = getExpectedTwilioSignature(SMS.authToken, `${SMS.publicBaseUrl}/v1/sms/status`, params);
      const res = await off.app.inject({
        method: "POST",
        url: "/v1/sms/status",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature },
        payload: new URLSearchParams(params).toString(),
      });
      expect(res.statusCode).toBe(403);
      const phone = await off.app.inject({ method: "PUT", url: "/v1/me/phone", headers: as("no-sms"), payload: { phone: "+4917612999999" } });
      expect(phone.statusCode).toBe(409);
    } finally {
      await off.close();
    }
  });
});

describe("POST /v1/sms/inbound: keywords", () => {
  it("answers TwiML (text/xml) and nothing else: every answer is a text of its own", async () => {
    const res = await s.provider.textFrom(newPhone(), "HELP");
    expect(res.status).toBe(200);
    expect(res.contentType).toMatch(/^text\/xml/);
    expect(res.body).toBe(`<?xml version="1.0" encoding="UTF-8"?><Response></Response>`);
  });

  it("HELP gets one reply naming the service and how to stop; a repeated MessageSid changes nothing", async () => {
    const phone = newPhone();
    const first = await s.provider.textFrom(phone, "  help ");
    const reply = await textTo(s.provider, phone, /Animal Safety/);
    expect(reply.body).toMatch(/^Animal Safety: texts about lost and found animals\. Reply STOP to stop/);
    expect(reply.from).toBe(SMS.from);
    const rows = (await pool().query(`select count(*)::int as n from notification`)).rows[0].n;
    expect((await s.provider.textFrom(phone, "help", first.messageSid)).status).toBe(200);
    expect((await pool().query(`select count(*)::int as n from notification`)).rows[0].n).toBe(rows);
    expect((await pool().query(`select count(*)::int as n from sms_inbound where message_sid = $1`, [first.messageSid])).rows[0].n).toBe(1);
  });

  it("STOP and its synonyms stop every text to the number, confirmed once; START resumes them", async () => {
    const phone = newPhone();
    await verifyPhone(s, "keyword-owner", phone);
    expect((await s.provider.textFrom(phone, " Stop\n")).status).toBe(200);
    const confirmation = await textTo(s.provider, phone, /no more texts/);
    expect(confirmation.body).toMatch(/Reply START/);
    // Already stopped: no second confirmation, and no HELP either.
    for (const word of ["STOPALL", "unsubscribe", "Cancel", "END", "quit", "help", "where is my dog?"]) await s.provider.textFrom(phone, word);
    const prefs = await s.h.api.app.inject({ method: "GET", url: "/v1/me/notification-preferences", headers: as("keyword-owner") });
    expect(prefs.json()).toMatchObject({ phoneStatus: "stopped" });

    // No text of any kind: a notification written for it dead-letters without a request.
    const attempts = s.provider.attempts.length;
    const id = await notify(pool(), "keyword-owner", { channels: ["sms"] });
    expect(await settled(pool(), id)).toMatchObject({ status: "dead_letter", attempts: 1, last_error: SMS_STOPPED });
    expect(s.provider.attempts.length).toBe(attempts);
    await eventually(async () => ((await pool().query(`select count(*)::int as n from notification where status = 'pending'`)).rows[0].n === 0 ? true : undefined));
    expect(s.provider.textsTo(phone).filter((t) => t.at >= confirmation.at)).toEqual([confirmation]);
    // PUT of a stopped number is refused until START.
    const other = await s.h.api.app.inject({ method: "PUT", url: "/v1/me/phone", headers: as("keyword-other"), payload: { phone } });
    expect(other.statusCode).toBe(409);

    await s.provider.textFrom(phone, "unstop");
    const resumed = await textTo(s.provider, phone, /texts are on again/);
    expect(resumed.body).toMatch(/Reply STOP/);
    const after = await s.h.api.app.inject({ method: "GET", url: "/v1/me/notification-preferences", headers: as("keyword-owner") });
    expect(after.json()).toMatchObject({ phoneStatus: "verified" });
  });

  it("a number the provider reports opted out (21610 on a send) counts as stopped", async () => {
    const phone = newPhone();
    s.provider.answer(phone, { status: 400, json: { code: 21610, message: "Attempt to send to unsubscribed recipient", status: 400 } });
    await s.provider.textFrom(phone, "HELP");
    const row = await eventually(async () => (await pool().query(`select stopped_at from sms_number where phone = $1 and stopped_at is not null`, [phone])).rows[0]);
    expect(row.stopped_at).toBeInstanceOf(Date);
    const dead = await eventually(
      async () =>
        (await pool().query(`select status, attempts, last_error from notification where kind = 'sms_reply' and status = 'dead_letter' and last_error like '%21610%'`)).rows[0],
    );
    expect(dead).toMatchObject({ status: "dead_letter", attempts: 1 });
    expect(dead.last_error).toMatch(new RegExp(`^${SMS_STOPPED}`));
  });
});
