import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogues } from "../../api/tag/i18n/index.js";
import { STRAY_HOLDS_REMIND_CRONTAB, STRAY_HOLDS_REMIND_TASK } from "../../jobs/scheduled/task.js";
import { buildDeliverers } from "../../jobs/delivery/deliverers/index.js";
import { runHoldReminders } from "../../jobs/scheduled/hold-reminder.js";
import { SCHEDULED_CRONTAB, scheduledTasks } from "../../jobs/families.js";
import { admin, as } from "../helpers/app.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { eventually } from "../helpers/stream.js";
import { startSmtpServer, type TestSmtpServer } from "../notifier/smtp.js";
import type { Harness } from "../helpers/harness.js";
import { call, expectProblem, freshActor, lostReportBody } from "../safety/helpers.js";
import { asm3Animal, createPartner, login, partnerBody, partnerCall, publish, startPartnerHarness, type TestPartner } from "./support.js";

/**
 * Stray holds (contract part 4): a partner holds a stray strayHoldDays after
 * its intake; the in-custody found report carries heldUntil, its page and
 * flyer say "At <shelter> until <date>", the owner's match says it, and one
 * reminder goes to the owner 24 hours before the hold ends.
 */

const PUBLIC = "https://share.example.org";
let h: Harness;
let pipeline: Pipeline;
let smtp: TestSmtpServer;
let work: string;

beforeAll(async () => {
  h = await startPartnerHarness({ PUBLIC_BASE_URL: PUBLIC });
  smtp = await startSmtpServer();
  const deliverers = buildDeliverers({ SMTP_URL: smtp.url, SMTP_FROM: "Animal Safety <no-reply@example.org>", API_PUBLIC_BASE_URL: PUBLIC });
  pipeline = await startPipeline(h.api.pool, h.api.nc, { deliverers });
  work = mkdtempSync(join(tmpdir(), "stray-holds-"));
});
afterAll(async () => {
  await pipeline?.stop();
  await smtp?.close();
  await h?.close();
  rmSync(work, { recursive: true, force: true });
});

const isoDay = (offsetDays = 0) => new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
const endOf = (day: string) => `${day}T23:59:59.999Z`;
const foundView = (id: string) => call(h.api, { method: "GET", url: `/v1/safety/found-reports/${id}` });
const editPartner = (id: string, payload: object, actor = "admin-9") =>
  call(h.api, { method: "PATCH", url: `/v1/admin/partners/${id}`, headers: admin(actor), payload });
const auditRows = async (id: string) =>
  (await h.db.pool.query(`select action, actor_id, metadata from audit_event where object_type = 'partner' and object_id = $1 order by occurred_at, id`, [id])).rows;

