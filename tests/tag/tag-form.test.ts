import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogues } from "../../api/tag/i18n/index.js";
import { escapeHtml } from "../../api/tag/render.js";
import { EventType } from "../../lib/events.js";
import { coarsen } from "../../lib/geo.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, freshActor, freshIp } from "../safety/helpers.js";
import { animalWithTag, postTagForm, reportAnimalLost, scanIdOf } from "./helpers.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const html = (text: string) => escapeHtml(text);
const contactMessageEvents = async (animalId: string) =>
  (
    await h.db.pool.query(`select payload from outbox_event where type = $1 and payload->>'animalId' = $2 order by occurred_at`, [
      EventType.ContactMessageReceived,
      animalId,
    ])
  ).rows.map((r) => r.payload);

describe("the form sends the owner a contact message without JavaScript and ends on a thank-you page", () => {
  it("sends to the owner when no lost report is open: the message row names the animal", async () => {
    const owner = freshActor("owner");
    const { animalId, token } = await animalWithTag(h.api, owner);
    const res = await postTagForm(h.api, token, { message: "Found him by the lake", fromContact: "+33 6 00 00 00 01" }, { headers: { "accept-language": "es" } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers["content-security-policy"]).toContain("default-src 'self'");
    expect(res.body).toContain(html(catalogues.es.thanks.title));
    const { rows } = await h.db.pool.query(
      `select animal_id, lost_report_id, found_report_id, message, from_contact from safety_relay_message where animal_id = $1`,
      [animalId],
    );
    expect(rows).toEqual([{ animal_id: animalId, lost_report_id: null, found_report_id: null, message: "Found him by the lake", from_contact: "+33 6 00 00 00 01" }]);
    const [event] = await contactMessageEvents(animalId);
    expect(event).toMatchObject({ recipientActorId: owner, animalId, message: "Found him by the lake" });
    expect(event.lostReportId).toBeUndefined();
    expect(event.location).toBeUndefined();
  });

  it("sends to the animal's open lost report, with the animal to follow", async () => {
    const owner = freshActor("owner");
    const { animalId, token } = await animalWithTag(h.api, owner);
    const reportId = await reportAnimalLost(h.api, owner, animalId);
    expect((await postTagForm(h.api, token, { message: "He is safe with me", fromContact: "jo@example.org" })).statusCode).toBe(200);
    const { rows } = await h.db.pool.query(`select lost_report_id, animal_id from safety_relay_message where lost_report_id = $1`, [reportId]);
    expect(rows).toEqual([{ lost_report_id: reportId, animal_id: null }]);
    expect((await contactMessageEvents(animalId))[0]).toMatchObject({ recipientActorId: owner, lostReportId: reportId, animalId });
  });

  it("keeps only the shared location's ~1 km cell, on the message's event and on the finder's scan", async () => {
    const owner = freshActor("owner");
    const { animalId, token } = await animalWithTag(h.api, owner);
    const page = await call(h.api, { url: `/t/${token}`, headers: { accept: "text/html" } });
    const scanId = scanIdOf(page.body);
    const precise = { lat: 48.858372, lon: 2.294481 };
    const res = await postTagForm(h.api, token, {
      message: "Near the tower",
      fromContact: "jo@example.org",
      scan: scanId,
      lat: String(precise.lat),
      lon: String(precise.lon),
    });
    expect(res.statusCode, res.body).toBe(200);
    const cell = coarsen(precise);
    expect((await contactMessageEvents(animalId))[0].location).toEqual(cell);
    const scans = await call(h.api, { url: `/v1/animals/${animalId}/scans`, headers: as(owner) });
    expect(scans.json().items).toEqual([{ id: scanId, scannedAt: expect.any(String), location: { ...cell, precisionMeters: 1000 } }]);
    // The precise point is stored nowhere: not on the scan, the message or any event.
    const { rows } = await h.db.pool.query(
      `select (select count(*)::int from outbox_event where payload::text like '%48.858372%') as events,
              (select count(*)::int from animal_scan where st_y(coarse_location::geometry) = $1) as scans`,
      [precise.lat],
    );
    expect(rows[0]).toEqual({ events: 0, scans: 0 });
  });

  it("ignores a location that is not a browser's position, and a scan id that is not this tag's", async () => {
    const { animalId, token } = await animalWithTag(h.api, freshActor("owner"));
    const other = await animalWithTag(h.api, freshActor("owner"));
    const otherScan = scanIdOf((await call(h.api, { url: `/t/${other.token}` })).body);
    for (const [lat, lon] of [["91", "2"], ["abc", "2"], ["48.8", ""], ["1e2", "3"]]) {
      const res = await postTagForm(h.api, token, { message: "x", fromContact: "y", lat: lat!, lon: lon!, scan: otherScan });
      expect(res.statusCode, `${lat},${lon}`).toBe(200);
    }
    expect((await contactMessageEvents(animalId)).map((e) => e.location)).toEqual([undefined, undefined, undefined, undefined]);
    const located = await postTagForm(h.api, token, { message: "x", fromContact: "y", lat: "48.85", lon: "2.35", scan: otherScan });
    expect(located.statusCode).toBe(200);
    expect(await count(h.db, `select 1 from animal_scan where coarse_location is not null and animal_id = $1`, [other.animalId])).toBe(0);
  });
});

describe("a bad form post gets the page again with the error shown, and sends nothing", () => {
  it.each([
    ["no message", { fromContact: "jo@example.org" }, catalogues.en.errors.messageRequired, "en"],
    ["a blank message", { message: "   ", fromContact: "jo@example.org" }, catalogues.en.errors.messageRequired, "en"],
    ["10 KB of message", { message: "m".repeat(10_240), fromContact: "jo@example.org" }, "Your message is too long: 10240 characters, at most 2000.", "en"],
    ["no contact, in German", { message: "Hallo" }, catalogues.de.errors.contactRequired, "de"],
    ["a NUL in the message", { message: "a\u0000b", fromContact: "jo@example.org" }, catalogues.en.errors.messageInvalid, "en"],
  ] as const)("%s", async (_label, fields, error, lang) => {
    const { animalId, token } = await animalWithTag(h.api, freshActor("owner"));
    const scansBefore = await count(h.db, `select 1 from animal_scan where animal_id = $1`, [animalId]);
    const res = await postTagForm(h.api, token, fields as Record<string, string>, { headers: { "accept-language": lang } });
    expect(res.statusCode).toBe(400);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.body).toContain(`<html lang="${lang}">`);
    expect(res.body).toContain('role="alert"');
    expect(res.body).toContain(html(error));
    expect(res.body).toContain('aria-invalid="true"');
    // The page is the tag page again: the profile and the form with what was typed.
    expect(res.body).toContain(html(catalogues[lang].form.heading));
    if ("fromContact" in fields) expect(res.body).toContain(`value="${html(fields.fromContact)}"`);
    expect(await count(h.db, `select 1 from safety_relay_message where animal_id = $1`, [animalId])).toBe(0);
    expect(await count(h.db, `select 1 from animal_scan where animal_id = $1`, [animalId])).toBe(scansBefore);
  });

  it("shows the form again with the cell centre, never the precise point it was sent", async () => {
    const { token } = await animalWithTag(h.api, freshActor("owner"));
    const res = await postTagForm(h.api, token, { message: "", fromContact: "x", lat: "48.858372", lon: "2.294481" });
    expect(res.statusCode).toBe(400);
    expect(res.body).not.toContain("48.858372");
    expect(res.body).toContain(`name="lat" value="${coarsen({ lat: 48.858372, lon: 2.294481 }).lat}"`);
  });

  it("answers an unknown token with the 404 page and writes nothing", async () => {
    const res = await postTagForm(h.api, "Z".repeat(43), { message: "hello", fromContact: "x" });
    expect(res.statusCode).toBe(404);
    expect(res.body).toContain(html(catalogues.en.notFound.title));
  });

  it("answers a body it cannot read with an HTML page for a browser and problem+json for an API client", async () => {
    const { token } = await animalWithTag(h.api, freshActor("owner"));
    const xml = { method: "POST" as const, url: `/t/${token}/message`, payload: "<a/>", remoteAddress: freshIp() };
    const browser = await h.api.app.inject({ ...xml, headers: { "content-type": "application/xml", accept: "text/html" } });
    expect(browser.statusCode).toBe(415);
    expect(browser.headers["content-type"]).toBe("text/html; charset=utf-8");
    const client = await h.api.app.inject({ ...xml, headers: { "content-type": "application/xml" } });
    expect(client.statusCode).toBe(415);
    expect(client.headers["content-type"]).toMatch(/^application\/problem\+json/);
  });
});

