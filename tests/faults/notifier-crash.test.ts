import { describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { useTestStack } from "../helpers/harness.js";
import { eventually } from "../helpers/stream.js";

const EVENTS = 2_000;
const h = useTestStack({ NOTIFIER_ACK_WAIT_MS: "3000" });

async function notifications(): Promise<number> {
  const { rows } = await h.db.pool.query(`select count(*)::int as n from notification`);
  return rows[0].n;
}

describe(`fault: the notifier is killed with SIGKILL while consuming ${EVENTS} events and restarted`, () => {
  it(`ends with exactly ${EVENTS} notifications, and no source event has two`, async () => {
    const notifier = await h.stack.start("notifier");
    await h.db.pool.query(
      `insert into outbox_event (type, payload)
       select $1, jsonb_build_object('recipientActorId', 'owner-' || (n % 50), 'lostReportId', gen_random_uuid(),
         'relayMessageId', gen_random_uuid(), 'message', 'seen ' || n, 'fromContact', 'finder@example.org')
       from generate_series(1, $2::int) n`,
      [EventType.ContactMessageReceived, EVENTS],
    );
    await h.stack.start("relay");
    await eventually(async () => ((await notifications()) > 0 ? true : undefined), 20_000, 5);
    notifier.signal("SIGKILL");
    await notifier.exited;
    const atKill = await notifications();
    console.log(`[notifier-crash] killed with ${atKill} of ${EVENTS} notifications recorded`);
    // The kill must land mid-stream: some events committed, the rest still to consume, so the
    // restarted notifier has to pick up where the dead one stopped (and redeliveries happen).
    expect(atKill).toBeGreaterThan(0);
    expect(atKill).toBeLessThan(EVENTS);

    await h.stack.start("notifier");
    await eventually(async () => ((await notifications()) >= EVENTS ? true : undefined), 60_000);
    await new Promise((r) => setTimeout(r, 4_000)); // past the ack wait: any redelivery has happened
    const { rows } = await h.db.pool.query(
      `select count(*)::int as total, count(distinct source_event_id)::int as distinct_events,
              coalesce(max(c), 0)::int as max_per_event
       from notification, lateral (select count(*) as c from notification n2 where n2.source_event_id = notification.source_event_id) x`,
    );
    console.log(`[notifier-crash] after restart: ${rows[0].total} notifications, ${rows[0].distinct_events} distinct events, max ${rows[0].max_per_event} per event`);
    expect(rows[0]).toEqual({ total: EVENTS, distinct_events: EVENTS, max_per_event: 1 });
    const grouped = await h.db.pool.query(`select source_event_id from notification group by source_event_id having count(*) > 1`);
    expect(grouped.rows).toEqual([]);
  }, 120_000);
});
