import { randomUUID } from "node:crypto";
import { AckPolicy, DeliverPolicy } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectBus, ensureStream, type NatsConnection } from "../../lib/bus.js";
import { createPool, type Pool } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { ACK_WAIT_MS, NotificationConsumer } from "../../notifier/consumer.js";
import { notificationHandlers, type HandlerRegistry } from "../../notifier/handlers.js";
import { insertNotification } from "../../lib/notification-rows.js";
import { TEST_STREAM } from "../helpers/app.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestBus, type TestBus } from "../helpers/nats.js";
import { eventually } from "../helpers/stream.js";
import {
  consumerInfo,
  deliveryJobsFor,
  maxRowsPerSourceEvent,
  notificationsFor,
  publishEnvelope,
  contactMessageEnvelope,
  setPreference,
} from "./support.js";

let db: TestDatabase;
let bus: TestBus;
let nc: NatsConnection;
let pool: Pool;
const consumers: NotificationConsumer[] = [];
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });

async function startConsumer(name: string, registry: HandlerRegistry = notificationHandlers): Promise<NotificationConsumer> {
  const consumer = new NotificationConsumer({ nc, pool, logger, stream: TEST_STREAM, name, registry, concurrency: 4 });
  await consumer.ensure();
  consumer.start();
  consumers.push(consumer);
  return consumer;
}

/** Every message the consumer was given is acked (or terminated): nothing pending, nothing in flight. */
async function drained(name: string): Promise<void> {
  await eventually(async () => {
    const info = await consumerInfo(nc, name);
    return info.num_pending === 0 && info.num_ack_pending === 0 ? true : undefined;
  });
}

beforeAll(async () => {
  db = await createTestDatabase();
  bus = await startTestBus();
  nc = await connectBus(bus.url, "consumer-test", logger);
  await ensureStream(nc, TEST_STREAM);
  pool = createPool({ connectionString: db.url, max: 10, applicationName: "consumer-test", logger });
  await startConsumer("notifier");
});

afterAll(async () => {
  await Promise.all(consumers.map((c) => c.stop()));
  await nc?.close();
  await pool?.end();
  await bus?.dispose();
  await db?.drop();
});

describe("the notifier consumes through a durable consumer named notifier with explicit acks", () => {
  it("creates it with explicit ack, deliver all, a 30 s ack wait and the registry's filter (events.> on NATS 2.9)", async () => {
    const info = await consumerInfo(nc, "notifier");
    expect(info.config.durable_name).toBe("notifier");
    expect(info.config.ack_policy).toBe(AckPolicy.Explicit);
    expect(info.config.deliver_policy).toBe(DeliverPolicy.All);
    expect(info.config.ack_wait).toBe(nanos(ACK_WAIT_MS));
    expect(nc.info?.version).toMatch(/^2\.9\./);
    expect(info.config.filter_subject).toBe("events.>");
  });

  it("ensuring the consumer again at start leaves its position and config intact", async () => {
    const envelope = contactMessageEnvelope("owner-ensure");
    await publishEnvelope(nc, envelope);
    await eventually(async () => ((await notificationsFor(pool, [envelope.id])).length === 1 ? true : undefined));
    await drained("notifier");
    const before = await consumerInfo(nc, "notifier");
    const again = new NotificationConsumer({ nc, pool, logger, stream: TEST_STREAM, name: "notifier", registry: notificationHandlers, concurrency: 1 });
    await again.ensure();
    const after = await consumerInfo(nc, "notifier");
    expect(after.delivered.stream_seq).toBe(before.delivered.stream_seq);
    expect(after.ack_floor.stream_seq).toBe(before.ack_floor.stream_seq);
    expect(after.config.filter_subject).toBe(before.config.filter_subject);
  });
});

