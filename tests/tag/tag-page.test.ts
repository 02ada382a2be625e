import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lookupTag } from "../../api/tag/routes.js";
import { catalogues } from "../../api/tag/i18n/index.js";
import { escapeHtml } from "../../api/tag/render.js";
import { admin, as } from "../helpers/app.js";
import { PrivacyRules } from "../helpers/privacy.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, expectProblem, freshActor, freshIp, moderate } from "../safety/helpers.js";
import { animalWithTag, reportAnimalLost } from "./helpers.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const view = (token: string, headers: Record<string, string> = {}, method: "GET" | "HEAD" = "GET") =>
  call(h.api, { method, url: `/t/${token}`, headers: { accept: "text/html", ...headers } });
const html = (text: string) => escapeHtml(text);

describe("GET /t/{token} renders the tag page on the server, in the finder's language", () => {
  it.each([
    ["de-DE,de;q=0.9,en;q=0.8", "de"],
    ["fr-CH, fr;q=0.9", "fr"],
    ["es", "es"],
    ["en-GB", "en"],
    ["pt-BR,pt;q=0.9", "en"],
    ["fr;q=0.4, es;q=0.8", "es"],
    ["de;q=0, fr", "fr"],
    ["*", "en"],
    ["", "en"],
  ] as const)("Accept-Language %j gives %s", async (header, lang) => {
    const { token } = await animalWithTag(h.api, freshActor("owner"));
    const res = await view(token, header ? { "accept-language": header } : {});
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers.vary).toContain("Accept-Language");
    expect(res.body).toContain(`<html lang="${lang}">`);
    expect(res.body).toContain(html(catalogues[lang].form.heading));
    expect(res.body).toContain(html(catalogues[lang].species.dog));
  });

  it("shows what the profile shows, escaped, and nothing that is not public", async () => {
    const owner = freshActor("owner");
    const { token } = await animalWithTag(
      h.api,
      owner,
      { name: "<b>Rex</b>", species: "cat", breed: "Maine Coon", colors: ["grey", "white"] },
      { showName: true, medicalNotes: "Needs <insulin> & water", instructions: "Call \"the vet\" first" },
    );
    const res = await view(token);
    expect(res.body).toContain("<h1>&lt;b&gt;Rex&lt;/b&gt;</h1>");
    expect(res.body).not.toContain("<b>Rex</b>");
    for (const text of ["Maine Coon", "grey, white", "Needs &lt;insulin&gt; &amp; water", "Call &quot;the vet&quot; first", "Cat"]) {
      expect(res.body).toContain(text);
    }
    const rules = new PrivacyRules().actor(owner);
    expect(rules.violations(res.body)).toEqual([]);
  });

  it("leaves the name out when the owner chose not to show it", async () => {
    const { token } = await animalWithTag(h.api, freshActor("owner"), { name: "Secretname", species: "dog" }, { showName: false });
    const res = await view(token);
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain("Secretname");
    expect(res.body).toContain("<h1>Dog</h1>");
  });

  it("is a page with no framework runtime, no third-party origin, a same-origin CSP and noindex", async () => {
    const { token } = await animalWithTag(h.api, freshActor("owner"));
    const res = await view(token);
    const csp = String(res.headers["content-security-policy"]);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("form-action 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers["x-robots-tag"]).toBe("noindex, nofollow");
    expect(res.headers["cache-control"]).toBe("no-store");
    // The origin alone, never the token's URL; and the page's own form post keeps its Origin (api/plugins/same-origin-forms.ts).
    expect(res.headers["referrer-policy"]).toBe("strict-origin");
    expect(res.body).toContain('<meta name="referrer" content="strict-origin">');
    expect(res.body).toContain('<meta name="robots" content="noindex, nofollow">');
    expect(res.body).not.toMatch(/https?:\/\//);
    expect(res.body).not.toMatch(/<script>|\son[a-z]+=|style="/i);
    const assets = [...res.body.matchAll(/(?:href|src)="(\/t\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toHaveLength(2);
    for (const url of assets) {
      const asset = await call(h.api, { url });
      expect(asset.statusCode, url).toBe(200);
      expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    }
    expect((await call(h.api, { url: "/t/assets/tag-000000000000.css" })).statusCode).toBe(404);
  });

  it("says the animal is lost while an open lost report made from it is public, and only then", async () => {
    const owner = freshActor("owner");
    const { animalId, token } = await animalWithTag(h.api, owner);
    const lost = html(catalogues.en.lost.heading);
    expect((await view(token)).body).not.toContain(lost);

    const reportId = await reportAnimalLost(h.api, owner, animalId, { lastSeenAt: "2025-11-20T08:00:00Z" });
    const page = (await view(token)).body;
    expect(page).toContain(lost);
    expect(page).toContain("Missing since November 20, 2025");
    expect((await view(token, { "accept-language": "de" })).body).toContain("Vermisst seit 20. November 2025");

    await moderate(h.db, "lost_report", reportId);
    expect((await view(token)).body).not.toContain(lost);
    await h.db.pool.query(`delete from moderation_content_state where target_id = $1`, [reportId]);
    expect((await view(token)).body).toContain(lost);

    const resolved = await call(h.api, { method: "POST", url: `/v1/safety/lost-reports/${reportId}/resolve`, headers: as(owner), payload: { outcome: "reunited" } });
    expect(resolved.statusCode).toBe(200);
    expect((await view(token)).body).not.toContain(lost);
  });
});

describe("an unknown, revoked or malformed token gets one and the same 404 page", () => {
  it("answers every kind of bad token with the identical HTML 404", async () => {
    const owner = freshActor("owner");
    const { animalId, token: replaced } = await animalWithTag(h.api, owner);
    const reissued = await call(h.api, { method: "PUT", url: `/v1/animals/${animalId}/emergency-profile`, headers: as(owner), payload: { showName: true } });
    const { animalId: revokedAnimal, token: revoked } = await animalWithTag(h.api, freshActor("owner"));
    const revoke = await call(h.api, { method: "POST", url: `/v1/admin/animals/${revokedAnimal}/emergency-profile/revoke`, headers: admin(), payload: { reason: "lost tag" } });
    expect(revoke.statusCode).toBe(204);
    const valid = reissued.json().token as string;
    const bad = [
      ["unknown", "A".repeat(43)],
      ["replaced", replaced],
      ["revoked", revoked],
      ["too short", valid.slice(0, 42)],
      ["too long", `${valid}A`],
      ["wrong alphabet", `${valid.slice(0, 42)}!`],
      ["dots", "..".repeat(21) + "."],
      ["percent-encoded slash", encodeURIComponent(`${valid.slice(0, 40)}/..`)],
      ["over the router's 200 characters", "a".repeat(300)],
      ["broken percent-encoding", "%E0%A4%A"],
    ];
    const bodies = new Set<string>();
    for (const [label, token] of bad) {
      const res = await view(token!);
      expect(res.statusCode, label).toBe(404);
      expect(res.headers["content-type"], label).toBe("text/html; charset=utf-8");
      expect(res.headers["content-security-policy"], label).toContain("default-src 'self'");
      bodies.add(res.body);
    }
    expect(bodies.size).toBe(1);
    expect([...bodies][0]).toContain(html(catalogues.en.notFound.title));
    expect((await view(valid)).statusCode).toBe(200);
  });

  it("looks a malformed token up like an unknown one: one query either way", async () => {
    const queries: string[] = [];
    const counting = { query: (...args: unknown[]) => (queries.push("q"), (h.db.pool.query as (...a: unknown[]) => unknown)(...args)) };
    for (const token of ["short", "B".repeat(43), "é".repeat(43)]) {
      queries.length = 0;
      expect(await lookupTag(counting as never, token)).toBeNull();
      expect(queries, token).toHaveLength(1);
    }
  });
});

describe("each view is recorded as a scan, rate-limited per IP, and listed to the owner", () => {
  it("records a GET, never a HEAD, and lists scans newest first to the owner only", async () => {
    const owner = freshActor("owner");
    const { animalId, token } = await animalWithTag(h.api, owner);
    expect((await view(token, {}, "HEAD")).statusCode).toBe(200);
    expect(await count(h.db, `select 1 from animal_scan where animal_id = $1`, [animalId])).toBe(0);
    for (let i = 0; i < 3; i++) expect((await view(token)).statusCode).toBe(200);

    const first = await call(h.api, { url: `/v1/animals/${animalId}/scans?limit=2`, headers: as(owner) });
    expect(first.statusCode, first.body).toBe(200);
    const { rows } = await h.db.pool.query(`select id from animal_scan where animal_id = $1 order by scanned_at desc, id desc`, [animalId]);
    expect(first.json().items.map((s: { id: string }) => s.id)).toEqual(rows.slice(0, 2).map((r) => r.id));
    expect(first.json().items[0]).toEqual({ id: rows[0].id, scannedAt: expect.any(String), location: null });
    const second = await call(h.api, { url: `/v1/animals/${animalId}/scans?limit=2&cursor=${first.json().nextCursor}`, headers: as(owner) });
    expect(second.json()).toEqual({ items: [expect.objectContaining({ id: rows[2].id })], nextCursor: null });

    expectProblem(await call(h.api, { url: `/v1/animals/${animalId}/scans`, headers: as(freshActor("other")) }), 403, "forbidden");
    expectProblem(await call(h.api, { url: `/v1/animals/${animalId}/scans`, headers: admin() }), 403, "forbidden");
    expectProblem(await call(h.api, { url: `/v1/animals/${crypto.randomUUID()}/scans`, headers: as(owner) }), 404, "not-found");
    expectProblem(await call(h.api, { url: `/v1/animals/${animalId}/scans` }), 401, "unauthenticated");
  });

  it("refuses the 31st view from one address within the hour with a 429 page, and records 30", async () => {
    const { animalId, token } = await animalWithTag(h.api, freshActor("owner"));
    const ip = freshIp();
    const statuses: number[] = [];
    let last = await h.api.app.inject({ url: `/t/${token}`, remoteAddress: ip, headers: { accept: "text/html", "accept-language": "fr" } });
    statuses.push(last.statusCode);
    for (let i = 0; i < 30; i++) {
      last = await h.api.app.inject({ url: `/t/${token}`, remoteAddress: ip, headers: { accept: "text/html", "accept-language": "fr" } });
      statuses.push(last.statusCode);
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    expect(last.statusCode).toBe(429);
    expect(Number(last.headers["retry-after"])).toBeGreaterThan(0);
    expect(last.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(last.body).toContain(html(catalogues.fr.tooManyViews.title));
    expect(await count(h.db, `select 1 from animal_scan where animal_id = $1`, [animalId])).toBe(30);
    // Another address is not held back.
    expect((await view(token)).statusCode).toBe(200);
  });
});

describe("GET /emergency/{token} sends a browser to the tag page", () => {
  it("redirects an HTML-preferring client with 303 and keeps JSON for API clients", async () => {
    const { token } = await animalWithTag(h.api, freshActor("owner"));
    const browser = await call(h.api, { url: `/emergency/${token}`, headers: { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" } });
    expect(browser.statusCode).toBe(303);
    expect(browser.headers.location).toBe(`/t/${token}`);
    for (const accept of [undefined, "*/*", "application/json", "application/json, text/html;q=0.5"]) {
      const res = await call(h.api, { url: `/emergency/${token}`, headers: accept ? { accept } : {} });
      expect(res.statusCode, accept).toBe(200);
      expect(res.json().species).toBe("dog");
    }
  });
});
