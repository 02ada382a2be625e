import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { createMetricsRegistry } from "../../lib/metrics.js";
import { reasonCategory, SMS_BUDGET_EXHAUSTED, type Channel } from "../../lib/notifications.js";
import { smsSize } from "../../lib/sms/segments.js";
import { phoneRecipient } from "../../lib/sms/store.js";
import type { SupervisedWorker } from "../../lib/worker.js";
import { SMS_ANSWER_MAX_BYTES } from "../../jobs/delivery/deliverers/sms.js";
import { admin } from "../helpers/app.js";
import { eventually } from "../helpers/stream.js";
import { startDeliveryWorker } from "../notifier/support.js";
import { newPhone, notification, notify as notifySms, settled, SMS, smsDeliverers, useSms, verifyPhone, type SmsSettings } from "./support.js";

/**
 * The sms deliverer against the test provider, through the notifier's delivery
 * job: the request (basic auth, the form), retries, dead letters and replay as
 * for the other channels, 21610, the 2-segment text ending with its link, the
 * deadline and the 4 KB answer, and the daily budgets.
 */

const s = useSms({ worker: false });
const pool = () => s.h.api.pool;
let worker: SupervisedWorker | null = null;

/** The delivery worker with the sms deliverer of these settings (a fresh registry each, for the metric). */
async function startWorker(settings: SmsSettings = {}) {
  const registry = createMetricsRegistry("notifier");
  const deliverers = smsDeliverers(pool(), s.provider, registry, settings);
  worker = await startDeliveryWorker(pool(), deliverers);
  return registry;
}

afterEach(async () => {
  await worker?.stop();
  worker = null;
});

/** A match on in_app and sms (or `channels`), as the consumer writes it; returns the sms row's id. */
const notify = (actor: string, body?: string, channels?: Channel[]) => notifySms(pool(), actor, { body, channels });

/** An actor with a verified phone (verified through the API with this file's worker). */
async function owner(actor: string): Promise<string> {
  const phone = newPhone();
  await verifyPhone(s, actor, phone);
  return phone;
}