describe("a partner's stray hold, set by the admin", () => {
  it("is 5 days unless the admin gives another, 0 to 30", async () => {
    const p = await createPartner(h);
    const list = await call(h.api, { method: "GET", url: "/v1/admin/partners?limit=200", headers: admin() });
    expect(list.json().items.find((x: { id: string }) => x.id === p.id).strayHoldDays).toBe(5);
    const seven = await createPartner(h, { strayHoldDays: 7 });
    const again = await call(h.api, { method: "GET", url: "/v1/admin/partners?limit=200", headers: admin() });
    expect(again.json().items.find((x: { id: string }) => x.id === seven.id).strayHoldDays).toBe(7);
    for (const days of [-1, 31, 2.5, "5"]) {
      const res = await call(h.api, { method: "POST", url: "/v1/admin/partners", headers: admin(), payload: { ...partnerBody(), strayHoldDays: days } });
      expectProblem(res, 400, "validation-failed");
    }
  });

  it("PATCH /v1/admin/partners/{id} edits name, publicContact, location, dateFormat and strayHoldDays, audited with each change", async () => {
    const p = await createPartner(h);
    const res = await editPartner(p.id, {
      name: "Riverside Shelter (North)",
      publicContact: { phone: "+33 1 98 76 54 32", website: "https://north.riverside.example" },
      location: { lat: 48.9, lon: 2.3 },
      dateFormat: "DD/MM/YYYY",
      strayHoldDays: 10,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      id: p.id,
      name: "Riverside Shelter (North)",
      publicContact: { phone: "+33 1 98 76 54 32", website: "https://north.riverside.example" },
      location: { lat: 48.9, lon: 2.3 },
      dateFormat: "DD/MM/YYYY",
      strayHoldDays: 10,
      kind: "shelter",
      status: "active",
    });
    expect(res.json().publicContact.email).toBeUndefined();
    const [created, updated] = await auditRows(p.id);
    expect(created.action).toBe("admin.partner.created");
    expect(updated).toMatchObject({ action: "admin.partner.updated", actor_id: "admin-9" });
    expect(updated.metadata.changed.strayHoldDays).toEqual({ from: 5, to: 10 });
    expect(updated.metadata.changed.dateFormat).toEqual({ from: "MM/DD/YYYY", to: "DD/MM/YYYY" });
    expect(Object.keys(updated.metadata.changed).sort()).toEqual(["dateFormat", "location", "name", "publicContact", "strayHoldDays"]);
    // No public email left: the partner gets no more match email.
    const { rows } = await h.db.pool.query(`select email from notification_preference where actor_id = $1`, [`partner:${p.id}`]);
    expect(rows[0].email).toBeNull();
    // The partner's software now writes day-first dates.
    const token = await login(h, p);
    expect((await publish(h, token, asm3Animal({ intakeDate: "21/11/2025", birthDate: "" }))).statusCode).toBe(201);
    // One field alone.
    const one = await editPartner(p.id, { strayHoldDays: 0 });
    expect(one.json()).toMatchObject({ strayHoldDays: 0, name: "Riverside Shelter (North)" });
  });

  it("refuses an empty edit, an unknown or bad field (400), an unknown partner (404) and anyone but an admin (403); none writes", async () => {
    const p = await createPartner(h);
    const before = await auditRows(p.id);
    for (const payload of [{}, { strayHoldDays: 31 }, { strayHoldDays: -1 }, { loginEmail: "x@example.org" }, { kind: "vet" }, { name: "" }, { dateFormat: "YYYY/MM/DD" }, { location: { lat: 100, lon: 0 } }]) {
      expectProblem(await editPartner(p.id, payload), 400, "validation-failed");
    }
    expectProblem(await editPartner(crypto.randomUUID(), { strayHoldDays: 3 }), 404, "not-found");
    expectProblem(await call(h.api, { method: "PATCH", url: `/v1/admin/partners/${p.id}`, headers: as("someone"), payload: { strayHoldDays: 3 } }), 403, "forbidden");
    expect(await auditRows(p.id)).toEqual(before);
    const { rows } = await h.db.pool.query(`select stray_hold_days from partner where id = $1::uuid`, [p.id]);
    expect(rows[0].stray_hold_days).toBe(5);
  });
});

describe("heldUntil on the animal's views, page and flyer", () => {
  let partner: TestPartner;
  let token: string;
  let id: string;

  beforeAll(async () => {
    partner = await createPartner(h, { name: "Tierheim Nord", dateFormat: "YYYY-MM-DD" });
    token = await login(h, partner);
    id = (await publish(h, token, asm3Animal({ intakeDate: "2025-11-20", birthDate: "" }))).json().id;
  });

  it("is the end of the day (UTC) intakeDate + strayHoldDays, and moves with the admin's edit", async () => {
    expect((await foundView(id)).json().heldUntil).toBe("2025-11-25T23:59:59.999Z");
    await editPartner(partner.id, { strayHoldDays: 7 });
    expect((await foundView(id)).json().heldUntil).toBe("2025-11-27T23:59:59.999Z");
    await editPartner(partner.id, { strayHoldDays: 0 });
    expect((await foundView(id)).json().heldUntil).toBe("2025-11-20T23:59:59.999Z");
    await editPartner(partner.id, { strayHoldDays: 5 });
    // A finder's found report has none.
    const finder = await call(h.api, {
      method: "POST",
      url: "/v1/safety/found-reports",
      headers: as(freshActor("finder")),
      payload: { animal: { species: "cat" }, foundAt: "2025-11-20T09:00:00Z", location: { lat: 48.86, lon: 2.35 } },
    });
    expect((await foundView(finder.json().id)).json().heldUntil).toBeUndefined();
  });

  it("the share page says 'At <shelter> until <date>' in each language, and the flyer too", async () => {
    for (const lang of ["en", "de", "fr", "es"] as const) {
      const m = catalogues[lang];
      const page = await call(h.api, { method: "GET", url: `/found/${id}?lang=${lang}` });
      expect(page.statusCode).toBe(200);
      const day = new Intl.DateTimeFormat(m.lang, { dateStyle: "long", timeZone: "UTC" }).format(new Date("2025-11-25T12:00:00Z"));
      const until = m.share.atPartnerUntil.replace("{name}", "Tierheim Nord").replace("{date}", day);
      expect(page.body).toContain(until.replaceAll("'", "&#39;"));
    }
    const flyer = await call(h.api, { method: "GET", url: `/found/${id}/flyer.pdf` });
    expect(flyer.statusCode).toBe(200);
    const file = join(work, "held.pdf");
    writeFileSync(file, flyer.rawPayload);
    const text = execFileSync("pdftotext", ["-layout", file, "-"], { encoding: "utf8" });
    expect(text).toContain("At Tierheim Nord until November 25, 2025");
    // The flyer names the shelter, never its phone or email.
    expect(text).not.toContain("+33 1 23 45 67 89");
    expect(text).not.toMatch(/@riverside-shelter/);
  });

  it("is gone once the animal left the shelter", async () => {
    const other = (await publish(h, token, asm3Animal({ intakeDate: "2025-11-20", birthDate: "" }))).json().id;
    expect((await partnerCall(h, { method: "DELETE", url: `/partners/v2/animals/${other}`, token })).statusCode).toBe(204);
    const view = (await foundView(other)).json();
    expect(view.heldUntil).toBeUndefined();
    expect(view.partner).toBeUndefined();
  });
});

