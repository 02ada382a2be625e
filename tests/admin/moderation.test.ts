import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { eventually } from "../helpers/stream.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await t?.close();
});

async function report(targetType = "sighting", status = "open"): Promise<{ id: string; targetId: string }> {
  const targetId = crypto.randomUUID();
  const { rows } = await t.db.pool.query(
    `insert into moderation_report (reporter_id, target_type, target_id, reason, details, status)
     values ('reporter-1', $1, $2, 'scam', 'asks for money', $3) returning id`,
    [targetType, targetId, status],
  );
  return { id: rows[0].id, targetId };
}

const claim = (id: string, by = admin()) =>
  t.api.app.inject({ method: "POST", url: `/v1/admin/moderation/${id}/claim`, headers: by });

type ClaimResponse = Awaited<ReturnType<typeof claim>>;

const act = (id: string, body: object, by = admin()) =>
  t.api.app.inject({ method: "POST", url: `/v1/admin/moderation/${id}/action`, headers: by, payload: body });

async function reportRow(id: string) {
  const { rows } = await t.db.pool.query(`select * from moderation_report where id = $1`, [id]);
  return rows[0];
}

async function contentState(targetId: string) {
  const { rows } = await t.db.pool.query(
    `select target_type, state, moderation_report_id, applied_by from moderation_content_state where target_id = $1`,
    [targetId],
  );
  return rows;
}

/** Waits until `n` sessions of this database are blocked on a lock. */
async function waitForLockWaiters(n: number): Promise<void> {
  await eventually(async () => {
    const { rows } = await t.db.pool.query(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
    );
    return rows[0].n >= n ? true : undefined;
  }, 10_000, 20);
}

async function audits(id: string) {
  const { rows } = await t.db.pool.query(
    `select actor_id, action, metadata from audit_event where object_id = $1 order by occurred_at`,
    [id],
  );
  return rows;
}

describe("the moderation queue lists unresolved items oldest first", () => {
  it("lists open, claimed and escalated items, filters by status, and leaves resolved ones out", async () => {
    const open = await report("lost_report", "open");
    const escalated = await report("relay_message", "escalated");
    const resolved = await report("sighting", "resolved");
    const all = await t.api.app.inject({ url: "/v1/admin/moderation/queue?limit=200", headers: admin() });
    expect(all.statusCode).toBe(200);
    const ids = all.json().items.map((i: { id: string }) => i.id);
    expect(ids).toEqual(expect.arrayContaining([open.id, escalated.id]));
    expect(ids).not.toContain(resolved.id);
    expect(ids.indexOf(open.id)).toBeLessThan(ids.indexOf(escalated.id));
    expect(all.json().items.find((i: { id: string }) => i.id === open.id)).toEqual({
      id: open.id,
      reporterId: "reporter-1",
      targetType: "lost_report",
      targetId: open.targetId,
      reason: "scam",
      details: "asks for money",
      status: "open",
      claimedBy: null,
      claimedAt: null,
      resolution: null,
      resolutionNote: null,
      resolvedBy: null,
      resolvedAt: null,
      contentState: null,
      createdAt: expect.any(String),
    });

    const onlyEscalated = await t.api.app.inject({ url: "/v1/admin/moderation/queue?status=escalated", headers: admin() });
    expect(onlyEscalated.json().items.map((i: { status: string }) => i.status)).toEqual(["escalated"]);
    expect((await t.api.app.inject({ url: "/v1/admin/moderation/queue?status=resolved", headers: admin() })).statusCode).toBe(400);
  });

  it("pages with a cursor", async () => {
    const first = await t.api.app.inject({ url: "/v1/admin/moderation/queue?limit=1", headers: admin() });
    const { nextCursor } = first.json();
    expect(nextCursor).toEqual(expect.any(String));
    const second = await t.api.app.inject({ url: `/v1/admin/moderation/queue?limit=1&cursor=${nextCursor}`, headers: admin() });
    expect(second.json().items[0].id).not.toBe(first.json().items[0].id);
  });
});

describe("claiming is atomic: of two admins claiming at once, one wins and the other gets 409", () => {
  it("gives exactly one 200 and one 409 moderation-claimed, and audits only the winner", async () => {
    const { id } = await report();
    // Hold the row so that both claims are in flight at once, then let them race for it.
    const blocker = await t.db.pool.connect();
    let pending: Promise<[ClaimResponse, ClaimResponse]>;
    try {
      await blocker.query("begin");
      await blocker.query("select 1 from moderation_report where id = $1 for update", [id]);
      pending = Promise.all([claim(id, admin("admin-a")), claim(id, admin("admin-b"))]);
      await waitForLockWaiters(2);
    } finally {
      await blocker.query("commit");
      blocker.release();
    }
    const [a, b] = await pending;
    const statuses = [a.statusCode, b.statusCode].sort();
    expect(statuses).toEqual([200, 409]);
    const winner = a.statusCode === 200 ? "admin-a" : "admin-b";
    const loser = a.statusCode === 200 ? b : a;
    expect(loser.json()).toMatchObject({ type: expect.stringMatching(/\/moderation-claimed$/), status: 409 });
    expect(await reportRow(id)).toMatchObject({ status: "claimed", claimed_by: winner });
    expect(await audits(id)).toEqual([
      { actor_id: winner, action: "admin.moderation.claimed", metadata: { targetType: "sighting", targetId: expect.any(String) } },
    ]);
  });

  it("lets the holder claim again as a no-op that keeps the claim time", async () => {
    const { id } = await report();
    const first = await claim(id);
    const again = await claim(id);
    expect(again.statusCode).toBe(200);
    expect(again.json().claimedAt).toBe(first.json().claimedAt);
    // Nothing changed, so nothing is audited: one claim event, not two.
    expect((await audits(id)).map((a) => a.action)).toEqual(["admin.moderation.claimed"]);
  });

  it("answers 404 for an unknown item and 409 conflict for a resolved one", async () => {
    expect((await claim(crypto.randomUUID())).statusCode).toBe(404);
    const { id } = await report("sighting", "resolved");
    const res = await claim(id);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/conflict$/) });
  });
});