describe("a text through the provider's REST API", () => {
  it("is a form-encoded POST with basic auth: To, From, Body and StatusCallback; the 201's sid is recorded", async () => {
    await startWorker();
    const phone = await owner("send-basic");
    const id = await notify("send-basic");
    expect(await settled(pool(), id)).toMatchObject({ status: "sent", attempts: 1, last_error: null });
    const text = s.provider.textsTo(phone).at(-1)!;
    expect(text).toMatchObject({ from: SMS.from, statusCallback: `${SMS.publicBaseUrl}/v1/sms/status` });
    expect(text.body).toMatch(/^Animal Safety: A found animal may be yours\. A found report may be your animal: a brown dog/);
    const sendRow = (await pool().query(`select notification_id, kind, segments, status from sms_send where sid = $1`, [text.sid])).rows[0];
    expect(sendRow).toEqual({ notification_id: id, kind: "match", segments: smsSize(text.body).segments, status: "queued" });
  });

  it("is at most 2 segments and ends with the link to open", async () => {
    await startWorker();
    const phone = await owner("send-long");
    const long = "A brown dog with a red collar and a white patch on its chest was reported near the river. ".repeat(8);
    const ucs2 = "Собака найдена у реки, с красным ошейником. ".repeat(8);
    for (const body of [long, ucs2]) {
      expect(await settled(pool(), await notify("send-long", body))).toMatchObject({ status: "sent" });
      const text = s.provider.textsTo(phone).at(-1)!;
      expect(smsSize(text.body).segments).toBe(2);
      expect(text.body).toMatch(new RegExp(`(\\.\\.\\.|…) ${SMS.publicBaseUrl}/lost/[0-9a-f-]{36}$`));
    }
  });

  it("retries a 429 and a 5xx as any delivery, then sends", async () => {
    await startWorker();
    const phone = await owner("send-retry");
    s.provider.answer(phone, { status: 503 }, { status: 429, retryAfter: "0" });
    const id = await notify("send-retry");
    const row = await settled(pool(), id);
    expect(row).toMatchObject({ status: "sent", attempts: 3 });
    expect(s.provider.attempts.filter((a) => a.to === phone).slice(-3).map((a) => a.status)).toEqual([503, 429, 201]);
  });

  it("dead-letters after 3 attempts when the provider stays down, and an admin's replay sends it", async () => {
    await startWorker();
    const phone = await owner("send-replay");
    s.provider.answer(phone, { status: 500 }, { status: 502 }, { status: 503 });
    const id = await notify("send-replay");
    const dead = await settled(pool(), id);
    expect(dead).toMatchObject({ status: "dead_letter", attempts: 3, last_error: "sms provider 503" });
    expect(reasonCategory(dead.last_error)).toBe("transient");

    const replay = await s.h.api.app.inject({ method: "POST", url: `/v1/admin/notifications/${id}/replay`, headers: admin() });
    expect(replay.statusCode, replay.body).toBe(200);
    expect(await settled(pool(), id)).toMatchObject({ status: "sent", attempts: 4 });
  });

  it("retries with wrong credentials (the provider's 401), so a fixed token needs only a replay", async () => {
    await startWorker();
    const phone = await owner("send-auth");
    await worker!.stop();
    await startWorker({ authToken: "not-the-token" });
    const id = await notify("send-auth", "Open your report.", ["sms"]);
    const row = await settled(pool(), id);
    expect(row).toMatchObject({ status: "dead_letter", attempts: 3, last_error: "sms provider 401" });
    expect(reasonCategory(row.last_error)).toBe("transient");
    expect(s.provider.attempts.filter((a) => a.to === phone && !a.auth)).toHaveLength(3);
    // The refused sends gave their reservations back: only the code counts today.
    const usage = (await pool().query(`select texts from sms_daily_usage u join sms_number n on n.id = u.number_id where n.phone = $1`, [phone])).rows;
    expect(usage).toEqual([{ texts: 1 }]);
  });

  it("dead-letters a 21610 at once and counts the number as stopped; any other 4xx refusal too, without stopping it", async () => {
    await startWorker();
    const phone = await owner("send-optout");
    s.provider.answer(phone, { status: 400, json: { code: 21211, message: "Invalid 'To' Phone Number", status: 400 } });
    const refused = await settled(pool(), await notify("send-optout"));
    expect(refused).toMatchObject({ status: "dead_letter", attempts: 1, last_error: "provider rejected the text: 400 code 21211" });
    expect(reasonCategory(refused.last_error)).toBe("permanent");

    s.provider.answer(phone, { status: 400, json: { code: 21610, message: "Attempt to send to unsubscribed recipient", status: 400 } });
    const optedOut = await settled(pool(), await notify("send-optout"));
    expect(optedOut).toMatchObject({ status: "dead_letter", attempts: 1 });
    expect(optedOut.last_error).toMatch(/^sms recipient stopped.*21610/);
    const replay = await s.h.api.app.inject({ method: "POST", url: `/v1/admin/notifications/${optedOut.id}/replay`, headers: admin() });
    expect(replay.json()).toMatchObject({ reason: "permanent" });
    expect((await pool().query(`select stopped_at from sms_number where phone = $1`, [phone])).rows[0].stopped_at).toBeInstanceOf(Date);
  });
});

describe("nothing stalls: the send's 10 s deadline and 4 KB answer", () => {
  it("cuts a provider that never answers at the deadline and retries it as a timeout", async () => {
    await startWorker({ timeoutMs: 300 });
    const phone = await owner("send-hang");
    s.provider.answer(phone, { status: 201, hang: true });
    const id = await notify("send-hang");
    const row = await settled(pool(), id);
    expect(row).toMatchObject({ status: "sent", attempts: 2 });
    const first = (await pool().query(`select last_error from notification where id = $1`, [id])).rows[0].last_error;
    expect(first).toBe("sms provider unreachable: no answer within 300 ms");
  });

  it("reads at most 4 KB of an answer: a 201 with a huge body is still taken by its sid", async () => {
    await startWorker();
    const phone = await owner("send-huge");
    const sid = `SM${"f".repeat(32)}`;
    s.provider.answer(phone, { status: 201, raw: `{"sid": "${sid}", "status": "queued", "padding": "${"x".repeat(SMS_ANSWER_MAX_BYTES * 50)}"}` });
    const id = await notify("send-huge");
    expect(await settled(pool(), id)).toMatchObject({ status: "sent" });
    expect((await pool().query(`select notification_id from sms_send where sid = $1`, [sid])).rows[0]).toEqual({ notification_id: id });
  });
});

