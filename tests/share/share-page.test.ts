import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogues } from "../../api/tag/i18n/index.js";
import { escapeHtml } from "../../api/pages/html.js";
import { cardSvg } from "../../api/share/card.js";
import { emptyForms, sharePage } from "../../api/share/render.js";
import { findShareReport } from "../../api/share/store.js";
import { shareViewOf } from "../../api/share/view.js";
import { coarsen, round } from "../../lib/geo.js";
import { as } from "../helpers/app.js";
import { PrivacyRules } from "../helpers/privacy.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, createFoundReport, createLostReport, expectProblem, freshActor, lostReportBody, moderate } from "../safety/helpers.js";
import { browse, postShareForm, shortCodeOf } from "./helpers.js";

/**
 * The share pages (GET /lost/{id}, /found/{id}): server-rendered in the
 * reader's language, public fields and the coarse point only, meant to be
 * found, with two forms that work without JavaScript.
 */
const PUBLIC = "https://share.example.org";
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ PUBLIC_BASE_URL: PUBLIC });
});
afterAll(async () => {
  await h?.close();
});

const html = (text: string) => escapeHtml(text);
const precise = { lat: 48.8566, lon: 2.3522 };
const coarse = coarsen(precise);
const cell = { lat: round(coarse.lat, 3), lon: round(coarse.lon, 3) };
/** The area as pages print it: the cell centre to 3 decimals. */
const place = `${cell.lat.toFixed(3)}, ${cell.lon.toFixed(3)}`;

/** A lost report with everything a page shows, and the privacy rules that must hold for it. */
async function lostReport(overrides: Record<string, unknown> = {}) {
  const owner = freshActor("owner");
  const id = await createLostReport(h.api, owner, { location: precise, ...overrides });
  const rules = new PrivacyRules().actor(owner).point(precise).text("CHIP-12345").text("scar under the left ear");
  return { owner, id, rules };
}

