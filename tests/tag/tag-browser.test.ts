import { mkdirSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogues, type Language } from "../../api/tag/i18n/index.js";
import { coarsen } from "../../lib/geo.js";
import { consoleBundleDir } from "../../api/console/routes.js";
import type { TestApi } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { freshActor } from "../safety/helpers.js";
import { launchChromium, type Browser } from "../console/browser.js";
import { animalWithTag, reportAnimalLost } from "./helpers.js";

/**
 * The tag page in Debian's Chromium against the real API on a real port:
 * every language, the form with and without JavaScript, the optional
 * location step, and the page's weight with its photo thumb.
 */
const THUMB_URL = "/test-photos/rex-thumb.webp";
const WEIGHT_LIMIT = 100 * 1024;

let h: Harness;
let api: TestApi;
let baseUrl: string;
let browser: Browser;
let thumb: Buffer;
let owner: string;
let tag: { animalId: string; token: string };

/** A 320 px WebP thumb like the photo variants (gradients and noise, so it compresses like a photo), drawn by Chromium itself. */
async function drawThumb(page: Page): Promise<Buffer> {
  // Page code as text: the test's TypeScript has no DOM types.
  const dataUrl = await page.evaluate<string>(`(() => {
    const canvas = document.createElement("canvas");
    canvas.width = 320;
    canvas.height = 240;
    const ctx = canvas.getContext("2d");
    const sky = ctx.createLinearGradient(0, 0, 0, 240);
    sky.addColorStop(0, "#8fb8de");
    sky.addColorStop(1, "#4a7a3a");
    ctx.fillStyle = sky;
    ctx.fillRect(0, 0, 320, 240);
    ctx.fillStyle = "#8b5a2b";
    ctx.beginPath();
    ctx.ellipse(160, 150, 90, 60, 0, 0, Math.PI * 2);
    ctx.fill();
    ctx.beginPath();
    ctx.ellipse(235, 100, 38, 34, 0, 0, Math.PI * 2);
    ctx.fill();
    const image = ctx.getImageData(0, 0, 320, 240);
    let seed = 7;
    for (let i = 0; i < image.data.length; i += 4) {
      seed = (seed * 16807) % 2147483647;
      const noise = (seed % 41) - 20;
      for (let c = 0; c < 3; c++) image.data[i + c] = Math.max(0, Math.min(255, image.data[i + c] + noise));
    }
    ctx.putImageData(image, 0, 0);
    return canvas.toDataURL("image/webp", 0.8);
  })()`);
  return Buffer.from(dataUrl.split(",")[1]!, "base64");
}

beforeAll(async () => {
  browser = await launchChromium();
  const blank = await browser.context.newPage();
  thumb = await drawThumb(blank);
  await blank.close();

  h = await startHarness(
    {},
    {
      // The photo slot's source until animal photos exist is empty; here it gives one same-origin thumb.
      tagPhotos: async () => [THUMB_URL],
      addRoutes: (app) =>
        app.get(THUMB_URL, { config: { auth: "public" }, schema: { hide: true } }, (_request, reply) =>
          reply.type("image/webp").header("cache-control", "public, max-age=31536000, immutable").send(thumb),
        ),
    },
  );
  api = h.api;
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;

  owner = freshActor("owner");
  tag = await animalWithTag(api, owner, { name: "Rex", species: "dog", breed: "Beagle", colors: ["brown", "white"] });
  await reportAnimalLost(api, owner, tag.animalId, { lastSeenAt: "2025-11-20T08:00:00Z" });
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

interface Load {
  page: Page;
  requested: string[];
  cspViolations: string[];
  bytes: number;
  /** Bytes over the wire (headers and body) per request path. */
  perRequest: Record<string, number>;
}

/** Opens the tag page as a phone would, counting every byte that came over the wire. */
async function openTagPage(lang: Language, options: { javascript?: boolean; coldCache?: boolean } = {}): Promise<Load> {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.setExtraHTTPHeaders({ "accept-language": lang });
  const cdp = await browser.context.newCDPSession(page);
  if (options.javascript === false) await cdp.send("Emulation.setScriptExecutionDisabled", { value: true });
  // A first visit: the earlier tests' cached CSS, script and thumb would weigh nothing.
  if (options.coldCache) {
    await cdp.send("Network.enable");
    await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
  }
  const load: Load = { page, requested: [], cspViolations: [], bytes: 0, perRequest: {} };
  const sizes: Promise<number>[] = [];
  page.on("request", (request) => load.requested.push(request.url()));
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) load.cspViolations.push(message.text());
  });
  page.on("requestfinished", (request) => {
    const path = new URL(request.url()).pathname.replace(tag.token, "{token}");
    sizes.push(request.sizes().then((s) => (load.perRequest[path] = s.responseBodySize + s.responseHeadersSize)));
  });
  await page.goto(`${baseUrl}/t/${tag.token}`, { waitUntil: "load" });
  load.bytes = (await Promise.all(sizes)).reduce((a, b) => a + b, 0);
  return load;
}

