import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { buildDeliverers } from "../../jobs/delivery/deliverers/index.js";
import { deliveryLockKey, type Channel, type NotificationStatus } from "../../lib/notifications.js";
import { insertNotification } from "../../lib/notification-rows.js";
import { admin, as, type TestApi } from "../helpers/app.js";
import type { TestDatabase } from "../helpers/db.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { eventually } from "../helpers/stream.js";
import { SmtpReply, startSmtpServer, type TestSmtpServer } from "../notifier/smtp.js";
import { deliveryJobsFor, startDeliveryWorker } from "../notifier/support.js";
import type { SupervisedWorker } from "../../lib/worker.js";

let h: Harness;
let db: TestDatabase;
let api: TestApi;

interface Seed {
  recipient: string;
  channel?: Channel;
  status?: NotificationStatus;
  lastError?: string | null;
  sourceKey?: string;
  sourceEventId?: string;
  updatedAt?: string;
  createdAt?: string;
}

/** A notification row as the notifier leaves it, with the given outcome. */
async function seed(s: Seed): Promise<string> {
  const id = await insertNotification(api.pool, {
    recipientActorId: s.recipient,
    channel: s.channel ?? "email",
    sourceEventId: s.sourceEventId ?? randomUUID(),
    sourceOccurredAt: new Date(),
    sourceKey: s.sourceKey ?? `relay_message:${randomUUID()}`,
    eventType: EventType.ContactMessageReceived,
    kind: "relay_message",
    data: {},
    subject: "Someone sent a message about your lost animal",
    body: `message for ${s.recipient}`,
  });
  await api.pool.query(
    `update notification set status = $2, last_error = $3, attempts = case when $2 = 'pending' then 0 else 1 end,
       round_attempts = case when $2 = 'pending' then 0 else 1 end,
       updated_at = coalesce($4::timestamptz, now()), created_at = coalesce($5::timestamptz, created_at)
     where id = $1`,
    [id, s.status ?? "pending", s.lastError ?? null, s.updatedAt ?? null, s.createdAt ?? null],
  );
  return id!;
}

async function auditFor(id: string) {
  const { rows } = await api.pool.query(`select * from audit_event where object_id = $1 order by occurred_at`, [id]);
  return rows;
}

/** Follows nextCursor from the first page to the last; the ids in order. */
async function collectPages(url: string, headers: Record<string, string>): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await api.app.inject({ method: "GET", url: `${url}${cursor ? `&cursor=${cursor}` : ""}`, headers });
    expect(res.statusCode).toBe(200);
    const body: { items: { id: string }[]; nextCursor: string | null } = res.json();
    seen.push(...body.items.map((i) => i.id));
    cursor = body.nextCursor;
  } while (cursor);
  return seen;
}

beforeAll(async () => {
  h = await startHarness();
  ({ db, api } = h);
});

afterAll(async () => {
  await h?.close();
});