describe("only the admin holding the claim can act", () => {
  it("refuses an unclaimed item with 409 conflict and another admin's item with 409 moderation-claimed", async () => {
    const { id } = await report();
    const unclaimed = await act(id, { action: "dismiss" });
    expect(unclaimed.statusCode).toBe(409);
    expect(unclaimed.json()).toMatchObject({ type: expect.stringMatching(/\/conflict$/) });
    await claim(id, admin("admin-a"));
    const other = await act(id, { action: "dismiss" }, admin("admin-b"));
    expect(other.statusCode).toBe(409);
    expect(other.json()).toMatchObject({ type: expect.stringMatching(/\/moderation-claimed$/) });
    expect(await reportRow(id)).toMatchObject({ status: "claimed", resolution: null });
    expect((await audits(id)).map((a) => a.action)).toEqual(["admin.moderation.claimed"]);
  });

  it.each([
    ["an unknown action", { action: "ban" }],
    ["no action", {}],
    ["a blank note", { action: "dismiss", note: "  " }],
  ])("refuses %s with 400 and changes nothing", async (_name, body) => {
    const { id } = await report();
    await claim(id);
    const res = await act(id, body);
    expect(res.statusCode).toBe(400);
    expect(await reportRow(id)).toMatchObject({ status: "claimed", resolution: null });
  });
});

describe("actions: dismiss and warn resolve, quarantine and remove also set the content state, escalate releases the claim", () => {
  it.each(["dismiss", "warn"])("%s resolves the item without touching the content", async (action) => {
    const { id, targetId } = await report();
    await claim(id);
    const res = await act(id, { action, note: "not a scam" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id, status: "resolved", resolution: action, resolvedBy: "admin-1", resolutionNote: "not a scam" });
    expect(await contentState(targetId)).toEqual([]);
    expect((await audits(id)).at(-1)).toEqual({
      actor_id: "admin-1",
      action: "admin.moderation.actioned",
      metadata: { action, note: "not a scam", targetType: "sighting", targetId, contentState: null },
    });
  });

  it.each([
    ["quarantine", "quarantined"],
    ["remove", "removed"],
  ])("%s writes moderation_content_state for the target and resolves the item", async (action, state) => {
    const { id, targetId } = await report("relay_message");
    await claim(id);
    const res = await act(id, { action });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: "resolved", resolution: action, contentState: state });
    expect(await contentState(targetId)).toEqual([
      { target_type: "relay_message", state, moderation_report_id: id, applied_by: "admin-1" },
    ]);
    expect((await audits(id)).at(-1)).toMatchObject({
      action: "admin.moderation.actioned",
      metadata: { action, targetType: "relay_message", targetId, contentState: state },
    });
  });

  it("a later decision on the same content replaces the earlier state", async () => {
    const first = await report("sighting");
    await claim(first.id);
    await act(first.id, { action: "quarantine" });
    const { rows } = await t.db.pool.query(
      `insert into moderation_report (reporter_id, target_type, target_id, reason) values ('reporter-2', 'sighting', $1, 'abuse') returning id`,
      [first.targetId],
    );
    await claim(rows[0].id);
    await act(rows[0].id, { action: "remove" });
    expect(await contentState(first.targetId)).toEqual([
      { target_type: "sighting", state: "removed", moderation_report_id: rows[0].id, applied_by: "admin-1" },
    ]);
  });

  it("escalate puts the item back as escalated with no holder, and another admin can claim and resolve it", async () => {
    const { id } = await report();
    await claim(id, admin("admin-junior"));
    const res = await act(id, { action: "escalate", note: "needs legal review" }, admin("admin-junior"));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: "escalated", claimedBy: null, resolution: null, resolutionNote: "needs legal review" });
    expect((await claim(id, admin("admin-senior"))).statusCode).toBe(200);
    expect((await act(id, { action: "remove" }, admin("admin-senior"))).json()).toMatchObject({ status: "resolved", resolvedBy: "admin-senior" });
    expect((await audits(id)).map((a) => [a.actor_id, a.action, a.metadata.action ?? null])).toEqual([
      ["admin-junior", "admin.moderation.claimed", null],
      ["admin-junior", "admin.moderation.actioned", "escalate"],
      ["admin-senior", "admin.moderation.claimed", null],
      ["admin-senior", "admin.moderation.actioned", "remove"],
    ]);
  });

  it("refuses to act on a resolved item with 409 conflict", async () => {
    const { id } = await report();
    await claim(id);
    await act(id, { action: "dismiss" });
    const res = await act(id, { action: "remove" });
    expect(res.statusCode).toBe(409);
    expect(await reportRow(id)).toMatchObject({ resolution: "dismiss" });
  });
});
