import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadNotifierConfig } from "../../lib/config.js";
import { createPool, withTransaction, type Pool } from "../../lib/db.js";
import { DEFAULT_DEADLINES_MS, DEFAULT_PUSH_ORIGIN_PAUSE_MS, PUSH_ORIGIN_TIMEOUTS_TO_PAUSE } from "../../lib/deadline.js";
import { EventType } from "../../lib/events.js";
import { DELIVERY_TASKS } from "../../jobs/delivery/task.js";
import { reasonCategory } from "../../lib/notifications.js";
import { enqueue } from "../../jobs/queue.js";
import { SAFE_FETCH_TIMEOUT_MS } from "../../lib/safe-fetch.js";
import type { SupervisedWorker } from "../../lib/worker.js";
import { buildDeliverers } from "../../jobs/delivery/deliverers/index.js";
import { insertNotification } from "../../lib/notification-rows.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { eventually } from "../helpers/stream.js";
import { TRICKLE_EVERY_MS } from "../helpers/trickle.js";
import { contactMessageEnvelope, setPreference, startDeliveryWorker } from "./support.js";
import { startSmtpServer, type TestSmtpServer } from "./smtp.js";

/**
 * Every outbound call has a total deadline (contract part 4, "Nothing stalls
 * the service"): the settings' defaults are the contract's, and an SMTP
 * server that answers one byte every 3 s (a real smtp-server whose writes
 * after its greeting trickle) is cut at the message's deadline. The push and
 * photo deadlines are tested in tests/push/push-stalls.test.ts and
 * tests/partners/safe-fetch.test.ts.
 */

describe("the deadlines' defaults are the contract's", () => {
  it("push 10 s, an SMTP message 30 s, a partner photo fetch 10 s; a push origin is paused for 60 s after 3 timeouts in a row", () => {
    const config = loadNotifierConfig({ API_ENV: "development", DATABASE_URL: "postgres://x/y", NATS_URL: "nats://127.0.0.1:4222" });
    expect(config.PUSH_DEADLINE_MS).toBe(10_000);
    expect(config.SMTP_DEADLINE_MS).toBe(30_000);
    expect(config.PARTNER_PHOTO_FETCH_DEADLINE_MS).toBe(10_000);
    expect(config.PUSH_ORIGIN_PAUSE_MS).toBe(60_000);
    // What the deliverers and the fetcher use when given no setting.
    expect(DEFAULT_DEADLINES_MS).toEqual({ push: 10_000, smtpMessage: 30_000, partnerPhotoFetch: 10_000 });
    expect(SAFE_FETCH_TIMEOUT_MS).toBe(10_000);
    expect([PUSH_ORIGIN_TIMEOUTS_TO_PAUSE, DEFAULT_PUSH_ORIGIN_PAUSE_MS]).toEqual([3, 60_000]);
  });

  it("are settings, short ones for tests", () => {
    const config = loadNotifierConfig({
      API_ENV: "development",
      DATABASE_URL: "postgres://x/y",
      NATS_URL: "nats://127.0.0.1:4222",
      PUSH_DEADLINE_MS: "1500",
      SMTP_DEADLINE_MS: "2000",
      PARTNER_PHOTO_FETCH_DEADLINE_MS: "1000",
      PUSH_ORIGIN_PAUSE_MS: "3000",
    });
    expect([config.PUSH_DEADLINE_MS, config.SMTP_DEADLINE_MS, config.PARTNER_PHOTO_FETCH_DEADLINE_MS, config.PUSH_ORIGIN_PAUSE_MS]).toEqual([
      1_500, 2_000, 1_000, 3_000,
    ]);
    expect(() => loadNotifierConfig({ API_ENV: "development", DATABASE_URL: "postgres://x/y", NATS_URL: "nats://x", SMTP_DEADLINE_MS: "0" })).toThrow(
      /SMTP_DEADLINE_MS/,
    );
  });
});

describe("an SMTP server that answers one byte every 3 s", () => {
  let db: TestDatabase;
  let pool: Pool;
  let runner: SupervisedWorker | null = null;
  let smtp: TestSmtpServer | null = null;
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, max: 5, applicationName: "deadlines-test", logger });
  });
  afterAll(async () => {
    await runner?.stop();
    await smtp?.close();
    await pool?.end();
    await db?.drop();
  });

  it("is cut at the message's deadline, as a timeout (transient), and the next attempt goes out", async () => {
    // The first connection trickles everything after the greeting, so the EHLO answer alone would take minutes.
    smtp = await startSmtpServer(undefined, { trickleEveryMs: TRICKLE_EVERY_MS, trickleConnections: 1 });
    // 4 s: past the second byte, so an idle timer this long would never have fired.
    runner = await startDeliveryWorker(pool, buildDeliverers({ SMTP_URL: smtp.url, SMTP_FROM: "Animal Safety <no-reply@example.org>", SMTP_DEADLINE_MS: 4_000 }));
    await setPreference(pool, "owner-slow-smtp", "email", "slow@example.org");
    const event = contactMessageEnvelope("owner-slow-smtp");
    const id = await withTransaction(pool, async (client) => {
      const created = await insertNotification(client, {
        recipientActorId: "owner-slow-smtp",
        sourceKey: `relay_message:${event.data.relayMessageId}`,
        subject: "Someone sent a message about your lost animal",
        body: "Your cat is on my porch",
        sourceEventId: event.id,
        sourceOccurredAt: event.occurredAt,
        eventType: EventType.ContactMessageReceived,
        kind: "relay_message",
        data: {},
        channel: "email",
      });
      await enqueue(client, DELIVERY_TASKS.email.one, { notificationId: created! });
      return created!;
    });

    const done = await eventually(async () => {
      const { rows } = await pool.query(`select status, attempts, last_error from notification where id = $1`, [id]);
      return rows[0].status === "sent" || rows[0].status === "dead_letter" ? rows[0] : undefined;
    }, 30_000);
    // The first attempt's error stays on the row when the second succeeds.
    expect(done).toMatchObject({ status: "sent", attempts: 2, last_error: "ETIMEDOUT: the email did not complete within 4 s" });
    expect(reasonCategory(done.last_error)).toBe("transient");
    // The first connection never got past EHLO; the message arrived once, on the second.
    expect(smtp.rcptAttempts).toEqual(["slow@example.org"]);
    expect(smtp.received).toHaveLength(1);
  });
});