describe("costs: a daily cap per number and a daily segment budget for the service", () => {
  it("dead-letters past the number's cap as 'sms budget exhausted'; the in-app notification stands", async () => {
    await startWorker({ dailyLimitPerRecipient: 3 });
    const phone = await owner("budget-recipient"); // the code is the first text of the day
    const ids = [await notify("budget-recipient"), await notify("budget-recipient"), await notify("budget-recipient")];
    const rows = await Promise.all(ids.map((id) => settled(pool(), id)));
    expect(rows.map((r) => r.status).sort()).toEqual(["dead_letter", "sent", "sent"]);
    const dead = rows.find((r) => r.status === "dead_letter")!;
    expect(dead).toMatchObject({ attempts: 1, last_error: `${SMS_BUDGET_EXHAUSTED}: 3 texts today to this number` });
    expect(reasonCategory(dead.last_error)).toBe("permanent");
    const inApp = (await pool().query(`select status from notification where recipient_actor_id = 'budget-recipient' and channel = 'in_app'`)).rows;
    expect(inApp).toEqual([{ status: "sent" }, { status: "sent" }, { status: "sent" }]);
    expect(s.provider.textsTo(phone)).toHaveLength(3);
  });

  it("dead-letters past the service's daily segments, counts sms_segments_total{kind} and shows the day's spend", async () => {
    await pool().query(`delete from sms_daily_segments`);
    const registry = await startWorker({ dailySegments: 4 });
    await owner("budget-service"); // 1 segment: the code
    const long = "A brown dog with a red collar and a white patch on its chest was reported near the river. ".repeat(3);
    const first = await settled(pool(), await notify("budget-service", long)); // 2 segments: 3 of 4 spent
    expect(first.status).toBe("sent");
    const second = await settled(pool(), await notify("budget-service", long)); // 2 more would make 5
    expect(second).toMatchObject({ status: "dead_letter", last_error: `${SMS_BUDGET_EXHAUSTED}: the service's 4 segments today` });
    const third = await settled(pool(), await notify("budget-service", "Short.")); // 1 more makes 4
    expect(third.status).toBe("sent");

    const metrics = await registry.metrics();
    expect(metrics).toMatch(/sms_segments_total\{kind="match",process="notifier"\} 3/);
    expect(metrics).toMatch(/sms_segments_today\{process="notifier"\} 4/);
    expect(metrics).toMatch(/sms_segments_daily_budget\{process="notifier"\} 4/);
    expect((await notification(pool(), second.id)).status).toBe("dead_letter");
  });
});

describe("the first text to a finder's number says how to stop, and a number that never wrote back gets 3 a day", () => {
  it("applies to a phone: recipient whose number has not written to the service", async () => {
    await startWorker();
    const phone = newPhone();
    const numberId = (await pool().query(`insert into sms_number (phone) values ($1) returning id`, [phone])).rows[0].id as string;
    // One after another, as an owner's replies come.
    const rows = [];
    for (let i = 0; i < 4; i++) rows.push(await settled(pool(), await notify(phoneRecipient(numberId), `Reply ${i}`, ["sms"])));
    expect(rows.map((r) => r.status)).toEqual(["sent", "sent", "sent", "dead_letter"]);
    expect(rows[3]!.last_error).toBe(`${SMS_BUDGET_EXHAUSTED}: 3 texts today to this number`);
    const texts = await eventually(async () => (s.provider.textsTo(phone).length === 3 ? s.provider.textsTo(phone) : undefined));
    expect(texts[0]!.body).toMatch(/^Reply STOP to get no more texts\. /);
    expect(texts.slice(1).some((t) => /STOP/.test(t.body))).toBe(false);
  });

  it("says how to stop in exactly one text when several go to a new finder's number at once", async () => {
    await startWorker();
    const phone = newPhone();
    const numberId = (await pool().query(`insert into sms_number (phone) values ($1) returning id`, [phone])).rows[0].id as string;
    const ids = await Promise.all([0, 1, 2].map((i) => notify(phoneRecipient(numberId), `Reply ${i}`, ["sms"])));
    for (const id of ids) expect((await settled(pool(), id)).status).toBe("sent");
    const texts = await eventually(async () => (s.provider.textsTo(phone).length === 3 ? s.provider.textsTo(phone) : undefined));
    expect(texts.filter((t) => t.body.startsWith("Reply STOP to get no more texts."))).toHaveLength(1);
  });
});