describe("the owner of a matching lost report", () => {
  const owner = freshActor("owner");
  const ownerEmail = `${owner}@example.org`;
  let partner: TestPartner;
  let foundId = "";
  let lostId = "";
  let matchId = "";
  const today = isoDay();

  beforeAll(async () => {
    const set = await call(h.api, { method: "PUT", url: "/v1/me/notification-preferences", headers: as(owner), payload: { email: ownerEmail } });
    expect(set.statusCode, set.body).toBe(200);
    partner = await createPartner(h, { name: "Refuge du Canal", dateFormat: "YYYY-MM-DD", strayHoldDays: 0 });
    const token = await login(h, partner);
    // Taken in today and held 0 days: the hold ends tonight, within the reminder's 24 hours.
    foundId = (await publish(h, token, asm3Animal({ intakeDate: today, birthDate: "", microchip: "250268500777777" }))).json().id;
    const lost = await call(h.api, {
      method: "POST",
      url: "/v1/safety/lost-reports",
      headers: as(owner),
      payload: lostReportBody({
        animal: { name: "Biscuit", species: "dog", breed: "Beagle", colors: ["brown", "white"], microchipId: "250268500777777" },
        lastSeenAt: new Date(Date.now() - 86_400_000).toISOString(),
        location: { lat: 48.8566, lon: 2.3022 },
      }),
    });
    expect(lost.statusCode, lost.body).toBe(201);
    lostId = lost.json().id;
    matchId = await eventually(async () => {
      const { rows } = await h.db.pool.query(`select id from safety_match where lost_report_id = $1 and target_id = $2`, [lostId, foundId]);
      return rows[0]?.id as string | undefined;
    }, 20_000);
  });

  it("is told in the match until when the shelter holds the animal", async () => {
    const row = await eventually(async () => {
      const { rows } = await h.db.pool.query(`select body, data from notification where recipient_actor_id = $1 and source_key = $2 and channel = 'in_app'`, [owner, `match:${matchId}`]);
      return rows[0];
    }, 20_000);
    const day = new Intl.DateTimeFormat("en", { dateStyle: "long", timeZone: "UTC" }).format(new Date(`${today}T12:00:00Z`));
    expect(row.body).toContain(`at Refuge du Canal (+33 1 23 45 67 89`);
    expect(row.body).toContain(`until ${day} (UTC)`);
    expect(row.data.partner).toMatchObject({ name: "Refuge du Canal", heldUntil: endOf(today) });
  });

  it("gets one reminder 24 hours before the hold ends, with the shelter's contact, in the app and by email; never a second", async () => {
    // The suggestion was made before the reminder's time (a day before the hold ends), as a real one would be.
    await h.db.pool.query(`update safety_match set created_at = now() - interval '3 days' where id = $1`, [matchId]);
    const [first, second] = await Promise.all([runHoldReminders(h.api.pool), runHoldReminders(h.api.pool)]);
    expect(first + second).toBe(1);
    expect(await runHoldReminders(h.api.pool)).toBe(0);
    const { rows } = await h.db.pool.query(
      `select channel, kind, subject, body, data from notification where recipient_actor_id = $1 and source_key = $2 order by channel`,
      [owner, `match:${matchId}:hold_ending`],
    );
    expect(rows.map((r) => r.channel)).toEqual(["email", "in_app"]);
    expect(rows[1].kind).toBe("match");
    expect(rows[1].subject).toMatch(/held at Refuge du Canal only until/);
    expect(rows[1].body).toContain("+33 1 23 45 67 89");
    expect(rows[1].data).toMatchObject({ matchId, lostReportId: lostId, foundReportId: foundId, partner: { name: "Refuge du Canal", heldUntil: endOf(today) } });
    const mail = await eventually(async () => smtp.received.find((m) => m.to.includes(ownerEmail) && /only until/.test(m.raw)), 20_000);
    expect(mail.raw).toContain("Refuge du Canal");
    const marked = await h.db.pool.query(`select hold_reminded_at from safety_match where id = $1`, [matchId]);
    expect(marked.rows[0].hold_reminded_at).toBeInstanceOf(Date);
  });

  it("reminds nobody about a suggestion confirmed or dismissed, a hold ending later than a day, one that has ended, or one made within its last day", async () => {
    const p = await createPartner(h, { dateFormat: "YYYY-MM-DD", strayHoldDays: 0 });
    const token = await login(h, p);
    let chips = 0;
    /** A shelter's animal taken in on intakeDate, and an owner's lost report with its chip: the matcher suggests the pair. */
    const suggestion = async (intakeDate: string, { backdate = true } = {}) => {
      const chip = `25026850099${String(++chips).padStart(4, "0")}`;
      const foundId = (await publish(h, token, asm3Animal({ intakeDate, birthDate: "", microchip: chip }))).json().id;
      const owner = freshActor("owner");
      const lost = await call(h.api, {
        method: "POST",
        url: "/v1/safety/lost-reports",
        headers: as(owner),
        payload: lostReportBody({
          animal: { name: "Biscuit", species: "dog", breed: "Beagle", colors: ["brown", "white"], microchipId: chip },
          lastSeenAt: new Date(Date.now() - 12 * 86_400_000).toISOString(),
          location: { lat: 48.8566, lon: 2.3022 },
        }),
      });
      expect(lost.statusCode, lost.body).toBe(201);
      const id = await eventually(async () => {
        const { rows } = await h.db.pool.query(`select id from safety_match where lost_report_id = $1 and target_id = $2`, [lost.json().id, foundId]);
        return rows[0]?.id as string | undefined;
      }, 20_000);
      // Made before the reminder's time, as a suggestion a few days old would be.
      if (backdate) await h.db.pool.query(`update safety_match set created_at = now() - interval '3 days' where id = $1`, [id]);
      return { id, owner };
    };
    const confirmed = await suggestion(today);
    expect((await call(h.api, { method: "POST", url: `/v1/safety/matches/${confirmed.id}/confirm`, headers: as(confirmed.owner) })).statusCode).toBe(200);
    const dismissed = await suggestion(today);
    expect((await call(h.api, { method: "POST", url: `/v1/safety/matches/${dismissed.id}/dismiss`, headers: as(dismissed.owner) })).statusCode).toBe(200);
    const ended = await suggestion(isoDay(-10));
    const recent = await suggestion(today, { backdate: false });
    // A hold that ends in three days: not yet.
    await editPartner(p.id, { strayHoldDays: 3 });
    const later = await suggestion(today);
    expect(await runHoldReminders(h.api.pool)).toBe(0);
    // The admin shortens the hold: now it ends tonight, and that reminder is due.
    await editPartner(p.id, { strayHoldDays: 0 });
    expect(await runHoldReminders(h.api.pool)).toBe(1);
    const owners = [confirmed, dismissed, ended, recent, later].map((s) => s.owner);
    const { rows } = await h.db.pool.query(
      `select recipient_actor_id as owner, source_key from notification where recipient_actor_id = any($1::text[]) and source_key like '%:hold_ending'`,
      [owners],
    );
    expect(rows).toEqual([{ owner: later.owner, source_key: `match:${later.id}:hold_ending` }]);
  });

  it("is sent by a cron task of the scheduled family, every five minutes", () => {
    expect(SCHEDULED_CRONTAB.split("\n")).toContain(STRAY_HOLDS_REMIND_CRONTAB);
    expect(STRAY_HOLDS_REMIND_CRONTAB).toBe(`*/5 * * * * ${STRAY_HOLDS_REMIND_TASK}`);
    const tasks = scheduledTasks({ pool: h.api.pool, deliverers: {}, logger: h.api.app.log as never, reportTtlDays: 30, outboxRetentionDays: 7 });
    expect(typeof tasks[STRAY_HOLDS_REMIND_TASK]).toBe("function");
  });
});