const screenshotDir = join(dirname(dirname(consoleBundleDir())), "docs");

describe("the tag page in Chromium", () => {
  it.each(["en", "de", "fr", "es"] as const)("loads in %s with its photo, the lost banner and nothing from another origin", async (lang) => {
    const m = catalogues[lang];
    const { page, requested, cspViolations } = await openTagPage(lang);
    try {
      expect(await page.locator("html").getAttribute("lang")).toBe(lang);
      await page.getByRole("heading", { name: m.lost.heading }).waitFor();
      await page.getByRole("heading", { level: 1, name: "Rex" }).waitFor();
      const photo = page.getByRole("img", { name: m.photoAlt.replace("{name}", "Rex") });
      expect(await photo.evaluate((img) => {
        const loaded = img as unknown as { complete: boolean; naturalWidth: number };
        return loaded.complete && loaded.naturalWidth;
      })).toBe(320);
      // Every field has its label; the location button appears only with JavaScript.
      await page.getByLabel(m.form.message).waitFor();
      await page.getByLabel(m.form.contact).waitFor();
      expect(await page.getByRole("button", { name: m.form.shareLocation }).isVisible()).toBe(true);
      expect(requested.filter((url) => !url.startsWith(`${baseUrl}/`))).toEqual([]);
      expect(cspViolations).toEqual([]);
      if (process.env.UPDATE_SCREENSHOTS === "1") {
        mkdirSync(screenshotDir, { recursive: true });
        await page.screenshot({ path: join(screenshotDir, `tag-page-${lang}.png`), fullPage: true });
      }
    } finally {
      await page.close();
    }
  });

  it("weighs at most 100 KB with its photo thumb", async () => {
    const { page, requested, bytes, perRequest } = await openTagPage("en", { coldCache: true });
    await page.close();
    console.log(`tag page weight, first visit: ${bytes} bytes over ${requested.length} requests, limit ${WEIGHT_LIMIT}: ${JSON.stringify(perRequest)}`);
    expect(requested).toHaveLength(4);
    expect(bytes).toBeGreaterThan(thumb.length);
    expect(bytes).toBeLessThanOrEqual(WEIGHT_LIMIT);
  });

  it("sends a message with the shared location and ends on the thank-you page", async () => {
    const m = catalogues.fr;
    await browser.context.grantPermissions(["geolocation"], { origin: baseUrl });
    const precise = { latitude: 48.858372, longitude: 2.294481 };
    await browser.context.setGeolocation(precise);
    const { page } = await openTagPage("fr");
    try {
      await page.getByLabel(m.form.message).fill("Je l'ai trouvé près de la tour");
      await page.getByLabel(m.form.contact).fill("marie@example.fr");
      await page.getByRole("button", { name: m.form.shareLocation }).click();
      await page.getByRole("status").getByText(m.form.locationShared).waitFor();
      await page.getByRole("button", { name: m.form.submit }).click();
      await page.getByRole("heading", { name: m.thanks.title }).waitFor();
    } finally {
      await page.close();
    }
    const { rows } = await h.db.pool.query(
      `select st_y(s.coarse_location::geometry) as lat, st_x(s.coarse_location::geometry) as lon
       from animal_scan s where s.animal_id = $1 and s.coarse_location is not null`,
      [tag.animalId],
    );
    expect(rows).toEqual([coarsen({ lat: precise.latitude, lon: precise.longitude })]);
    const { rows: messages } = await h.db.pool.query(`select message from safety_relay_message where lost_report_id is not null and from_contact = 'marie@example.fr'`);
    expect(messages).toEqual([{ message: "Je l'ai trouvé près de la tour" }]);
  });

  it("works without JavaScript: no location step, the form posts, errors come back on the page", async () => {
    const m = catalogues.de;
    const { page } = await openTagPage("de", { javascript: false });
    try {
      expect(await page.getByRole("button", { name: m.form.shareLocation }).isVisible()).toBe(false);
      await page.getByLabel(m.form.contact).fill("+49 170 0000000");
      await page.getByRole("button", { name: m.form.submit }).click();
      const summary = page.getByRole("alert");
      await summary.getByText(m.errors.messageRequired).waitFor();
      expect(await page.getByLabel(m.form.message).getAttribute("aria-invalid")).toBe("true");
      expect(await page.getByLabel(m.form.contact).inputValue()).toBe("+49 170 0000000");
      await page.getByLabel(m.form.message).fill("Ich habe Rex gefunden");
      const posted = page.waitForRequest((request) => request.method() === "POST");
      await page.getByRole("button", { name: m.form.submit }).click();
      await page.getByRole("heading", { name: m.thanks.title }).waitFor();
      // The page's referrer policy keeps the real Origin on its own post (no-referrer would send `null`).
      const headers = await (await posted).allHeaders();
      expect({ origin: headers.origin, site: headers["sec-fetch-site"] }).toEqual({ origin: baseUrl, site: "same-origin" });
    } finally {
      await page.close();
    }
    const { rows } = await h.db.pool.query(`select count(*)::int as n from safety_relay_message where message = 'Ich habe Rex gefunden'`);
    expect(rows[0].n).toBe(1);
  });

  it("refuses the form when another site's page posts it: the 403 page, and nothing is sent", async () => {
    const m = catalogues.en;
    // Another site: a page on 127.0.0.2 (its own site) with a form aimed at the tag page's.
    const evil = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      response.end(
        `<!doctype html><title>Win a prize</title><form method="post" action="${baseUrl}/t/${tag.token}/message">` +
          `<input name="message" value="spam from another site"><input name="fromContact" value="spam@example.net">` +
          `<button>Claim</button></form>`,
      );
    });
    await new Promise<void>((resolve) => evil.listen(0, "127.0.0.2", resolve));
    const evilUrl = `http://127.0.0.2:${(evil.address() as AddressInfo).port}`;
    const page = await browser.context.newPage();
    try {
      await page.setExtraHTTPHeaders({ "accept-language": "en" });
      await page.goto(evilUrl);
      const posted = page.waitForRequest((request) => request.method() === "POST");
      await page.getByRole("button", { name: "Claim" }).click();
      await page.getByRole("heading", { name: m.otherSite.title }).waitFor();
      const headers = await (await posted).allHeaders();
      expect({ origin: headers.origin, site: headers["sec-fetch-site"] }).toEqual({ origin: evilUrl, site: "cross-site" });
    } finally {
      await page.close();
      evil.closeAllConnections();
      await new Promise((resolve) => evil.close(resolve));
    }
    const { rows } = await h.db.pool.query(`select count(*)::int as n from safety_relay_message where message = 'spam from another site'`);
    expect(rows[0].n).toBe(0);
  });
});