describe("PUT /v1/me/notification-preferences chooses the email address and which kinds go by email", () => {
  it("defaults to in_app only with no address, and stores a chosen channel and address", async () => {
    const before = await api.app.inject({ method: "GET", url: "/v1/me/notification-preferences", headers: as("pref-1") });
    expect(before.json()).toEqual({
      channel: "in_app",
      email: null,
      emailStatus: "none",
      emailKinds: null,
      pushKinds: null,
      smsKinds: null,
      phoneStatus: "none",
      phoneEnding: null,
      updatedAt: null,
    });

    const put = await api.app.inject({
      method: "PUT",
      url: "/v1/me/notification-preferences",
      headers: as("pref-1"),
      payload: { channel: "in_app", email: "owner@example.org" },
    });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toMatchObject({ channel: "in_app", email: "owner@example.org", emailKinds: [] });
    const { rows } = await api.pool.query(`select email_kinds, email from notification_preference where actor_id = 'pref-1'`);
    expect(rows).toEqual([{ email_kinds: [], email: "owner@example.org" }]);
  });

  it("takes emailKinds, and an address alone means email for every kind", async () => {
    const some = await api.app.inject({
      method: "PUT",
      url: "/v1/me/notification-preferences",
      headers: as("pref-3"),
      payload: { email: "kinds@example.org", emailKinds: ["relay_message", "match"] },
    });
    expect(some.json()).toMatchObject({ channel: "email", email: "kinds@example.org", emailKinds: ["relay_message", "match"] });
    const all = await api.app.inject({ method: "PUT", url: "/v1/me/notification-preferences", headers: as("pref-3"), payload: { email: "kinds@example.org" } });
    expect(all.json()).toMatchObject({ channel: "email", emailKinds: null });
  });

  it("keeps the stored address when email is omitted and clears it on null", async () => {
    await api.app.inject({ method: "PUT", url: "/v1/me/notification-preferences", headers: as("pref-2"), payload: { channel: "email", email: "a@example.org" } });
    const kept = await api.app.inject({ method: "PUT", url: "/v1/me/notification-preferences", headers: as("pref-2"), payload: { channel: "in_app" } });
    expect(kept.json()).toMatchObject({ channel: "in_app", email: "a@example.org" });
    const cleared = await api.app.inject({ method: "PUT", url: "/v1/me/notification-preferences", headers: as("pref-2"), payload: { channel: "email", email: null } });
    // No address left, so nothing goes by email whatever the kinds: the single-channel view says in_app.
    expect(cleared.json()).toMatchObject({ channel: "in_app", email: null, emailKinds: null });
  });

  it.each([
    [{ channel: "sms" }],
    [{ channel: "email", email: "not-an-address" }],
    [{}],
    [{ channel: "email", extra: true }],
    [{ emailKinds: ["carrier_pigeon"] }],
  ])("refuses %j with 400 validation-failed and writes nothing", async (payload) => {
    const res = await api.app.inject({ method: "PUT", url: "/v1/me/notification-preferences", headers: as("pref-bad"), payload });
    expect(res.statusCode).toBe(400);
    expect(res.json().type).toMatch(/\/validation-failed$/);
    const { rows } = await api.pool.query(`select 1 from notification_preference where actor_id = 'pref-bad'`);
    expect(rows).toHaveLength(0);
  });

  it("requires an authenticated actor", async () => {
    const res = await api.app.inject({ method: "PUT", url: "/v1/me/notification-preferences", payload: { channel: "email" } });
    expect(res.statusCode).toBe(401);
  });
});

describe("GET /v1/me/notifications lists the caller's notifications on every channel, newest first, paginated", () => {
  it("returns only the caller's rows, newest first, across pages with no gap or repeat", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        await seed({
          recipient: "reader-1",
          channel: i % 2 === 0 ? "email" : "in_app",
          status: i % 2 === 0 ? "dead_letter" : "sent",
          createdAt: `2026-01-01T00:00:0${i}.000001Z`,
        }),
      );
    }
    await seed({ recipient: "someone-else" });

    const seen = await collectPages("/v1/me/notifications?limit=2", as("reader-1"));
    expect(seen).toEqual([...ids].reverse());

    const first = (await api.app.inject({ method: "GET", url: "/v1/me/notifications?limit=1", headers: as("reader-1") })).json();
    expect(first.items[0]).toMatchObject({
      id: ids[4],
      channel: "email",
      status: "dead_letter",
      kind: "relay_message",
      body: "message for reader-1",
      readAt: null,
    });
  });

  it("refuses a cursor it did not issue with 400", async () => {
    const res = await api.app.inject({ method: "GET", url: "/v1/me/notifications?cursor=bogus", headers: as("reader-1") });
    expect(res.statusCode).toBe(400);
  });
});

