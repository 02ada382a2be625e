import { performance } from "node:perf_hooks";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { backoffMs, DELIVERY_ATTEMPTS } from "../../jobs/delivery/delivery.js";
import { createPool, withTransaction, type Pool } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { buildDeliverers } from "../../jobs/delivery/deliverers/index.js";
import { deliverTask } from "../../jobs/delivery/task.js";
import { reasonCategory, type Channel } from "../../lib/notifications.js";
import { enqueue } from "../../jobs/queue.js";
import { requeueStalledDeliveries } from "../../jobs/delivery/store.js";
import { insertNotification } from "../../lib/notification-rows.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { freePort } from "../helpers/nats.js";
import { eventually } from "../helpers/stream.js";
import { deliveryJobsFor, contactMessageEnvelope, setPreference, startDeliveryWorker, type NotificationRow } from "./support.js";
import { SmtpReply, startSmtpServer, type TestSmtpServer } from "./smtp.js";
import type { SupervisedWorker } from "../../lib/worker.js";

let db: TestDatabase;
let pool: Pool;
let runner: SupervisedWorker | null = null;
let smtp: TestSmtpServer | null = null;
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });

/** The worker with the deliverers the notifier builds from SMTP_URL (unset: no email deliverer). */
async function startWorkerWith(smtpUrl?: string): Promise<void> {
  runner = await startDeliveryWorker(pool, buildDeliverers({ SMTP_URL: smtpUrl, SMTP_FROM: "Animal Safety <no-reply@example.org>" }));
}

/** A notification as the consumer creates it: the row and its job, in one transaction. */
async function createNotification(recipient: string, channel: Channel, message = "Seen near the bakery"): Promise<string> {
  const event = contactMessageEnvelope(recipient);
  (event.data as { message: string }).message = message;
  return withTransaction(pool, async (client) => {
    const id = await insertNotification(client, {
      recipientActorId: recipient,
      sourceKey: `relay_message:${(event.data as { relayMessageId: string }).relayMessageId}`,
      subject: "Someone sent a message about your lost animal",
      body: message,
      sourceEventId: event.id,
      sourceOccurredAt: event.occurredAt,
      eventType: EventType.ContactMessageReceived,
      kind: "relay_message",
      data: {},
      channel,
    });
    await enqueue(client, deliverTask(channel), { notificationId: id! });
    return id!;
  });
}

async function row(id: string): Promise<NotificationRow & { sent_at: Date | null; updated_at: Date; created_at: Date }> {
  return (await pool.query(`select * from notification where id = $1`, [id])).rows[0];
}

async function settled(id: string, timeoutMs = 10_000) {
  return eventually(async () => {
    const r = await row(id);
    return r.status === "sent" || r.status === "dead_letter" ? r : undefined;
  }, timeoutMs);
}

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool({ connectionString: db.url, max: 10, applicationName: "delivery-test", logger });
});

