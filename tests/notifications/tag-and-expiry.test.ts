import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { coarsen } from "../../lib/geo.js";
import { runReportLifetime } from "../../jobs/scheduled/report-lifetime.js";
import { as } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { eventually } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, createFoundReport, createLostReport, freshActor } from "../safety/helpers.js";
import { animalWithTag, postTagForm, reportAnimalLost, scanIdOf } from "../tag/helpers.js";

/**
 * The tag page's and the report lifetime's notifications, end to end: from
 * the page view, the form or the lifetime job, through the outbox, the
 * relay, JetStream and the notifier, to GET /v1/me/notifications.
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
  kind: string;
  channel: string;
  status: string;
  subject: string;
  body: string;
  data: Record<string, string>;
}

async function myNotifications(actor: string, kind: string): Promise<Listed[]> {
  const res = await call(h.api, { url: "/v1/me/notifications", headers: as(actor) });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().items as Listed[]).filter((n) => n.kind === kind);
}

/** Waits until the actor has exactly `n` delivered notifications of the kind. */
const arrived = (actor: string, kind: string, n = 1) =>
  eventually(async () => {
    const items = await myNotifications(actor, kind);
    return items.length === n && items.every((i) => i.status === "sent") ? items : undefined;
  }, 15_000);

const view = async (token: string) => {
  const res = await call(h.api, { url: `/t/${token}`, headers: { accept: "text/html" } });
  expect(res.statusCode).toBe(200);
  return res.body;
};
const scanEvents = (animalId: string) =>
  count(h.db, `select 1 from outbox_event where type = $1 and payload->>'animalId' = $2`, [EventType.TagScanned, animalId]);
/** As if the tag's last notification went out 11 minutes ago. */
const windowPassed = (animalId: string) =>
  h.db.pool.query(`update emergency_profile set scan_notified_at = now() - interval '11 minutes' where animal_id = $1`, [animalId]);

describe("a scan of the tag tells the owner, at most once per tag per 10 minutes", () => {
  it("notifies the first view, not the next ones in the window, and the first after it", async () => {
    const owner = freshActor("owner");
    const { animalId, token } = await animalWithTag(h.api, owner, { name: "Biscuit", species: "dog" });
    const firstScan = scanIdOf(await view(token));
    await view(token);
    await view(token);
    const [n] = await arrived(owner, "tag_scanned");
    expect(n).toMatchObject({ channel: "in_app", data: { animalId, scanId: firstScan } });
    expect(n!.subject).toBe("Biscuit's tag was scanned");
    expect(await scanEvents(animalId)).toBe(1);
    expect(await count(h.db, `select 1 from animal_scan where animal_id = $1`, [animalId])).toBe(3);

    await windowPassed(animalId);
    const laterScan = scanIdOf(await view(token));
    const both = await arrived(owner, "tag_scanned", 2);
    expect(both.map((x) => x.data.scanId).sort()).toEqual([firstScan, laterScan].sort());
    expect(await scanEvents(animalId)).toBe(2);
  });

  it("gives the coarse location when the finder shared it after the window passed", async () => {
    const owner = freshActor("owner");
    const { animalId, token } = await animalWithTag(h.api, owner);
    const scan = scanIdOf(await view(token));
    await arrived(owner, "tag_scanned");
    await windowPassed(animalId);
    const precise = { lat: 45.764043, lon: 4.835659 };
    const res = await postTagForm(h.api, token, { message: "He is here", fromContact: "jo@example.org", scan, lat: String(precise.lat), lon: String(precise.lon) });
    expect(res.statusCode).toBe(200);
    const cell = coarsen(precise);
    const located = (await arrived(owner, "tag_scanned", 2)).find((x) => x.body.includes("near"));
    expect(located!.body).toContain(`near ${cell.lat.toFixed(3)}, ${cell.lon.toFixed(3)} (within about 1 km)`);
    expect(located!.body).not.toContain(String(precise.lat));
    const [message] = await arrived(owner, "relay_message");
    expect(message!.body).toContain(`The sender shared their location: near ${cell.lat.toFixed(3)}`);
  });
});

describe("a message from the tag page reaches the owner as relay_message with the animal to follow", () => {
  it("to the owner directly, and through the animal's open lost report", async () => {
    const owner = freshActor("owner");
    const { animalId, token } = await animalWithTag(h.api, owner);
    expect((await postTagForm(h.api, token, { message: "Found your dog", fromContact: "jo@example.org" })).statusCode).toBe(200);
    const [direct] = await arrived(owner, "relay_message");
    expect(direct!.data).toEqual({ animalId, relayMessageId: expect.any(String), fromContact: "jo@example.org" });
    expect(direct!.subject).toBe("Someone sent a message from your animal's tag");
    expect(direct!.body).toContain("Found your dog");

    const lostReportId = await reportAnimalLost(h.api, owner, animalId);
    expect((await postTagForm(h.api, token, { message: "Still here", fromContact: "jo@example.org" })).statusCode).toBe(200);
    const viaReport = (await arrived(owner, "relay_message", 2)).find((x) => x.body.includes("Still here"));
    expect(viaReport!.data).toEqual({ animalId, lostReportId, relayMessageId: expect.any(String), fromContact: "jo@example.org" });
    expect(viaReport!.subject).toBe("Someone sent a message about your lost animal");
  });
});

describe("a report about to expire reminds its reporter", () => {
  it("sends report_expiring for lost and found reports three days before, once", async () => {
    const owner = freshActor("owner");
    const lost = await createLostReport(h.api, owner);
    const found = await createFoundReport(h.api, owner);
    await h.db.pool.query(`update safety_lost_report set expires_at = now() + interval '2 days' where id = $1`, [lost]);
    await h.db.pool.query(`update safety_found_report set expires_at = now() + interval '1 day' where id = $1`, [found]);
    await runReportLifetime(h.api.pool, { ttlDays: 30 });
    await runReportLifetime(h.api.pool, { ttlDays: 30 });
    const reminders = await arrived(owner, "report_expiring", 2);
    const forLost = reminders.find((r) => r.data.lostReportId === lost);
    expect(forLost!.subject).toBe("Your lost report for Rex expires soon");
    expect(forLost!.body).toContain(`/v1/safety/lost-reports/${lost}/renew`);
    expect(reminders.find((r) => r.data.foundReportId === found)!.subject).toBe("Your found report expires soon");

    // Renewing re-arms it; the owner then sees the report open with a later expiry.
    const renewed = await call(h.api, { method: "POST", url: `/v1/safety/lost-reports/${lost}/renew`, headers: as(owner) });
    expect(renewed.statusCode).toBe(200);
    const mine = await call(h.api, { url: "/v1/me/lost-reports", headers: as(owner) });
    expect(mine.json().items[0]).toMatchObject({ id: lost, status: "open", expiresAt: renewed.json().expiresAt });
  });
});