describe("GET /v1/admin/notifications/failures lists failed and dead_letter notifications", () => {
  it("covers failed and dead_letter only, filters by status and channel, and derives reasonCategory", async () => {
    const dead = await seed({ recipient: "fail-1", channel: "email", status: "dead_letter", lastError: "no deliverer configured for channel email" });
    const transient = await seed({ recipient: "fail-2", channel: "email", status: "failed", lastError: "ESOCKET: connect ECONNREFUSED 127.0.0.1:25" });
    const sent = await seed({ recipient: "fail-3", channel: "in_app", status: "sent" });

    const all = (await api.app.inject({ method: "GET", url: "/v1/admin/notifications/failures?limit=200", headers: admin() })).json();
    const byId = new Map(all.items.map((i: { id: string }) => [i.id, i]));
    expect(byId.has(sent)).toBe(false);
    expect(byId.get(dead)).toMatchObject({
      id: dead,
      recipientActorId: "fail-1",
      channel: "email",
      status: "dead_letter",
      attempts: 1,
      lastError: "no deliverer configured for channel email",
      reasonCategory: "permanent",
    });
    expect(byId.get(transient)).toMatchObject({ status: "failed", reasonCategory: "transient" });
    for (const item of all.items) expect(["failed", "dead_letter"]).toContain(item.status);

    const onlyFailed = (await api.app.inject({ method: "GET", url: "/v1/admin/notifications/failures?status=failed", headers: admin() })).json();
    expect(onlyFailed.items.every((i: { status: string }) => i.status === "failed")).toBe(true);
    expect(onlyFailed.items.map((i: { id: string }) => i.id)).toContain(transient);

    const inApp = (await api.app.inject({ method: "GET", url: "/v1/admin/notifications/failures?channel=in_app", headers: admin() })).json();
    expect(inApp.items.map((i: { id: string }) => i.id)).not.toContain(dead);
  });

  it("pages by updated_at then id with an opaque cursor, even for rows updated in the same millisecond", async () => {
    const same = "2025-06-01T10:00:00.000123Z";
    const ids = await Promise.all(
      [0, 1, 2, 3, 4].map(() => seed({ recipient: "page-1", channel: "in_app", status: "dead_letter", lastError: "ETIMEDOUT", updatedAt: same })),
    );
    const seen = await collectPages("/v1/admin/notifications/failures?channel=in_app&limit=2", admin());
    expect(seen.filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("refuses a bad filter with 400 and a non-admin with 403", async () => {
    expect((await api.app.inject({ method: "GET", url: "/v1/admin/notifications/failures?status=sent", headers: admin() })).statusCode).toBe(400);
    expect((await api.app.inject({ method: "GET", url: "/v1/admin/notifications/failures?limit=500", headers: admin() })).statusCode).toBe(400);
    expect((await api.app.inject({ method: "GET", url: "/v1/admin/notifications/failures", headers: as("not-admin") })).statusCode).toBe(403);
  });
});

describe("POST /v1/admin/notifications/{id}/replay refuses ineligible notifications with the contract's reasons", () => {
  it.each(["pending", "sent"] as const)("refuses a %s notification with reason status", async (status) => {
    const id = await seed({ recipient: "replay-status", status });
    const res = await api.app.inject({ method: "POST", url: `/v1/admin/notifications/${id}/replay`, headers: admin() });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/replay-not-eligible$/), reason: "status" });
    expect(await auditFor(id)).toHaveLength(0);
  });

  it("refuses a permanent failure, saying a configured delivery provider is needed, not a resend", async () => {
    const id = await seed({ recipient: "replay-perm", status: "dead_letter", lastError: "no deliverer configured for channel email" });
    const res = await api.app.inject({ method: "POST", url: `/v1/admin/notifications/${id}/replay`, headers: admin() });
    expect(res.statusCode).toBe(409);
    expect(res.json().reason).toBe("permanent");
    expect(res.json().detail).toMatch(/a configured delivery provider is needed, not a resend/);
    expect((await api.pool.query(`select status from notification where id = $1`, [id])).rows[0].status).toBe("dead_letter");
  });

  it("refuses as superseded when a later notification for the same message was sent", async () => {
    const key = `relay_message:${randomUUID()}`;
    const older = await seed({ recipient: "replay-sup", status: "dead_letter", lastError: "ETIMEDOUT: timeout", sourceKey: key, createdAt: "2026-01-01T00:00:00Z" });
    await seed({ recipient: "replay-sup", channel: "in_app", status: "sent", sourceKey: key, createdAt: "2026-01-01T00:05:00Z" });
    const res = await api.app.inject({ method: "POST", url: `/v1/admin/notifications/${older}/replay`, headers: admin() });
    expect(res.statusCode).toBe(409);
    expect(res.json().reason).toBe("superseded");
    expect(await auditFor(older)).toHaveLength(0);
  });

  it("the same event's in-app notification does not supersede its failed email", async () => {
    const key = `relay_message:${randomUUID()}`;
    const sourceEventId = randomUUID();
    const email = await seed({ recipient: "replay-twin", status: "dead_letter", lastError: "ETIMEDOUT", sourceKey: key, sourceEventId, createdAt: "2026-01-01T00:00:00Z" });
    await seed({ recipient: "replay-twin", channel: "in_app", status: "sent", sourceKey: key, sourceEventId, createdAt: "2026-01-01T00:00:01Z" });
    const res = await api.app.inject({ method: "POST", url: `/v1/admin/notifications/${email}/replay`, headers: admin() });
    expect(res.statusCode, res.body).toBe(200);
  });

  it("an earlier sent notification for the same message does not supersede a later failed one", async () => {
    const key = `relay_message:${randomUUID()}`;
    await seed({ recipient: "replay-order", channel: "in_app", status: "sent", sourceKey: key, createdAt: "2026-01-01T00:00:00Z" });
    const later = await seed({ recipient: "replay-order", status: "dead_letter", lastError: "ETIMEDOUT", sourceKey: key, createdAt: "2026-01-01T00:05:00Z" });
    const res = await api.app.inject({ method: "POST", url: `/v1/admin/notifications/${later}/replay`, headers: admin() });
    expect(res.statusCode).toBe(200);
  });

  it("answers 404 for an unknown id and 400 for a malformed one", async () => {
    expect((await api.app.inject({ method: "POST", url: `/v1/admin/notifications/${randomUUID()}/replay`, headers: admin() })).statusCode).toBe(404);
    expect((await api.app.inject({ method: "POST", url: `/v1/admin/notifications/not-a-uuid/replay`, headers: admin() })).statusCode).toBe(400);
  });
});