describe("GET /lost/{id}", () => {
  it.each([
    ["de-DE,de;q=0.9", "de"],
    ["fr", "fr"],
    ["es-MX", "es"],
    ["pt-BR", "en"],
  ] as const)("Accept-Language %j renders in %s with the headline, details and the area", async (header, lang) => {
    const { id, rules } = await lostReport({ animal: { ...lostReportBody().animal, sex: "male" } });
    const m = catalogues[lang];
    const res = await browse(h.api, `/lost/${id}`, { "accept-language": header });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers["content-security-policy"]).toContain("default-src 'self'");
    expect(res.headers["x-robots-tag"]).toBeUndefined();
    expect(res.body).not.toContain("noindex");
    expect(res.body).toContain(`<html lang="${lang}">`);
    expect(res.body).toContain(html(m.share.lost.replace("{species}", m.species.dog).toLocaleUpperCase(lang)));
    for (const text of ["Rex", "Beagle", "brown, white", m.share.sex.male, "Wearing a red collar", m.share.sighting.heading, m.share.messageLost]) {
      expect(res.body).toContain(html(text));
    }
    expect(res.body).toContain(html(m.share.area.replace("{place}", place)));
    expect(res.body).toContain(`href="https://www.openstreetmap.org/?mlat=${cell.lat.toFixed(3)}&amp;mlon=${cell.lon.toFixed(3)}#map=15/${cell.lat.toFixed(3)}/${cell.lon.toFixed(3)}"`);
    expect(rules.violations(res.body)).toEqual([]);
  });

  it("takes ?lang= over Accept-Language, and an unknown one falls back", async () => {
    const { id } = await lostReport();
    expect((await browse(h.api, `/lost/${id}?lang=es`, { "accept-language": "de" })).body).toContain(`<html lang="es">`);
    expect((await browse(h.api, `/lost/${id}?lang=xx`, { "accept-language": "fr" })).body).toContain(`<html lang="fr">`);
    expect((await browse(h.api, `/lost/${id}?lang=xx&lang=yy`)).statusCode).toBe(200);
  });

  it("has canonical, Open Graph and Twitter tags with absolute URLs under PUBLIC_BASE_URL; with no photo, og:image is the card", async () => {
    const { id } = await lostReport();
    const { body } = await browse(h.api, `/lost/${id}?lang=en`);
    expect(body).toContain(`<link rel="canonical" href="${PUBLIC}/lost/${id}">`);
    expect(body).toContain(`<meta property="og:url" content="${PUBLIC}/lost/${id}">`);
    expect(body).toContain(`<meta property="og:image" content="${PUBLIC}/lost/${id}/card.png?lang=en">`);
    expect(body).toContain(`<meta property="og:title" content="LOST DOG: Rex">`);
    expect(body).toContain(`<meta property="og:description" content="Dog lost within about 1 km of ${place} on November 20, 2025.`);
    expect(body).toContain(`<meta name="twitter:card" content="summary_large_image">`);
  });

  it("escapes what the reporter wrote", async () => {
    const { id } = await lostReport({ animal: { species: "cat", name: "<b>Tom</b>" }, description: `"><script>alert(1)</script>` });
    const { body } = await browse(h.api, `/lost/${id}`);
    expect(body).not.toContain("<b>Tom</b>");
    expect(body).not.toContain("<script>alert");
    expect(body).toContain("&lt;b&gt;Tom&lt;/b&gt;");
  });

  it.each(["not-a-uuid", "00000000-0000-4000-8000-000000000000", "x".repeat(300)])("is the 404 page for %s", async (id) => {
    const res = await browse(h.api, `/lost/${id}`);
    expect(res.statusCode).toBe(404);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.body).toContain(html(catalogues.en.share.notFound.title));
  });

  it.each(["quarantined", "removed"] as const)("is the 404 page for a %s report, its card and flyer too", async (state) => {
    const { id } = await lostReport();
    await moderate(h.db, "lost_report", id, state);
    for (const url of [`/lost/${id}`, `/lost/${id}/card.png`, `/lost/${id}/flyer.pdf`]) {
      const res = await browse(h.api, url);
      expect(res.statusCode, url).toBe(404);
      expect(res.body).toContain(html(catalogues.en.share.notFound.title));
    }
  });

  it("is the 404 for a lost report's id under /found/", async () => {
    const { id } = await lostReport();
    expect((await browse(h.api, `/found/${id}`)).statusCode).toBe(404);
  });

  it.each([
    ["reunited", "reunited"],
    ["closed", "closed"],
  ] as const)("a %s report says so and has no forms", async (outcome, key) => {
    const { id, owner } = await lostReport();
    const resolved = await call(h.api, { method: "POST", url: `/v1/safety/lost-reports/${id}/resolve`, headers: as(owner), payload: { outcome } });
    expect(resolved.statusCode, resolved.body).toBe(200);
    const { body, statusCode } = await browse(h.api, `/lost/${id}`);
    expect(statusCode).toBe(200);
    expect(body).toContain(html(catalogues.en.share[key].title));
    expect(body).not.toContain("<form");
    // Its forms refuse a post too.
    const posted = await postShareForm(h.api, `/lost/${id}/message`, { message: "hi", fromContact: "someone" });
    expect(posted.statusCode).toBe(409);
    expect(await count(h.db, `select 1 from safety_relay_message where lost_report_id = $1`, [id])).toBe(0);
  });

  it("an expired report says it is no longer active and has no forms", async () => {
    const { id } = await lostReport();
    await h.db.pool.query(`update safety_lost_report set status = 'closed', closed_reason = 'expired', resolved_at = now() where id = $1`, [id]);
    const { body } = await browse(h.api, `/lost/${id}`);
    expect(body).toContain(html(catalogues.en.share.expired.body));
    expect(body).not.toContain("<form");
  });
});

