import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect } from "vitest";
import type { Env } from "../../lib/config.js";
import { withTransaction, type Pool } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { DELIVERY_TASKS } from "../../jobs/delivery/task.js";
import type { Channel, NotificationKind } from "../../lib/notifications.js";
import { enqueue } from "../../jobs/queue.js";
import { insertNotifications, needingDelivery } from "../../lib/notification-rows.js";
import { createMetricsRegistry, type Registry } from "../../lib/metrics.js";
import type { SupervisedWorker } from "../../lib/worker.js";
import { inAppDeliverer } from "../../jobs/delivery/deliverers/in-app.js";
import { createSmsDeliverer, type SmsDelivererOptions } from "../../jobs/delivery/deliverers/sms.js";
import type { Deliverers } from "../../jobs/delivery/deliverers/types.js";
import { as, type TestApi } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { TestSmsProvider, type ReceivedText } from "../helpers/sms-provider.js";
import { eventually } from "../helpers/stream.js";
import { startDeliveryWorker } from "../notifier/support.js";

/** The provider account of the tests, and the service's number. */
export const SMS = {
  accountSid: "AC0123456789abcdef0123456789abcdef",
  authToken: "test-sms-auth-token-3f9a",
  from: "+4915112340000",
  publicBaseUrl: "https://pets.test.example",
} as const;

/** The API's settings with the sms channel on. */
export const SMS_API_ENV: Env = { SMS_AUTH_TOKEN: SMS.authToken, SMS_DEFAULT_REGION: "DE", PUBLIC_BASE_URL: SMS.publicBaseUrl };

let phoneCounter = 0;
/** A fresh valid German mobile number, E.164 (each test file has its own database, so numbers repeat across files only). */
export const newPhone = () => `+4917612${100000 + ++phoneCounter}`;

export interface SmsHarness {
  h: Harness;
  provider: TestSmsProvider;
  registry: Registry;
  deliverers: Deliverers;
  worker: SupervisedWorker | null;
}

export type SmsSettings = Partial<Pick<SmsDelivererOptions, "dailyLimitPerRecipient" | "dailySegments" | "timeoutMs" | "authToken">>;

/** The provider of the tests' account, posting its webhooks to the API at `apiBaseUrl`. */
export const startSmsProvider = (apiBaseUrl: () => string): Promise<TestSmsProvider> =>
  TestSmsProvider.start({ accountSid: SMS.accountSid, authToken: SMS.authToken, serviceNumber: SMS.from, publicBaseUrl: SMS.publicBaseUrl, apiBaseUrl });

/** The sms deliverer as buildDeliverers makes it, on this provider, with the test's limits. */
export function smsDeliverers(pool: Pool, provider: TestSmsProvider, registry: Registry, settings: SmsSettings = {}): Deliverers {
  return {
    in_app: inAppDeliverer,
    sms: createSmsDeliverer({
      pool,
      apiBaseUrl: provider.url,
      accountSid: SMS.accountSid,
      authToken: SMS.authToken,
      from: SMS.from,
      publicBaseUrl: SMS.publicBaseUrl,
      defaultRegion: "DE",
      dailyLimitPerRecipient: 10,
      dailySegments: 1000,
      registry,
      ...settings,
    }),
  };
}

/**
 * The file's API (listening on loopback, so the provider's webhooks come over
 * HTTP), the provider, and a delivery worker with the sms deliverer; `worker:
 * false` leaves the worker to the test (a pipeline of its own).
 */
export function useSms(settings: SmsSettings & { worker?: boolean } = {}): SmsHarness {
  const s = {} as SmsHarness;
  beforeAll(async () => {
    s.h = await startHarness(SMS_API_ENV);
    const h = s.h;
    await h.api.app.listen({ port: 0, host: "127.0.0.1" });
    const port = (h.api.app.server.address() as AddressInfo).port;
    s.provider = await startSmsProvider(() => `http://127.0.0.1:${port}`);
    s.registry = createMetricsRegistry("notifier");
    s.deliverers = smsDeliverers(h.api.pool, s.provider, s.registry, settings);
    s.worker = settings.worker === false ? null : await startDeliveryWorker(h.api.pool, s.deliverers);
  });
  afterAll(async () => {
    await s.worker?.stop();
    await s.provider?.close();
    await s.h?.close();
  });
  return s;
}

/** The first text to `phone` whose body matches, once the provider took it. */
export function textTo(provider: TestSmsProvider, phone: string, match: RegExp = /./, timeoutMs = 15_000): Promise<ReceivedText> {
  return eventually(async () => provider.textsTo(phone).find((t) => match.test(t.body)), timeoutMs);
}

/** Sets and verifies the actor's phone through the API, with the code the provider took; returns the code text. */
export async function verifyPhone(s: { h: { api: TestApi }; provider: TestSmsProvider }, actor: string, phone: string): Promise<ReceivedText> {
  const before = s.provider.textsTo(phone).length;
  const put = await s.h.api.app.inject({ method: "PUT", url: "/v1/me/phone", headers: as(actor), payload: { phone } });
  expect(put.statusCode, put.body).toBe(200);
  const text = await eventually(async () => s.provider.textsTo(phone)[before]);
  const code = /code: (\d{6})/.exec(text.body)![1]!;
  const verify = await s.h.api.app.inject({ method: "POST", url: "/v1/me/phone/verify", headers: as(actor), payload: { code } });
  expect(verify.statusCode, verify.body).toBe(200);
  expect(verify.json()).toMatchObject({ phoneStatus: "verified" });
  return text;
}

export interface NotificationState {
  id: string;
  status: string;
  channel: string;
  kind: string;
  attempts: number;
  last_error: string | null;
  recipient_actor_id: string;
  body: string;
  data: Record<string, string>;
}

export async function notification(pool: Pool, id: string): Promise<NotificationState> {
  return (await pool.query<NotificationState>(`select * from notification where id = $1`, [id])).rows[0]!;
}

/** The notification once its delivery finished: sent or dead-lettered. */
export function settled(pool: Pool, id: string, timeoutMs = 20_000): Promise<NotificationState> {
  return eventually(async () => {
    const row = await notification(pool, id);
    return row.status === "sent" || row.status === "dead_letter" ? row : undefined;
  }, timeoutMs);
}

/**
 * A notification of one event on these channels (in_app and sms unless told), written and queued as
 * the consumer does; returns the id of its sms row.
 */
export async function notify(
  pool: Pool,
  actor: string,
  options: { kind?: NotificationKind; body?: string; channels?: Channel[] } = {},
): Promise<string> {
  const { kind = "match", body = "A found report may be your animal: a brown dog, male, seen near the park.", channels = ["in_app", "sms"] } = options;
  return withTransaction(pool, async (client) => {
    const eventId = randomUUID();
    const inserted = await insertNotifications(
      client,
      channels.map((channel) => ({
        recipientActorId: actor,
        kind,
        sourceKey: `${kind}:${eventId}`,
        subject: "A found animal may be yours",
        body,
        data: { lostReportId: randomUUID() },
        sourceEventId: eventId,
        sourceOccurredAt: new Date(),
        eventType: EventType.MatchSuggested,
        channel,
      })),
    );
    const due = needingDelivery(inserted);
    for (const { id, channel } of due) await enqueue(client, DELIVERY_TASKS[channel].one, { notificationId: id });
    return due.find((d) => d.channel === "sms")?.id ?? due[0]!.id;
  });
}