describe("replay re-attempts through the same delivery job and is audited", () => {
  /** A mailbox whose server defers every delivery (451). */
  const ALWAYS_DEFERRED = "deferred@example.org";
  let smtp: TestSmtpServer;
  let runner: SupervisedWorker;

  beforeAll(async () => {
    smtp = await startSmtpServer(async (address) => {
      if (address === ALWAYS_DEFERRED) throw new SmtpReply(451, "try again later");
    });
    runner = await startDeliveryWorker(api.pool, buildDeliverers({ SMTP_URL: smtp.url, SMTP_FROM: "no-reply@example.org" }));
  });

  afterAll(async () => {
    await runner?.stop();
    await smtp?.close();
  });

  it("queues notification__deliver, answers pending, writes admin.notification.replayed, and the email is then sent", async () => {
    await api.pool.query(`insert into notification_preference (actor_id, email) values ('replay-ok', 'ok@example.org')`);
    const id = await seed({ recipient: "replay-ok", status: "dead_letter", lastError: "ESOCKET: connect ECONNREFUSED 127.0.0.1:25" });

    const res = await api.app.inject({ method: "POST", url: `/v1/admin/notifications/${id}/replay`, headers: admin("admin-replayer") });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id, previousStatus: "dead_letter", status: "pending" });

    const audits = await auditFor(id);
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({
      actor_id: "admin-replayer",
      action: "admin.notification.replayed",
      object_type: "notification",
      metadata: { previousStatus: "dead_letter", newStatus: "pending", channel: "email", recipientActorId: "replay-ok" },
    });

    const done = await eventually(async () => {
      const { rows } = await api.pool.query(`select status, attempts from notification where id = $1`, [id]);
      return rows[0].status === "sent" ? rows[0] : undefined;
    });
    expect(done.attempts).toBe(2);
    expect(smtp.received.map((m) => m.to)).toContainEqual(["ok@example.org"]);
  });

  it("gives a dead-lettered notification a fresh round of 3 attempts; attempts keeps the lifetime total", async () => {
    await api.pool.query(`insert into notification_preference (actor_id, email) values ('replay-round', $1)`, [ALWAYS_DEFERRED]);
    const id = await seed({ recipient: "replay-round", status: "dead_letter", lastError: "smtp 451: try again later" });
    await api.pool.query(`update notification set attempts = 3, round_attempts = 3 where id = $1`, [id]);

    const res = await api.app.inject({ method: "POST", url: `/v1/admin/notifications/${id}/replay`, headers: admin() });
    expect(res.statusCode).toBe(200);
    const done = await eventually(async () => {
      const { rows } = await api.pool.query(`select status, attempts, round_attempts from notification where id = $1`, [id]);
      return rows[0].status === "dead_letter" && rows[0].attempts > 3 ? rows[0] : undefined;
    });
    expect(done).toEqual({ status: "dead_letter", attempts: 6, round_attempts: 3 });
    expect(smtp.rcptAttempts.filter((a) => a === ALWAYS_DEFERRED)).toHaveLength(3);
  });

  it("refuses with reason status while a delivery of the notification is running, and queues nothing", async () => {
    const id = await seed({ recipient: "replay-running", status: "failed", lastError: "smtp 451: try later" });
    const delivering = await api.pool.connect();
    try {
      // What a running delivery job holds for its whole run.
      await delivering.query(`select pg_advisory_lock(hashtextextended($1, 0))`, [deliveryLockKey(id)]);
      const res = await api.app.inject({ method: "POST", url: `/v1/admin/notifications/${id}/replay`, headers: admin() });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toMatchObject({ reason: "status", detail: expect.stringMatching(/running/) });
      expect(await deliveryJobsFor(api.pool, id)).toBe(0);
      expect(await auditFor(id)).toHaveLength(0);
    } finally {
      await delivering.query(`select pg_advisory_unlock_all()`);
      delivering.release();
    }
  });
});

describe("POST /v1/me/notifications/{id}/read sets readAt for the recipient only", () => {
  it("marks the caller's notification read once, and answers 404 for another actor's", async () => {
    const id = await seed({ recipient: "read-1", channel: "in_app", status: "sent" });
    const stranger = await api.app.inject({ method: "POST", url: `/v1/me/notifications/${id}/read`, headers: as("read-2") });
    expect(stranger.statusCode).toBe(404);
    expect((await api.pool.query(`select read_at from notification where id = $1`, [id])).rows[0].read_at).toBeNull();

    const first = await api.app.inject({ method: "POST", url: `/v1/me/notifications/${id}/read`, headers: as("read-1") });
    expect(first.statusCode).toBe(200);
    const readAt = first.json().readAt;
    expect(Date.parse(readAt)).not.toBeNaN();
    const again = await api.app.inject({ method: "POST", url: `/v1/me/notifications/${id}/read`, headers: as("read-1") });
    expect(again.json().readAt).toBe(readAt);
    const listed = (await api.app.inject({ method: "GET", url: "/v1/me/notifications", headers: as("read-1") })).json();
    expect(listed.items[0]).toMatchObject({ id, readAt });
  });
});