describe("each event becomes one notification per recipient and channel, committed before the ack: in_app written sent, email with its delivery job", () => {
  it("writes in_app only for a recipient who wants no email, with the event id as source_event_id, already sent and with no delivery job", async () => {
    await setPreference(pool, "owner-inapp", "in_app");
    const envelope = contactMessageEnvelope("owner-inapp");
    await publishEnvelope(nc, envelope);
    const [row] = await eventually(async () => {
      const rows = await notificationsFor(pool, [envelope.id]);
      return rows.length === 1 ? rows : undefined;
    });
    expect(row).toMatchObject({ recipient_actor_id: "owner-inapp", channel: "in_app", status: "sent", attempts: 1, source_event_id: envelope.id });
    expect(row!.body).toContain((envelope.data as { message: string }).message);
    expect(await deliveryJobsFor(pool, row!.id)).toBe(0);
    await drained("notifier");
  });

  it("writes in_app only when the recipient never chose anything (no address), so nothing dead-letters", async () => {
    const envelope = contactMessageEnvelope("owner-default");
    await publishEnvelope(nc, envelope);
    const rows = await eventually(async () => {
      const found = await notificationsFor(pool, [envelope.id]);
      return found.length === 1 ? found : undefined;
    });
    await drained("notifier");
    expect(rows.map((r) => r.channel)).toEqual(["in_app"]);
    expect(await notificationsFor(pool, [envelope.id])).toHaveLength(1);
  });

  it("writes in_app (sent) and email (pending, with its delivery job) when the recipient set an address", async () => {
    await setPreference(pool, "owner-both", "email", "owner@example.org");
    const envelope = contactMessageEnvelope("owner-both");
    await publishEnvelope(nc, envelope);
    const rows = await eventually(async () => {
      const found = await notificationsFor(pool, [envelope.id]);
      return found.length === 2 ? found : undefined;
    });
    await drained("notifier");
    const byChannel = Object.fromEntries(rows.map((r) => [r.channel, r]));
    expect(Object.keys(byChannel).sort()).toEqual(["email", "in_app"]);
    expect(byChannel.in_app).toMatchObject({ status: "sent", attempts: 1 });
    expect(await deliveryJobsFor(pool, byChannel.in_app!.id)).toBe(0);
    expect(byChannel.email).toMatchObject({ status: "pending", attempts: 0 });
    expect(await deliveryJobsFor(pool, byChannel.email!.id)).toBe(1);
  });

  it("leaves email out for a kind the recipient did not choose for email", async () => {
    await pool.query(
      `insert into notification_preference (actor_id, email, email_kinds) values ('owner-some', 'some@example.org', '{sighting}')`,
    );
    const envelope = contactMessageEnvelope("owner-some");
    await publishEnvelope(nc, envelope);
    await drained("notifier");
    const rows = await notificationsFor(pool, [envelope.id]);
    expect(rows.map((r) => r.channel)).toEqual(["in_app"]);
  });

  it("naks a message whose transaction failed and creates the row when it is redelivered", async () => {
    await pool.query(`
      create function reject_poison() returns trigger language plpgsql as $$
      begin
        if new.recipient_actor_id = 'owner-poison' then raise exception 'database refused the insert'; end if;
        return new;
      end $$;
      create trigger reject_poison before insert on notification for each row execute function reject_poison();`);
    const envelope = contactMessageEnvelope("owner-poison");
    try {
      await publishEnvelope(nc, envelope);
      await eventually(async () => ((await consumerInfo(nc, "notifier")).num_redelivered > 0 ? true : undefined));
      expect(await notificationsFor(pool, [envelope.id])).toHaveLength(0);
    } finally {
      await pool.query(`drop trigger reject_poison on notification; drop function reject_poison();`);
    }
    await eventually(async () => ((await notificationsFor(pool, [envelope.id])).length === 1 ? true : undefined));
    await drained("notifier");
  });
});

describe("redelivery of an event never gives a second notification", () => {
  it("the same event delivered three times (past the stream's duplicate window) leaves one row per channel and one delivery job", async () => {
    await setPreference(pool, "owner-redelivered", "email", "redelivered@example.org");
    const envelope = contactMessageEnvelope("owner-redelivered");
    await publishEnvelope(nc, envelope);
    await publishEnvelope(nc, envelope, `${envelope.id}-again`);
    await publishEnvelope(nc, envelope, `${envelope.id}-third`);
    await drained("notifier");
    const rows = await notificationsFor(pool, [envelope.id]);
    expect(rows.map((r) => r.channel).sort()).toEqual(["email", "in_app"]);
    const email = rows.find((r) => r.channel === "email")!;
    expect(await deliveryJobsFor(pool, email.id)).toBe(1);
    expect(await maxRowsPerSourceEvent(pool)).toBe(1);
  });
});

