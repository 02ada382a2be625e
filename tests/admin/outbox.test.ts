import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MASK } from "../../api/admin/outbox/mask.js";
import { EventType } from "../../lib/events.js";
import { admin, TEST_STREAM } from "../helpers/app.js";
import { withFailingAuditInsert } from "../helpers/db.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { eventually, readStream } from "../helpers/stream.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await t?.close();
});

/** An outbox row that became unpublished `ageSeconds` ago (no relay runs in this file). */
async function outboxRow(
  ageSeconds: number,
  payload: Record<string, unknown> = { reportId: crypto.randomUUID() },
  extra: { requeueCount?: number; published?: boolean } = {},
): Promise<string> {
  const { rows } = await t.db.pool.query(
    `insert into outbox_event (type, payload, occurred_at, requeue_count, published_at)
     values ($1, $2, now() - make_interval(secs => $3), $4, case when $5 then now() end) returning id`,
    [EventType.ContactMessageReceived, payload, ageSeconds, extra.requeueCount ?? 0, extra.published ?? false],
  );
  return rows[0].id;
}

async function listStuck(query = "") {
  return t.api.app.inject({ url: `/v1/admin/outbox/stuck${query}`, headers: admin() });
}

function requeue(id: string, by = admin()) {
  return t.api.app.inject({ method: "POST", url: `/v1/admin/outbox/${id}/requeue`, headers: by });
}

async function outboxState(id: string) {
  const { rows } = await t.db.pool.query(`select requeue_count, published_at from outbox_event where id = $1`, [id]);
  return rows[0];
}

async function requeueAudits(id: string) {
  const { rows } = await t.db.pool.query(
    `select actor_id, metadata from audit_event where action = 'admin.outbox.requeued' and object_id = $1 order by occurred_at`,
    [id],
  );
  return rows;
}

async function streamCopiesOf(id: string) {
  return (await readStream(t.api.nc, TEST_STREAM)).filter((m) => m.msgId === id);
}

