import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, as } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { eventually } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, freshActor } from "../safety/helpers.js";

/**
 * Every event that concerns a person reaches them: each case starts at an
 * API call and ends at GET /v1/me/notifications, through the outbox, the
 * relay, JetStream and the notifier.
 */
let h: Harness;
let pipeline: Pipeline;

beforeAll(async () => {
  h = await startHarness();
  pipeline = await startPipeline(h.api.pool, h.api.nc);
});
afterAll(async () => {
  await pipeline?.stop();
  await h?.close();
});

interface Listed {
  id: string;
  kind: string;
  channel: string;
  status: string;
  subject: string;
  body: string;
  data: Record<string, string>;
}

async function myNotifications(actor: string): Promise<Listed[]> {
  const res = await call(h.api, { method: "GET", url: "/v1/me/notifications", headers: as(actor) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().items;
}

/** Waits until the actor has `count` notifications of the kind, every one delivered or dead-lettered. */
function arrived(actor: string, kind: string, count = 1): Promise<Listed[]> {
  return eventually(async () => {
    const items = (await myNotifications(actor)).filter((n) => n.kind === kind);
    return items.length === count && items.every((n) => n.status !== "pending") ? items : undefined;
  }, 15_000);
}

const relay = (path: string, id: string, message: string) =>
  call(h.api, {
    method: "POST",
    url: `/v1/safety/${path}/${id}/relay-message`,
    payload: { message, fromContact: "finder@example.org" },
  });

describe("contact messages reach the reporter of a lost or a found report", () => {
  it("a lost report's owner reads the message in the app, with the report id to follow", async () => {
    const owner = freshActor("owner");
    const reportId = await createLostReport(h.api, owner);
    expect((await relay("lost-reports", reportId, "I think I saw Rex")).statusCode).toBe(202);
    const [n] = await arrived(owner, "relay_message");
    expect(n).toMatchObject({ channel: "in_app", status: "sent", data: { lostReportId: reportId } });
    expect(n!.body).toContain("I think I saw Rex");
    expect(n!.subject).toMatch(/your lost animal/);
  });

  it("a finder who filed a found report can be reached without being exposed", async () => {
    const finder = freshActor("finder");
    const reportId = await createFoundReport(h.api, finder);
    const res = await relay("found-reports", reportId, "That is my cat, Mimi");
    expect(res.statusCode, res.body).toBe(202);
    const [n] = await arrived(finder, "relay_message");
    expect(n).toMatchObject({ data: { foundReportId: reportId, relayMessageId: res.json().id } });
    expect(n!.subject).toMatch(/the animal you found/);
  });
});

describe("a sighting on my lost report tells me", () => {
  it("notifies the owner of a neighbour's sighting, never of their own", async () => {
    const owner = freshActor("owner");
    const neighbour = freshActor("neighbour");
    const lostReportId = await createLostReport(h.api, owner);
    const sighting = (actor: string) =>
      call(h.api, {
        method: "POST",
        url: "/v1/safety/sightings",
        headers: as(actor),
        payload: { lostReportId, location: { lat: 48.857, lon: 2.353 }, seenAt: new Date().toISOString() },
      });
    const own = await sighting(owner);
    expect(own.statusCode).toBe(201);
    const theirs = await sighting(neighbour);
    expect(theirs.statusCode).toBe(201);
    const [n] = await arrived(owner, "sighting");
    expect(n!.data).toEqual({ lostReportId, sightingId: theirs.json().id });
    expect(n!.body).not.toContain("48.857,");
    expect((await myNotifications(owner)).filter((x) => x.kind === "sighting")).toHaveLength(1);
  });
});

describe("my content quarantined or removed tells me", () => {
  it("notifies the report's author when an admin quarantines it", async () => {
    const author = freshActor("author");
    const reportId = await createLostReport(h.api, author);
    const flagged = await call(h.api, {
      method: "POST",
      url: "/v1/moderation/reports",
      headers: as(freshActor("reader")),
      payload: { targetType: "lost_report", targetId: reportId, reason: "scam" },
    });
    expect(flagged.statusCode).toBe(201);
    const itemId = flagged.json().id;
    const moderator = admin("moderator-1");
    expect((await call(h.api, { method: "POST", url: `/v1/admin/moderation/${itemId}/claim`, headers: moderator })).statusCode).toBe(200);
    const acted = await call(h.api, {
      method: "POST",
      url: `/v1/admin/moderation/${itemId}/action`,
      headers: moderator,
      payload: { action: "quarantine" },
    });
    expect(acted.statusCode, acted.body).toBe(200);
    const [n] = await arrived(author, "content_moderated");
    expect(n!.data).toMatchObject({ targetType: "lost_report", targetId: reportId, lostReportId: reportId });
    expect(n!.subject).toBe("Your lost report was quarantined by a moderator");
  });
});

describe("my account suspended tells me", () => {
  it("writes account_suspended, which the account reads once restored, and emails it when an address is set", async () => {
    const user = freshActor("suspended");
    await call(h.api, { method: "PUT", url: "/v1/me/notification-preferences", headers: as(user), payload: { email: "me@example.org" } });
    const boss = admin("moderator-2");
    const suspend = await call(h.api, {
      method: "POST",
      url: `/v1/admin/accounts/${user}/suspend`,
      headers: boss,
      payload: { reasonCode: "spam", reasonDetail: "repeated fake reports" },
    });
    expect(suspend.statusCode, suspend.body).toBe(200);
    const rows = await eventually(async () => {
      const { rows } = await h.db.pool.query(
        `select channel, status, last_error from notification where recipient_actor_id = $1 and kind = 'account_suspended' order by channel`,
        [user],
      );
      return rows.length === 2 && rows.every((r) => r.status !== "pending") ? rows : undefined;
    }, 15_000);
    // No SMTP in this file: the email dead-letters as the contract says; in_app is sent.
    expect(rows).toEqual([
      { channel: "email", status: "dead_letter", last_error: "no deliverer configured for channel email" },
      { channel: "in_app", status: "sent", last_error: null },
    ]);
    const restore = await call(h.api, { method: "POST", url: `/v1/admin/accounts/${user}/restore`, headers: boss, payload: { reason: "appeal" } });
    expect(restore.statusCode).toBe(200);
    const listed = (await myNotifications(user)).filter((n) => n.kind === "account_suspended");
    expect(listed.map((n) => n.channel).sort()).toEqual(["email", "in_app"]);
    expect(listed[0]!.body).toContain("spam");
  });
});