describe("the form goes through the API's contact message limits", () => {
  it("refuses a sixth message in an hour from one address with a 429 page", async () => {
    const { animalId, token } = await animalWithTag(h.api, freshActor("owner"));
    const ip = freshIp();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await postTagForm(h.api, token, { message: `message ${i}`, fromContact: "jo@example.org" }, { remoteAddress: ip, headers: { "accept-language": "de" } });
      statuses.push(res.statusCode);
      if (res.statusCode === 429) {
        expect(Number(res.headers["retry-after"])).toBeGreaterThan(0);
        expect(res.body).toContain(html(catalogues.de.tooManyMessages.title));
      }
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(await count(h.db, `select 1 from safety_relay_message where animal_id = $1`, [animalId])).toBe(5);
  });

  it("shares the per-IP bucket with the API's relay-message route", async () => {
    const { token } = await animalWithTag(h.api, freshActor("owner"));
    const reportOwner = freshActor("owner");
    const lost = await call(h.api, {
      method: "POST",
      url: "/v1/safety/lost-reports",
      headers: as(reportOwner),
      payload: { animal: { species: "cat" }, lastSeenAt: "2025-11-20T08:00:00Z", location: { lat: 48.85, lon: 2.35 } },
    });
    const ip = freshIp();
    for (let i = 0; i < 5; i++) {
      const res = await h.api.app.inject({
        method: "POST",
        url: `/v1/safety/lost-reports/${lost.json().id}/relay-message`,
        remoteAddress: ip,
        payload: { message: "seen", fromContact: "x" },
      });
      expect(res.statusCode).toBe(202);
    }
    expect((await postTagForm(h.api, token, { message: "hi", fromContact: "x" }, { remoteAddress: ip })).statusCode).toBe(429);
  });

  it("holds an owner's messages past 20 a day, whatever the senders' addresses: still the thank-you page, never a refusal", async () => {
    const { animalId, token } = await animalWithTag(h.api, freshActor("owner"));
    await h.db.pool.query(
      `insert into safety_relay_message (animal_id, message, from_contact) select $1, 'old', 'x' from generate_series(1, 20)`,
      [animalId],
    );
    const res = await postTagForm(h.api, token, { message: "one more", fromContact: "x" });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain(html(catalogues.en.thanks.title));
    const { rows } = await h.db.pool.query(`select held from safety_relay_message where animal_id = $1 and message = 'one more'`, [animalId]);
    expect(rows).toEqual([{ held: true }]);
    expect(await contactMessageEvents(animalId)).toEqual([expect.objectContaining({ animalId, message: "one more", held: true })]);
  });
});