describe("a crash between commit and ack never gives a second notification", () => {
  it("a message whose row was already committed (the ack was lost) is acked with no new row and no new job", async () => {
    const envelope = contactMessageEnvelope("owner-crash");
    // The committed half of a delivery whose notifier died before acking.
    const id = await insertNotification(pool, {
      recipientActorId: "owner-crash",
      sourceKey: "relay_message:crash",
      subject: "s",
      body: "b",
      sourceEventId: envelope.id,
      sourceOccurredAt: envelope.occurredAt,
      eventType: EventType.ContactMessageReceived,
      kind: "relay_message",
      data: {},
      channel: "in_app",
    });
    await publishEnvelope(nc, envelope);
    await drained("notifier");
    const rows = await notificationsFor(pool, [envelope.id]);
    expect(rows.map((r) => r.id)).toEqual([id]);
    expect(await deliveryJobsFor(pool, id!)).toBe(0);
  });
});

describe("messages that can never succeed are terminated, not redelivered for ever", () => {
  it("terminates a body that is not an event envelope and an event whose data has no recipient, and keeps consuming", async () => {
    await nc.publish(EventType.ContactMessageReceived, "not json");
    const invalid = contactMessageEnvelope("owner-invalid");
    delete (invalid.data as Record<string, unknown>).recipientActorId;
    await publishEnvelope(nc, invalid);
    const valid = contactMessageEnvelope("owner-after-poison");
    await publishEnvelope(nc, valid);
    await drained("notifier");
    expect(await notificationsFor(pool, [invalid.id])).toHaveLength(0);
    expect(await notificationsFor(pool, [valid.id])).toHaveLength(1);
  });
});

/** A stand-in second handler: these tests are about the filter, not about sightings. */
const sightingHandler: HandlerRegistry[typeof EventType.SightingReported] = ({ data }) => [
  { recipientActorId: data.recipientActorId!, kind: "sighting", sourceKey: `sighting:${data.sightingId}`, subject: "s", body: "b", data: {} },
];
const sightingData = (recipientActorId: string) => ({
  sightingId: randomUUID(),
  lostReportId: randomUUID(),
  recipientActorId,
  reporterId: "neighbour",
  location: { lat: 52.5, lon: 13.4 },
  seenAt: new Date().toISOString(),
});

describe("on NATS before 2.10 a registry of several types widens the filter to events.> and skips the rest", () => {
  it("filters on events.>, creates rows for registered types and acks unregistered ones without a row", async () => {
    const wide: HandlerRegistry = { ...notificationHandlers, [EventType.SightingReported]: sightingHandler };
    await startConsumer("notifier-wide", wide);
    expect(nc.info?.version).toMatch(/^2\.9\./);
    expect((await consumerInfo(nc, "notifier-wide")).config.filter_subject).toBe("events.>");

    const unregistered = { ...contactMessageEnvelope("owner-wide"), type: EventType.AnimalLostReported };
    const registered = { ...contactMessageEnvelope("owner-wide"), type: EventType.SightingReported, data: sightingData("owner-wide") };
    await publishEnvelope(nc, unregistered);
    await publishEnvelope(nc, registered);
    await drained("notifier-wide");
    expect(await notificationsFor(pool, [unregistered.id])).toHaveLength(0);
    expect(await notificationsFor(pool, [registered.id])).toHaveLength(1);
  });
});

describe("adding a handler to the registry widens an existing consumer's filter at the next start", () => {
  it("updates the durable consumer's filter in place, keeping its position", async () => {
    const name = "notifier-upgrade";
    const contactMessagesOnly: HandlerRegistry = { [EventType.ContactMessageReceived]: notificationHandlers[EventType.ContactMessageReceived] };
    const narrow = new NotificationConsumer({ nc, pool, logger, stream: TEST_STREAM, name, registry: contactMessagesOnly, concurrency: 1 });
    await narrow.ensure();
    const before = await consumerInfo(nc, name);
    const wide = new NotificationConsumer({
      nc,
      pool,
      logger,
      stream: TEST_STREAM,
      name,
      registry: { ...contactMessagesOnly, [EventType.SightingReported]: sightingHandler },
      concurrency: 1,
    });
    await wide.ensure();
    const after = await consumerInfo(nc, name);
    expect(before.config.filter_subject).toBe(EventType.ContactMessageReceived);
    expect(after.config.filter_subject).toBe("events.>");
    expect(after.created).toBe(before.created);
  });
});