describe("GET /found/{id}", () => {
  it("shows FOUND and the species, no name, and only the message form", async () => {
    const finder = freshActor("finder");
    const id = await createFoundReport(h.api, finder, { description: "Very friendly" });
    const res = await browse(h.api, `/found/${id}?lang=de`);
    const m = catalogues.de;
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(html(m.share.found.replace("{species}", m.species.cat).toLocaleUpperCase("de")));
    expect(res.body).toContain("Very friendly");
    expect(res.body).toContain(html(m.share.messageFound));
    expect(res.body).not.toContain(html(m.share.sighting.heading));
    expect(res.body).toContain(`action="/found/${id}/message"`);
    expect(new PrivacyRules().actor(finder).violations(res.body)).toEqual([]);
  });

  it("relays a message to the finder", async () => {
    const id = await createFoundReport(h.api, freshActor("finder"));
    const res = await postShareForm(h.api, `/found/${id}/message?lang=fr`, { message: "C'est mon chat", fromContact: "owner@example.org" });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain(html(catalogues.fr.share.thanksFinder.title));
    expect(await count(h.db, `select 1 from safety_relay_message where found_report_id = $1 and message = 'C''est mon chat'`, [id])).toBe(1);
  });
});

describe("the sighting form", () => {
  it("makes a sighting linked to the report with no account, at the shared location's cell", async () => {
    const { id } = await lostReport();
    const res = await postShareForm(h.api, `/lost/${id}/sighting`, { note: "Near the bakery", lat: "48.85837", lon: "2.29448" });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain(html(catalogues.en.share.sighting.thanks.title));
    const { rows } = await h.db.pool.query(
      `select note, reporter_id, round(st_y(location::geometry)::numeric, 4)::float as lat from safety_sighting where lost_report_id = $1`,
      [id],
    );
    // The precise point the browser gave goes no further than the form: the sighting holds the cell centre.
    expect(rows).toEqual([{ note: "Near the bakery", reporter_id: "anonymous:share-page", lat: 48.8565 }]);
    expect(await count(h.db, `select 1 from outbox_event where type = 'events.safety.sighting_reported.v1' and payload->>'lostReportId' = $1`, [id])).toBe(1);
  });

  it("with no location shared, places the sighting at the report's own coarse point", async () => {
    const { id } = await lostReport();
    expect((await postShareForm(h.api, `/lost/${id}/sighting`, {})).statusCode).toBe(200);
    const { rows } = await h.db.pool.query(`select st_equals(s.location::geometry, r.coarse_location::geometry) as same from safety_sighting s join safety_lost_report r on r.id = s.lost_report_id where r.id = $1`, [id]);
    expect(rows).toEqual([{ same: true }]);
  });

  it("follows the API's validation: a note over 1000 characters comes back on the page with its error, and nothing is written", async () => {
    const { id } = await lostReport();
    const res = await postShareForm(h.api, `/lost/${id}/sighting?lang=es`, { note: "x".repeat(1001) });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain(html(catalogues.es.share.errors.noteTooLong.replace("{count}", "1001").replace("{max}", "1000")));
    expect(res.body).toContain('aria-invalid="true"');
    expect(await count(h.db, `select 1 from safety_sighting where lost_report_id = $1`, [id])).toBe(0);
    const nul = await postShareForm(h.api, `/lost/${id}/sighting`, { note: "a\u0000b" });
    expect(nul.statusCode).toBe(400);
  });

  it("takes 5 sightings an hour from one address, then the limit page", async () => {
    const { id } = await lostReport();
    const remoteAddress = "10.250.0.9";
    for (let i = 0; i < 5; i++) expect((await postShareForm(h.api, `/lost/${id}/sighting`, { note: `seen ${i}` }, { remoteAddress })).statusCode).toBe(200);
    const refused = await postShareForm(h.api, `/lost/${id}/sighting`, { note: "seen again" }, { remoteAddress });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers["retry-after"]).toBeDefined();
    expect(refused.body).toContain(html(catalogues.en.share.tooManySightings.title));
    expect(await count(h.db, `select 1 from safety_sighting where lost_report_id = $1`, [id])).toBe(5);
  });

  it("is refused when another site's page posts it, before anything is written", async () => {
    const { id } = await lostReport();
    const res = await postShareForm(h.api, `/lost/${id}/sighting`, { note: "spam" }, { headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" } });
    expect(res.statusCode).toBe(403);
    expect(await count(h.db, `select 1 from safety_sighting where lost_report_id = $1`, [id])).toBe(0);
  });
});

describe("the message form", () => {
  it("sends the owner a relay message, and shows errors on the page when a field is missing", async () => {
    const { id } = await lostReport();
    const bad = await postShareForm(h.api, `/lost/${id}/message?lang=de`, { message: "", fromContact: "me" });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain(html(catalogues.de.errors.messageRequired));
    const res = await postShareForm(h.api, `/lost/${id}/message`, { message: "I have Rex", fromContact: "finder@example.org", lat: "48.85837", lon: "2.29448" });
    expect(res.statusCode, res.body).toBe(200);
    expect(await count(h.db, `select 1 from safety_relay_message where lost_report_id = $1 and message = 'I have Rex'`, [id])).toBe(1);
  });
});

describe("short links and the report views' share URLs", () => {
  it("GET /s/{code} is 301 to the report's page; unknown or malformed is the 404 page", async () => {
    const { id } = await lostReport();
    const code = await shortCodeOf(h.api, "lost", id);
    expect(code).toMatch(/^[2-9a-hjkmnp-z]{8}$/);
    const res = await browse(h.api, `/s/${code}`);
    expect(res.statusCode).toBe(301);
    expect(res.headers.location).toBe(`/lost/${id}`);
    const found = await createFoundReport(h.api, freshActor("finder"));
    expect((await browse(h.api, `/s/${await shortCodeOf(h.api, "found", found)}`)).headers.location).toBe(`/found/${found}`);
    for (const bad of ["zzzzzzzz", "abc", "O0Il1abc", "%E0%A4%A", "x".repeat(250)]) {
      const missing = await browse(h.api, `/s/${bad}`);
      expect(missing.statusCode, bad).toBe(404);
      expect(missing.body).toContain(html(catalogues.en.share.notFound.title));
    }
  });

  it("every report gets a unique code at creation; existing ones were backfilled by the migration", async () => {
    const { rows } = await h.db.pool.query(
      `select count(*)::int as n, count(distinct short_code)::int as codes, bool_and(short_code ~ '^[2-9a-hjkmnp-z]{8}$') as shaped
       from (select short_code from safety_lost_report union all select short_code from safety_found_report) c`,
    );
    expect(rows[0].n).toBeGreaterThan(0);
    expect(rows[0]).toEqual({ n: rows[0].n, codes: rows[0].n, shaped: true });
  });

  it("the public views carry shareUrl and shortUrl, not flyerUrl; the owner's views carry all three", async () => {
    const { id, owner } = await lostReport();
    const code = await shortCodeOf(h.api, "lost", id);
    const expected = { shareUrl: `${PUBLIC}/lost/${id}`, shortUrl: `${PUBLIC}/s/${code}`, flyerUrl: `${PUBLIC}/lost/${id}/flyer.pdf` };
    const pub = (await call(h.api, { url: `/v1/safety/lost-reports/${id}` })).json();
    expect(pub).toMatchObject({ shareUrl: expected.shareUrl, shortUrl: expected.shortUrl });
    expect(pub).not.toHaveProperty("flyerUrl");
    expect((await call(h.api, { url: `/v1/safety/lost-reports/${id}/private`, headers: as(owner) })).json()).toMatchObject(expected);
    const mine = (await call(h.api, { url: `/v1/me/lost-reports`, headers: as(owner) })).json();
    expect(mine.items[0]).toMatchObject({ id, ...expected });
    const finder = freshActor("finder");
    const found = await createFoundReport(h.api, finder);
    const foundCode = await shortCodeOf(h.api, "found", found);
    const foundPub = (await call(h.api, { url: `/v1/safety/found-reports/${found}` })).json();
    expect(foundPub).toMatchObject({ shareUrl: `${PUBLIC}/found/${found}`, shortUrl: `${PUBLIC}/s/${foundCode}` });
    expect(foundPub).not.toHaveProperty("flyerUrl");
    expect((await call(h.api, { url: `/v1/me/found-reports`, headers: as(finder) })).json().items[0]).toMatchObject({
      flyerUrl: `${PUBLIC}/found/${found}/flyer.pdf`,
    });
    const patched = await call(h.api, { method: "PATCH", url: `/v1/safety/found-reports/${found}`, headers: as(finder), payload: { description: "calm" } });
    expect(patched.json()).toMatchObject({ flyerUrl: `${PUBLIC}/found/${found}/flyer.pdf` });
  });
});

describe("the card image", () => {
  it("is a 1200×630 PNG with an ETag", async () => {
    const { id } = await lostReport();
    const res = await call(h.api, { url: `/lost/${id}/card.png` });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("image/png");
    expect(res.rawPayload.readUInt32BE(16)).toBe(1200);
    expect(res.rawPayload.readUInt32BE(20)).toBe(630);
    const again = await call(h.api, { url: `/lost/${id}/card.png`, headers: { "if-none-match": res.headers.etag as string } });
    expect(again.statusCode).toBe(304);
  });

  it("is a problem+json 404 for an API client", async () => {
    expectProblem(await call(h.api, { url: `/lost/00000000-0000-4000-8000-000000000000/card.png` }), 404, "not-found");
  });
});

describe("what the card and the found page render", () => {
  it("the card's SVG carries public fields only, escaped, in the page's language", async () => {
    const { id, rules } = await lostReport({ animal: { species: "dog", name: `<Rex & "Co">`, breed: "Beagle", colors: ["brown"] } });
    const { rows } = await h.db.pool.query(`select id from safety_lost_report where id = $1`, [id]);
    expect(rows).toHaveLength(1);
    const row = (await findShareReport(h.api.pool, "lost", id))!;
    const svg = cardSvg(catalogues.fr, shareViewOf("lost", row));
    expect(svg).toContain("CHIEN PERDU");
    expect(svg).toContain("&lt;Rex &amp; &quot;Co&quot;&gt;");
    expect(svg).toContain(place);
    expect(rules.violations(svg)).toEqual([]);
  });

  it("a found animal at a shelter partner shows 'At <name>' with that contact, in every language", () => {
    const view = {
      ...shareViewOf("found", {
        id: "00000000-0000-4000-8000-000000000001",
        status: "open",
        closedReason: null,
        animalName: null,
        species: "cat",
        breed: null,
        colors: ["black"],
        sex: null,
        distinguishingMarks: null,
        description: null,
        happenedAt: new Date("2025-11-20T09:00:00Z"),
        coarseLat: cell.lat,
        coarseLon: cell.lon,
        shortCode: "abcdefgh",
        updatedAt: new Date(),
        moderationState: null,
        photos: [],
        partner: null,
        heldUntil: null,
      }),
      atPartner: { name: "Tierheim <Nord>", phone: "+49 30 1234567", website: "https://tierheim.example" },
    };
    for (const lang of ["en", "de", "fr", "es"] as const) {
      const m = catalogues[lang];
      const page = sharePage(m, view, { page: "https://x.example/found/1", image: "https://x.example/c.png" }, emptyForms());
      expect(page).toContain(html(m.share.atPartner.replace("{name}", "Tierheim <Nord>")));
      expect(page).toContain(`href="tel:+49301234567"`);
      expect(page).toContain(`href="https://tierheim.example"`);
      // Held as a stray: "At <name> until <the hold's last day>", in the page's language.
      const held = sharePage(m, { ...view, heldUntil: new Date("2025-11-25T23:59:59.999Z") }, { page: "https://x.example/found/1", image: "https://x.example/c.png" }, emptyForms());
      const day = new Intl.DateTimeFormat(m.lang, { dateStyle: "long", timeZone: "UTC" }).format(new Date("2025-11-25T12:00:00Z"));
      expect(held).toContain(html(m.share.atPartnerUntil.replace("{name}", "Tierheim <Nord>").replace("{date}", day)));
    }
  });
});
