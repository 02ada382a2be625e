import { mkdirSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogues, type Language } from "../../api/tag/i18n/index.js";
import { coarsen } from "../../lib/geo.js";
import { LocalObjectStorage } from "../../lib/storage/index.js";
import { TEST_PHOTO_DIR } from "../helpers/app.js";
import { launchChromium, type Browser } from "../console/browser.js";
import { phoneJpeg, photoJobsNow, upload } from "../photos/support.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { createLostReport, freshActor, lostReportBody } from "../safety/helpers.js";

/**
 * The share page in Debian's Chromium against the real API on a real port:
 * every language with its photo, both forms posted, the optional location
 * step, nothing from another origin, and the page's weight with its photo.
 */
const WEIGHT_LIMIT = 150 * 1024;
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === "1";
const screenshotDir = join(import.meta.dirname, "../../docs");

let h: Harness;
let browser: Browser;
let baseUrl: string;
const storage = new LocalObjectStorage(TEST_PHOTO_DIR);
const { process: processNow } = photoJobsNow(() => h.api.pool, storage);

beforeAll(async () => {
  browser = await launchChromium();
  h = await startHarness();
  await h.api.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(h.api.app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
  rmSync(TEST_PHOTO_DIR, { recursive: true, force: true });
});

/** A lost report with one ready photo, as its owner would make it. */
async function lostWithPhoto(name: string): Promise<string> {
  const owner = freshActor("owner");
  const id = await createLostReport(h.api, owner, {
    animal: { ...lostReportBody().animal, name, sex: "female" },
    description: "Small and shy, wearing a red collar. She may hide under parked cars.",
  });
  const res = await upload(h.api, `/v1/safety/lost-reports/${id}/photos`, owner, await phoneJpeg(1600, 1200, 5));
  expect(res.statusCode, res.body).toBe(202);
  await processNow(res.json().id);
  return id;
}

interface Load {
  page: Page;
  requested: string[];
  cspViolations: string[];
  bytes: number;
}

async function openSharePage(id: string, lang: Language, options: { coldCache?: boolean; javascript?: boolean } = {}): Promise<Load> {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.setExtraHTTPHeaders({ "accept-language": lang });
  const cdp = await browser.context.newCDPSession(page);
  if (options.javascript === false) await cdp.send("Emulation.setScriptExecutionDisabled", { value: true });
  if (options.coldCache) {
    await cdp.send("Network.enable");
    await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
  }
  const load: Load = { page, requested: [], cspViolations: [], bytes: 0 };
  const sizes: Promise<number>[] = [];
  page.on("request", (request) => load.requested.push(request.url()));
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) load.cspViolations.push(message.text());
  });
  page.on("requestfinished", (request) => sizes.push(request.sizes().then((s) => s.responseBodySize + s.responseHeadersSize)));
  await page.goto(`${baseUrl}/lost/${id}`, { waitUntil: "load" });
  load.bytes = (await Promise.all(sizes)).reduce((a, b) => a + b, 0);
  return load;
}

const names: Record<Language, string> = { en: "Bella", de: "Greta", fr: "Lucie", es: "Luna" };

describe("the share page in Chromium", () => {
  it.each(["en", "de", "fr", "es"] as const)("in %s: the headline and photo, nothing from another origin, and both forms post", async (lang) => {
    const m = catalogues[lang];
    const id = await lostWithPhoto(names[lang]);
    const { page, requested, cspViolations } = await openSharePage(id, lang);
    try {
      expect(await page.locator("html").getAttribute("lang")).toBe(lang);
      await page.getByRole("heading", { level: 1, name: m.share.lost.replace("{species}", m.species.dog).toLocaleUpperCase(lang) }).waitFor();
      const photo = page.getByRole("img", { name: m.share.photoAlt });
      expect(await photo.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(1600);
      await page.getByRole("link", { name: m.share.mapLink }).waitFor();
      expect(requested.filter((url) => !url.startsWith(`${baseUrl}/`))).toEqual([]);
      expect(cspViolations).toEqual([]);
      if (SCREENSHOTS) {
        mkdirSync(screenshotDir, { recursive: true });
        await page.screenshot({ path: join(screenshotDir, `share-page-${lang}.png`), fullPage: true });
      }

      await page.getByLabel(m.share.sighting.note).fill(`${names[lang]} ran past the bakery`);
      await page.getByRole("button", { name: m.share.sighting.submit }).click();
      await page.getByRole("heading", { name: m.share.sighting.thanks.title }).waitFor();

      await page.goto(`${baseUrl}/lost/${id}`);
      await page.getByLabel(m.form.message).fill(`I have ${names[lang]}`);
      await page.getByLabel(m.form.contact).fill(`finder-${lang}@example.org`);
      await page.getByRole("button", { name: m.form.submit }).click();
      await page.getByRole("heading", { name: m.thanks.title }).waitFor();
    } finally {
      await page.close();
    }
    const sightings = await h.db.pool.query(`select note from safety_sighting where lost_report_id = $1`, [id]);
    expect(sightings.rows).toEqual([{ note: `${names[lang]} ran past the bakery` }]);
    const messages = await h.db.pool.query(`select message from safety_relay_message where lost_report_id = $1`, [id]);
    expect(messages.rows).toEqual([{ message: `I have ${names[lang]}` }]);
  });

  it("weighs at most 150 KB with its first photo, on a first visit", async () => {
    const id = await lostWithPhoto("Bella");
    const { page, requested, bytes } = await openSharePage(id, "en", { coldCache: true });
    await page.close();
    console.log(`share page weight, first visit: ${bytes} bytes over ${requested.length} requests, limit ${WEIGHT_LIMIT}`);
    expect(bytes).toBeLessThanOrEqual(WEIGHT_LIMIT);
  });

  it("the sighting form's location step sends only the ~1 km cell", async () => {
    const m = catalogues.en;
    const id = await lostWithPhoto("Bella");
    await browser.context.grantPermissions(["geolocation"], { origin: baseUrl });
    const precise = { latitude: 48.858372, longitude: 2.294481 };
    await browser.context.setGeolocation(precise);
    const { page } = await openSharePage(id, "en");
    try {
      const sighting = page.locator("form", { has: page.getByLabel(m.share.sighting.note) });
      await sighting.getByRole("button", { name: m.form.shareLocation }).click();
      await sighting.getByRole("status").getByText(m.form.locationShared).waitFor();
      await page.getByRole("button", { name: m.share.sighting.submit }).click();
      await page.getByRole("heading", { name: m.share.sighting.thanks.title }).waitFor();
    } finally {
      await page.close();
    }
    const { rows } = await h.db.pool.query(
      `select st_y(location::geometry) as lat, st_x(location::geometry) as lon from safety_sighting where lost_report_id = $1`,
      [id],
    );
    expect(rows).toEqual([coarsen({ lat: precise.latitude, lon: precise.longitude })]);
  });

  it("works without JavaScript: no location step, a bad note comes back with its error", async () => {
    const m = catalogues.de;
    const id = await lostWithPhoto("Greta");
    const { page } = await openSharePage(id, "de", { javascript: false });
    try {
      expect(await page.getByRole("button", { name: m.form.shareLocation }).first().isVisible()).toBe(false);
      await page.getByLabel(m.form.contact).fill("jemand");
      await page.getByRole("button", { name: m.form.submit }).click();
      await page.getByRole("alert").getByText(m.errors.messageRequired).waitFor();
      expect(await page.getByLabel(m.form.contact).inputValue()).toBe("jemand");
    } finally {
      await page.close();
    }
  });
});
