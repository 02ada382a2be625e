import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogues } from "../../api/tag/i18n/index.js";
import { escapeHtml } from "../../api/tag/render.js";
import { buildTestApi, devEnv, type TestApi } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { count, expectProblem, freshActor, freshIp } from "../safety/helpers.js";
import { animalWithTag, postTagForm } from "./helpers.js";

/**
 * The tag page's form takes posts from this site's own pages only
 * (api/plugins/same-origin-forms.ts): what a browser says in `Origin` and
 * `Sec-Fetch-Site` decides, and another site's post gets the 403 page
 * before anything is read or written. Chromium's own posts, same-site and
 * cross-site, are in tag-browser.test.ts.
 */
let h: Harness;
/** The same app with a public base URL set, as in production. */
let deployed: TestApi;
const PUBLIC = "https://tags.example.org";

beforeAll(async () => {
  h = await startHarness();
  deployed = await buildTestApi(devEnv(h.db.url, h.bus.url, { API_PUBLIC_BASE_URL: `${PUBLIC}/` }));
});
afterAll(async () => {
  await deployed?.close();
  await h?.close();
});

const fields = { message: "Found him by the lake", fromContact: "jo@example.org" };
const messages = (animalId: string) => count(h.db, `select 1 from safety_relay_message where animal_id = $1`, [animalId]);

async function post(headers: Record<string, string>, api: TestApi = h.api) {
  const { animalId, token } = await animalWithTag(h.api, freshActor("owner"));
  const ip = freshIp();
  const res = await postTagForm(api, token, fields, { remoteAddress: ip, headers });
  return { res, animalId, ip };
}

describe("another site's form post is refused with the tag page's 403 page, and nothing is sent", () => {
  it.each([
    ["Origin of another site", { origin: "https://evil.example" }],
    ["Origin of another site, even claiming same-origin", { origin: "https://evil.example", "sec-fetch-site": "same-origin" }],
    ["Sec-Fetch-Site: cross-site", { "sec-fetch-site": "cross-site" }],
    ["Sec-Fetch-Site: same-site (a sibling host)", { "sec-fetch-site": "same-site", origin: "http://other.localhost" }],
    ["Origin: null with nothing to vouch for it", { origin: "null" }],
    ["an Origin that is no URL", { origin: "evil" }],
  ])("%s", async (_name, headers) => {
    const { res, animalId, ip } = await post({ ...headers, "accept-language": "fr" });
    expect(res.statusCode, res.body).toBe(403);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers["content-security-policy"]).toContain("form-action 'self'");
    expect(res.body).toContain(escapeHtml(catalogues.fr.otherSite.title));
    expect(res.body).toContain(escapeHtml(catalogues.fr.otherSite.body));
    expect(await messages(animalId)).toBe(0);
    // Refused before the per-address bucket is touched: the visitor's own limit is not spent either.
    expect(await count(h.db, `select 1 from rate_limit_bucket where key = $1`, [`relay-message:${ip}`])).toBe(0);
  });

  it("answers an API client with problem+json 403 forbidden", async () => {
    const { animalId, token } = await animalWithTag(h.api, freshActor("owner"));
    const res = await postTagForm(h.api, token, fields, { headers: { origin: "https://evil.example", accept: "application/json" } });
    expectProblem(res, 403, "forbidden");
    expect(await messages(animalId)).toBe(0);
  });
});

describe("this site's own posts, and clients that send neither header, are taken", () => {
  it.each([
    ["Origin of API_PUBLIC_BASE_URL (its default)", { origin: "http://localhost:8080" }],
    ["Origin of the request's own host, while the public URL is a loopback one", { origin: "http://localhost" }],
    ["Sec-Fetch-Site: same-origin", { "sec-fetch-site": "same-origin" }],
    ["Sec-Fetch-Site: none (typed by the user)", { "sec-fetch-site": "none" }],
    ["Origin: null that Sec-Fetch-Site vouches for (a no-referrer page)", { origin: "null", "sec-fetch-site": "same-origin" }],
    ["neither header (curl, an old browser)", {}],
  ])("%s", async (_name, headers) => {
    const { res, animalId } = await post(headers);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain(escapeHtml(catalogues.en.thanks.title));
    expect(await messages(animalId)).toBe(1);
  });

  it("with a public base URL set, takes only its origin: a foreign host name pointed at the API is another site", async () => {
    const own = await post({ origin: PUBLIC, "sec-fetch-site": "same-origin" }, deployed);
    expect(own.res.statusCode, own.res.body).toBe(200);
    // inject's Host is localhost:80: as if evil.example's DNS named our address, its page posts same-origin to itself.
    const rebound = await post({ origin: "http://localhost", "sec-fetch-site": "same-origin" }, deployed);
    expect(rebound.res.statusCode).toBe(403);
    expect(await messages(rebound.animalId)).toBe(0);
  });

  it("checks only the routes marked as forms: the JSON contact route keeps taking any origin (CORS governs it)", async () => {
    const owner = freshActor("owner");
    const report = await h.api.app.inject({
      method: "POST",
      url: "/v1/safety/lost-reports",
      remoteAddress: freshIp(),
      headers: { "x-debug-actor": owner },
      payload: { animal: { species: "cat" }, lastSeenAt: "2025-11-20T08:00:00Z", location: { lat: 48.85, lon: 2.35 } },
    });
    const res = await h.api.app.inject({
      method: "POST",
      url: `/v1/safety/lost-reports/${report.json().id}/relay-message`,
      remoteAddress: freshIp(),
      headers: { origin: "https://app.example", "sec-fetch-site": "cross-site" },
      payload: fields,
    });
    expect(res.statusCode, res.body).toBe(202);
  });
});
