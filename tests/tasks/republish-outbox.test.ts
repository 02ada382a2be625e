import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { jetstreamManager, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import { connect, nanos, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { TEST_STREAM } from "../helpers/app.js";
import { useTestStack } from "../helpers/harness.js";
import type { ServiceProcess } from "../helpers/processes.js";
import { eventually, readStream } from "../helpers/stream.js";

const exec = promisify(execFile);
const h = useTestStack();
const CONTACT_MESSAGE_EVENTS = 20;
const OTHER_EVENTS = 10;
const TOTAL = CONTACT_MESSAGE_EVENTS + OTHER_EVENTS;

let nc: NatsConnection;
let jsm: JetStreamManager;
let notifier: ServiceProcess;
let window: string[];

async function republish(...extra: string[]): Promise<{ code: number; out: Record<string, any> }> {
  try {
    const { stdout } = await exec(process.execPath, ["--import", "tsx", "tasks/republish-outbox.ts", ...window, "--operator", "op-9", ...extra], {
      env: { ...process.env, DATABASE_URL: h.db.url, NATS_URL: h.bus.url, NATS_STREAM: TEST_STREAM, LOG_LEVEL: "warn" },
    });
    return { code: 0, out: JSON.parse(stdout) };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, out: e.stdout ? JSON.parse(e.stdout) : {} };
  }
}

const count = async (sql: string) => (await h.db.pool.query<{ n: number }>(sql)).rows[0]!.n;

/**
 * Contact message events the notifier has handled so far, whatever the outcome: waiting on
 * these (not on "duplicate" outcomes) lets a second notification show up as a
 * failed count instead of a timeout.
 */
const contactMessageEventsHandled = () =>
  notifier.lines.filter((l) => l.msg === "notifier: event handled" && l.type === EventType.ContactMessageReceived).length;

beforeAll(async () => {
  await h.db.pool.query(
    `insert into notification_preference (actor_id, email_kinds) select 'republish-owner-' || n, '{}' from generate_series(1, $1::int) n`,
    [CONTACT_MESSAGE_EVENTS],
  );
  await h.db.pool.query(
    `insert into outbox_event (type, payload)
     select $1, jsonb_build_object('recipientActorId', 'republish-owner-' || n, 'lostReportId', gen_random_uuid(),
       'relayMessageId', gen_random_uuid(), 'message', 'seen near the bakery ' || n, 'fromContact', 'finder@example.org')
     from generate_series(1, $2::int) n`,
    [EventType.ContactMessageReceived, CONTACT_MESSAGE_EVENTS],
  );
  await h.db.pool.query(
    `insert into outbox_event (type, payload) select $1, jsonb_build_object('n', n) from generate_series(1, $2::int) n`,
    [EventType.AnimalLostReported, OTHER_EVENTS],
  );
  await h.stack.start("relay");
  notifier = await h.stack.start("notifier");
  await eventually(async () => ((await count(`select count(*)::int as n from outbox_event where published_at is null`)) === 0 ? true : undefined), 30_000);
  await eventually(async () => ((await count(`select count(*)::int as n from notification`)) === CONTACT_MESSAGE_EVENTS ? true : undefined), 30_000);
  const { rows } = await h.db.pool.query<{ from: Date; to: Date }>(`select min(occurred_at) as from, max(occurred_at) as to from outbox_event`);
  window = ["--from", rows[0]!.from.toISOString(), "--to", new Date(rows[0]!.to.getTime() + 1_000).toISOString()];
  nc = await connect({ servers: h.bus.url });
  jsm = await jetstreamManager(nc);
}, 90_000);

afterAll(async () => {
  await nc?.close();
});

async function streamIds(): Promise<string[]> {
  const messages = await readStream(nc, TEST_STREAM);
  for (const m of messages) expect(m.msgId).toBe(m.body.id);
  return messages.map((m) => m.body.id);
}

async function outboxIds(): Promise<Set<string>> {
  return new Set((await h.db.pool.query<{ id: string }>(`select id from outbox_event`)).rows.map((r) => r.id));
}

/** Every relay event has exactly one notification: no second one from any copy. */
async function expectOneNotificationPerRelayEvent(): Promise<void> {
  const { rows } = await h.db.pool.query<{ n: number }>(
    `select count(n.id)::int as n from outbox_event o left join notification n on n.source_event_id = o.id
     where o.type = $1 group by o.id`,
    [EventType.ContactMessageReceived],
  );
  expect(rows).toHaveLength(CONTACT_MESSAGE_EVENTS);
  expect(rows.every((r) => r.n === 1)).toBe(true);
  expect(await count(`select count(*)::int as n from notification`)).toBe(CONTACT_MESSAGE_EVENTS);
}

describe("republish-outbox after the bus lost the stream", () => {
  it("dry run: counts the window's published rows and touches neither the bus nor the audit log", async () => {
    await jsm.streams.delete(TEST_STREAM);
    const { code, out } = await republish();
    expect(code).toBe(0);
    expect(out).toMatchObject({
      ok: true,
      dryRun: true,
      rows: TOTAL,
      byType: { [EventType.ContactMessageReceived]: CONTACT_MESSAGE_EVENTS, [EventType.AnimalLostReported]: OTHER_EVENTS },
      unpublishedSkipped: 0,
    });
    await expect(jsm.streams.info(TEST_STREAM)).rejects.toBeInstanceOf(JetStreamApiError);
    expect(await count(`select count(*)::int as n from audit_event`)).toBe(0);
  });

  it("--execute recreates the stream, puts every event back once with Nats-Msg-Id = outbox id, and audits the run", async () => {
    const { code, out } = await republish("--execute");
    expect(code).toBe(0);
    expect(out).toMatchObject({ ok: true, dryRun: false, streamCreated: true, rows: TOTAL, published: TOTAL, duplicates: 0, failed: 0 });
    const ids = await streamIds();
    console.log(`[republish] first run: ${out.published} published, ${out.duplicates} duplicates; stream ${ids.length} messages, ${new Set(ids).size} distinct`);
    expect(ids).toHaveLength(TOTAL);
    expect(new Set(ids)).toEqual(await outboxIds());
    const { rows: audit } = await h.db.pool.query(`select actor_id, action, object_type, object_id, metadata from audit_event`);
    expect(audit).toEqual([
      {
        actor_id: "op-9",
        action: "operator.outbox_republished",
        object_type: "outbox_event",
        object_id: `${window[1]}/${window[3]}`,
        metadata: expect.objectContaining({ rows: TOTAL, published: TOTAL, duplicates: 0, failed: 0, streamCreated: true, stream: TEST_STREAM }),
      },
    ]);
    // The notifier re-creates its consumer on the new stream and reads every relay event again: each is already notified.
    await eventually(async () => (contactMessageEventsHandled() >= 2 * CONTACT_MESSAGE_EVENTS ? true : undefined), 30_000);
    await expectOneNotificationPerRelayEvent();
  });

  it("a second run inside the duplicate window adds nothing to the stream: every copy is dropped by Msg-Id", async () => {
    const { code, out } = await republish("--execute");
    expect(code).toBe(0);
    expect(out).toMatchObject({ ok: true, streamCreated: false, published: 0, duplicates: TOTAL, failed: 0 });
    const ids = await streamIds();
    console.log(`[republish] second run: ${out.published} published, ${out.duplicates} duplicates; stream ${ids.length} messages`);
    expect(ids).toHaveLength(TOTAL);
    expect(await count(`select count(*)::int as n from audit_event where action = 'operator.outbox_republished'`)).toBe(2);
  });

  it("a run after the duplicate window has passed lands a second copy of each event, and the notifier still writes no second notification", async () => {
    // Stands in for five minutes passing: the stream forgets the Msg-Ids older than its (now 1 s) window.
    await jsm.streams.update(TEST_STREAM, { duplicate_window: nanos(1_000) });
    // Kept: the window must run out, and the stream shows no sign of having forgotten them.
    await new Promise((r) => setTimeout(r, 1_500));
    const before = contactMessageEventsHandled();
    const { code, out } = await republish("--execute");
    expect(code).toBe(0);
    expect(out).toMatchObject({ ok: true, published: TOTAL, duplicates: 0, failed: 0 });
    const ids = await streamIds();
    console.log(`[republish] run past the window: ${out.published} published; stream ${ids.length} messages, ${new Set(ids).size} distinct`);
    expect(ids).toHaveLength(2 * TOTAL);
    expect(new Set(ids)).toEqual(await outboxIds());
    await eventually(async () => (contactMessageEventsHandled() - before >= CONTACT_MESSAGE_EVENTS ? true : undefined), 30_000);
    await expectOneNotificationPerRelayEvent();
  });

  it("refuses a window whose end is not after its start, exiting 2", async () => {
    const saved = window;
    window = ["--from", "2026-01-02T00:00:00Z", "--to", "2026-01-01T00:00:00Z"];
    try {
      expect((await republish()).code).toBe(2);
    } finally {
      window = saved;
    }
  });
});