describe("GET /v1/admin/outbox/stuck lists unpublished rows older than olderThan (default 5m)", () => {
  let old: string;
  let recent: string;
  let published: string;

  beforeAll(async () => {
    old = await outboxRow(3600, {
      reportId: "r-1",
      fromContact: "finder@example.com",
      message: "call me",
      nested: { location: { lat: 1, lon: 2 }, phone: "123" },
    });
    recent = await outboxRow(120);
    published = await outboxRow(7200, {}, { published: true });
  });

  it("uses 5 minutes when olderThan is omitted, and returns each row with its age, count and masked payload", async () => {
    const res = await listStuck();
    expect(res.statusCode).toBe(200);
    const body = res.json();
    const ids = body.items.map((i: { id: string }) => i.id);
    expect(ids).toContain(old);
    expect(ids).not.toContain(recent);
    expect(ids).not.toContain(published);
    expect(body.items.find((i: { id: string }) => i.id === old)).toEqual({
      id: old,
      type: EventType.ContactMessageReceived,
      occurredAt: expect.any(String),
      ageSeconds: expect.any(Number),
      requeueCount: 0,
      payload: { reportId: "r-1", fromContact: MASK, message: MASK, nested: { location: MASK, phone: MASK } },
    });
    expect(body.items.find((i: { id: string }) => i.id === old).ageSeconds).toBeGreaterThanOrEqual(3600);
  });

  it("accepts durations such as 90s and 1h", async () => {
    const ninety = (await listStuck("?olderThan=90s")).json().items.map((i: { id: string }) => i.id);
    expect(ninety).toEqual(expect.arrayContaining([old, recent]));
    const hour = (await listStuck("?olderThan=2h")).json().items.map((i: { id: string }) => i.id);
    expect(hour).not.toContain(old);
  });

  it.each(["5", "5 minutes", "-5m", "1w", "", "999999999h"])("refuses olderThan=%s with 400 validation-failed", async (value) => {
    const res = await listStuck(`?olderThan=${encodeURIComponent(value)}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/validation-failed$/) });
  });

  it("pages oldest first with a cursor, without repeating or skipping rows", async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await outboxRow(86_400 + i));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await listStuck(`?olderThan=1d&limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      seen.push(...body.items.map((i: { id: string }) => i.id));
      cursor = body.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
  });

  it("refuses a cursor it did not issue with 400", async () => {
    expect((await listStuck("?cursor=bm90LWEtY3Vyc29y")).statusCode).toBe(400);
  });
});

describe("POST /v1/admin/outbox/{id}/requeue re-publishes through the relay's path and audits each attempt", () => {
  it("publishes the row with Nats-Msg-Id = outbox id, marks it published and audits admin.outbox.requeued", async () => {
    const id = await outboxRow(600, { reportId: "r-requeue", fromContact: "a@example.com" });
    const res = await requeue(id, admin("admin-ops"));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id, published: true, requeueCount: 1 });

    const copies = await streamCopiesOf(id);
    expect(copies).toHaveLength(1);
    expect(copies[0]!.subject).toBe(EventType.ContactMessageReceived);
    // The bus gets the real payload; only the admin listing masks it.
    expect(copies[0]!.body).toMatchObject({ id, type: EventType.ContactMessageReceived, data: { fromContact: "a@example.com" } });

    expect(await outboxState(id)).toMatchObject({ requeue_count: 1, published_at: expect.any(Date) });
    expect(await requeueAudits(id)).toEqual([
      {
        actor_id: "admin-ops",
        metadata: { eventType: EventType.ContactMessageReceived, requeueCount: 1, published: true, flagged: false },
      },
    ]);
  });

  it("counts an attempt the bus did not ack, leaves the row unpublished, and flags the audit from the 2nd requeue", async () => {
    if (!t.bus.server) return expect.fail("this test needs its own nats-server");
    const id = await outboxRow(600);
    await t.bus.server.stop();
    try {
      const failed = await requeue(id);
      expect(failed.statusCode).toBe(200);
      expect(failed.json()).toEqual({ id, published: false, requeueCount: 1 });
      expect(await outboxState(id)).toEqual({ requeue_count: 1, published_at: null });
    } finally {
      await t.bus.server.start();
    }
    await eventually(async () => ((await jetstreamManager(t.api.nc)).streams.info(TEST_STREAM), true));
    const retried = await requeue(id);
    expect(retried.json()).toEqual({ id, published: true, requeueCount: 2 });
    expect((await requeueAudits(id)).map((a) => [a.metadata.requeueCount, a.metadata.published, a.metadata.flagged])).toEqual([
      [1, false, false],
      [2, true, true],
    ]);
    expect(await streamCopiesOf(id)).toHaveLength(1);
  });

  it("allows the 5th requeue and refuses the 6th with 409 requeue-limit-reached, changing nothing", async () => {
    const id = await outboxRow(600, {}, { requeueCount: 4 });
    const fifth = await requeue(id);
    expect(fifth.json()).toEqual({ id, published: true, requeueCount: 5 });
    const before = await outboxState(id);

    const sixth = await requeue(id);
    expect(sixth.statusCode).toBe(409);
    expect(sixth.json()).toMatchObject({ type: expect.stringMatching(/\/requeue-limit-reached$/), status: 409 });
    expect(await outboxState(id)).toEqual(before);
    expect((await requeueAudits(id)).map((a) => a.metadata)).toEqual([
      { eventType: EventType.ContactMessageReceived, requeueCount: 5, published: true, flagged: true },
    ]);
    expect(await streamCopiesOf(id)).toHaveLength(1);
  });

  it("refuses an already published event with 409 conflict and changes nothing", async () => {
    const id = await outboxRow(600, {}, { published: true });
    const res = await requeue(id);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/conflict$/) });
    expect(await outboxState(id)).toMatchObject({ requeue_count: 0 });
    expect(await requeueAudits(id)).toEqual([]);
    expect(await streamCopiesOf(id)).toHaveLength(0);
  });

  it("answers 404 for an unknown id and 400 for an id that is not a UUID", async () => {
    expect((await requeue(crypto.randomUUID())).statusCode).toBe(404);
    expect((await requeue("not-a-uuid")).statusCode).toBe(400);
  });

  it("rolls the count back when the audit event cannot be written", async () => {
    const id = await outboxRow(600);
    await withFailingAuditInsert(t.db.pool, async () => expect((await requeue(id)).statusCode).toBe(500));
    expect(await outboxState(id)).toEqual({ requeue_count: 0, published_at: null });
  });
});