afterEach(async () => {
  await runner?.stop();
  runner = null;
  await smtp?.close();
  smtp = null;
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

describe("the in-app channel always has a deliverer", () => {
  it("marks sent, after one attempt, an in-app notification left pending with its job (as rows were written before in-app rows were written sent)", async () => {
    const id = await createNotification("owner-inapp", "in_app");
    await pool.query(`update notification set status = 'pending', attempts = 0, round_attempts = 0, sent_at = null where id = $1`, [id]);
    await startWorkerWith();
    const done = await settled(id);
    expect(done).toMatchObject({ status: "sent", attempts: 1, last_error: null });
    expect(done.sent_at).toBeInstanceOf(Date);
  });
});

describe("email with no deliverer configured dead-letters at once", () => {
  it("goes to dead_letter after a single attempt with last_error naming the missing deliverer", async () => {
    await startWorkerWith();
    const id = await createNotification("owner-noemail", "email");
    const done = await settled(id);
    expect(done.status).toBe("dead_letter");
    expect(done.attempts).toBe(1);
    expect(done.last_error).toContain("no deliverer configured for channel email");
    expect(reasonCategory(done.last_error)).toBe("permanent");
  });
});

describe("with SMTP_URL set, a real SMTP deliverer sends the email", () => {
  it("delivers the contact message to the recipient's address and marks it sent", async () => {
    smtp = await startSmtpServer();
    await startWorkerWith(smtp.url);
    await setPreference(pool, "owner-mail", "email", "owner@example.org");
    const id = await createNotification("owner-mail", "email", "Your cat is on my porch");
    const done = await settled(id);
    expect(done).toMatchObject({ status: "sent", attempts: 1 });
    expect(smtp.received).toHaveLength(1);
    expect(smtp.received[0]!.to).toEqual(["owner@example.org"]);
    expect(smtp.received[0]!.raw).toContain("Your cat is on my porch");
    expect(smtp.received[0]!.raw).toContain("Someone sent a message about your lost animal");
  });

  it("a recipient with no address dead-letters as a permanent failure, without contacting the server", async () => {
    smtp = await startSmtpServer();
    await startWorkerWith(smtp.url);
    const id = await createNotification("owner-no-address", "email");
    const done = await settled(id);
    expect(done).toMatchObject({ status: "dead_letter", attempts: 1, last_error: "no email address configured for recipient" });
    expect(reasonCategory(done.last_error)).toBe("permanent");
    expect(smtp.rcptAttempts).toEqual([]);
  });

  it("a 5xx rejection is permanent: dead_letter after one attempt", async () => {
    smtp = await startSmtpServer(async () => {
      throw new SmtpReply(550, "mailbox unavailable");
    });
    await startWorkerWith(smtp.url);
    await setPreference(pool, "owner-rejected", "email", "rejected@example.org");
    const id = await createNotification("owner-rejected", "email");
    const done = await settled(id);
    expect(done.status).toBe("dead_letter");
    expect(done.attempts).toBe(1);
    expect(done.last_error).toMatch(/^smtp 550: /);
    expect(reasonCategory(done.last_error)).toBe("permanent");
    expect(smtp.rcptAttempts).toHaveLength(1);
  });

  it("a server that is down is transient: 3 attempts, then dead_letter with the connection error", async () => {
    const closedPort = await freePort();
    await startWorkerWith(`smtp://127.0.0.1:${closedPort}`);
    await setPreference(pool, "owner-down", "email", "down@example.org");
    const id = await createNotification("owner-down", "email");
    const done = await settled(id);
    expect(done.status).toBe("dead_letter");
    expect(done.attempts).toBe(3);
    expect(done.last_error).toContain("ECONNREFUSED");
    expect(reasonCategory(done.last_error)).toBe("transient");
  });
});

describe("every attempt updates the row; the status is failed while retries remain", () => {
  it("records attempt 1's transient error as failed, then succeeds on a later attempt and is sent", async () => {
    let releaseSecond!: () => void;
    const secondHeld = new Promise<void>((resolve) => (releaseSecond = resolve));
    smtp = await startSmtpServer(async (_address, attempt) => {
      if (attempt === 1) throw new SmtpReply(451, "temporary local problem");
      if (attempt === 2) await secondHeld;
    });
    await startWorkerWith(smtp.url);
    await setPreference(pool, "owner-retry", "email", "retry@example.org");
    const id = await createNotification("owner-retry", "email");

    // Attempt 2 is held open by the server: the row shows attempt 1's outcome.
    const during = await eventually(async () => (smtp!.rcptAttempts.length === 2 ? row(id) : undefined));
    expect(during).toMatchObject({ status: "failed", attempts: 1 });
    expect(during.last_error).toMatch(/^smtp 451: /);
    expect(during.updated_at.getTime()).toBeGreaterThan(during.created_at.getTime());
    releaseSecond();

    const done = await settled(id);
    expect(done).toMatchObject({ status: "sent", attempts: 2 });
    expect(smtp.received).toHaveLength(1);
  });
});

describe("a transient failure is retried: 3 attempts, exponential backoff, then dead_letter", () => {
  it("a server answering 4xx to every attempt sees exactly 3 attempts, each at least the backoff after the one before", async () => {
    // What the server saw, not what the worker logged: the gaps include the real SMTP round trips.
    const seenAt: number[] = [];
    smtp = await startSmtpServer(async () => {
      seenAt.push(performance.now());
      throw new SmtpReply(451, "try again later");
    });
    await startWorkerWith(smtp.url);
    await setPreference(pool, "owner-backoff", "email", "backoff@example.org");
    const id = await createNotification("owner-backoff", "email");
    const done = await settled(id);

    expect(done).toMatchObject({ status: "dead_letter", attempts: DELIVERY_ATTEMPTS });
    expect(done.last_error).toMatch(/^smtp 451: /);
    expect(reasonCategory(done.last_error)).toBe("transient");
    // The job finished rather than failing, so graphile-worker holds nothing that could make a 4th attempt.
    await eventually(async () => ((await deliveryJobsFor(pool, id)) === 0 ? true : undefined));
    expect(smtp.rcptAttempts).toHaveLength(DELIVERY_ATTEMPTS);
    expect(seenAt).toHaveLength(DELIVERY_ATTEMPTS);

    // Never early; a loaded machine can only make a retry later. The cap itself: tests/notifier/rules.test.ts.
    const gaps = seenAt.slice(1).map((t, i) => t - seenAt[i]!);
    gaps.forEach((gap, i) => expect(gap, `gap after attempt ${i + 1}`).toBeGreaterThanOrEqual(backoffMs(i + 1)));
  });
});

describe("one notification is never delivered twice at once", () => {
  it("a second job for a notification whose delivery is running does nothing; the mail is sent once", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    smtp = await startSmtpServer(() => held);
    await startWorkerWith(smtp.url);
    await setPreference(pool, "owner-twice", "email", "twice@example.org");
    const id = await createNotification("owner-twice", "email");
    await eventually(async () => (smtp!.rcptAttempts.length === 1 ? true : undefined));

    // The first job is locked by the worker, so this adds a second one, which runs now.
    await enqueue(pool, deliverTask("email"), { notificationId: id });
    await eventually(async () => ((await deliveryJobsFor(pool, id)) === 1 ? true : undefined));
    release();
    const done = await settled(id);
    expect(done).toMatchObject({ status: "sent", attempts: 1 });
    expect(smtp.rcptAttempts).toHaveLength(1);
    expect(smtp.received).toHaveLength(1);
  });
});

describe("a delivery whose worker died is re-queued by the stall sweep", () => {
  it("re-queues a pending notification untouched for longer than the threshold, and it is delivered", async () => {
    smtp = await startSmtpServer();
    await setPreference(pool, "owner-stalled", "email", "stalled@example.org");
    const id = await createNotification("owner-stalled", "email");
    // Its job was held by a worker that died: graphile-worker would keep it locked for hours.
    await pool.query(
      `update graphile_worker._private_jobs set locked_at = now(), locked_by = 'dead-worker' where payload->>'notificationId' = $1`,
      [id],
    );
    await pool.query(`update notification set updated_at = now() - interval '10 minutes' where id = $1`, [id]);
    await startWorkerWith(smtp.url);

    const requeued = await withTransaction(pool, (client) => requeueStalledDeliveries(client, 120, 100));
    expect(requeued).toEqual([id]);
    const done = await settled(id);
    expect(done).toMatchObject({ status: "sent", attempts: 1 });
  });

  it("resumes the dead worker's round: after 2 recorded attempts the re-run makes only the 3rd", async () => {
    smtp = await startSmtpServer(async () => {
      throw new SmtpReply(451, "try again later");
    });
    await setPreference(pool, "owner-resumed", "email", "resumed@example.org");
    const id = await createNotification("owner-resumed", "email");
    // What a worker killed after its 2nd failed attempt leaves: the row, and its job locked for hours.
    await pool.query(
      `update graphile_worker._private_jobs set locked_at = now(), locked_by = 'dead-worker' where payload->>'notificationId' = $1`,
      [id],
    );
    await pool.query(
      `update notification set status = 'failed', attempts = 2, round_attempts = 2, last_error = 'smtp 451: try again later',
         updated_at = now() - interval '10 minutes'
       where id = $1`,
      [id],
    );
    await startWorkerWith(smtp.url);

    expect(await withTransaction(pool, (client) => requeueStalledDeliveries(client, 120, 100))).toEqual([id]);
    const done = await settled(id);
    expect(done).toMatchObject({ status: "dead_letter", attempts: 3, round_attempts: 3 });
    expect(smtp.rcptAttempts).toHaveLength(1);
  });

  it("leaves recent and finished notifications alone", async () => {
    const recent = await createNotification("owner-recent", "email");
    // An in-app row is written sent: however old, the sweep has nothing to deliver.
    const inApp = await createNotification("owner-old-in-app", "in_app");
    await pool.query(`update notification set updated_at = now() - interval '10 minutes' where id = $1`, [inApp]);
    const requeued = await withTransaction(pool, (client) => requeueStalledDeliveries(client, 120, 100));
    expect(requeued).not.toContain(recent);
    expect(requeued).not.toContain(inApp);
  });
});
