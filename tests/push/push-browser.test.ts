import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogues } from "../../api/tag/i18n/index.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { freshActor } from "../safety/helpers.js";
import { launchChromium, type Browser } from "../console/browser.js";
import { animalWithTag, reportAnimalLost } from "../tag/helpers.js";

/**
 * "Get alerts on this phone" in Debian's Chromium, on the tag page and the
 * share page, against the real API on a real port: the service worker
 * registers and the link to the app's settings (where push is turned on,
 * tests/app/app-screens.test.ts) appears where PushManager exists, and stays
 * hidden where it does not or without JavaScript. Delivery is tested against a real push service
 * (tests/push/push-delivery.test.ts).
 */
const VAPID_PUBLIC_KEY = "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg";
const m = catalogues.en;

let h: Harness;
let baseUrl: string;
let browser: Browser;
let pages: { tag: string; share: string };

beforeAll(async () => {
  browser = await launchChromium();
  h = await startHarness({ VAPID_PUBLIC_KEY });
  const { api } = h;
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;

  const owner = freshActor("owner");
  const tag = await animalWithTag(api, owner, { name: "Rex", species: "dog", breed: "Beagle", colors: ["brown"] });
  const reportId = await reportAnimalLost(api, owner, tag.animalId, { lastSeenAt: "2025-11-20T08:00:00Z" });
  pages = { tag: `/t/${tag.token}`, share: `/lost/${reportId}` };
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

async function open(path: string, options: { withoutPushManager?: boolean; javascript?: boolean } = {}): Promise<{ page: Page; cspViolations: string[] }> {
  const page = await browser.context.newPage();
  await page.setExtraHTTPHeaders({ "accept-language": "en" });
  const cspViolations: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  if (options.withoutPushManager) await page.addInitScript("delete window.PushManager;");
  if (options.javascript === false) {
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send("Emulation.setScriptExecutionDisabled", { value: true });
  }
  await page.goto(`${baseUrl}${path}`, { waitUntil: "load" });
  return { page, cspViolations };
}

describe.each(["tag", "share"] as const)("the %s page's \"Get alerts on this phone\"", (which) => {
  it("registers the service worker at /sw.js for scope / and shows the button where the browser has PushManager", async () => {
    const { page, cspViolations } = await open(pages[which]);
    try {
      const button = page.getByRole("link", { name: m.push.subscribe });
      await button.waitFor({ state: "visible" });
      const registration = await page.evaluate<{ scope: string; script: string | null }>(`navigator.serviceWorker.ready.then((r) => ({
        scope: r.scope,
        script: (r.active || r.waiting || r.installing) ? (r.active || r.waiting || r.installing).scriptURL : null,
      }))`);
      expect(registration).toEqual({ scope: `${baseUrl}/`, script: `${baseUrl}/sw.js` });
      expect(cspViolations).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("takes the visitor to the app's settings, where they sign in and turn push on, and subscribes nothing itself", async () => {
    const { page } = await open(pages[which]);
    try {
      const posts: string[] = [];
      page.on("request", (request) => {
        if (request.method() === "POST") posts.push(request.url());
      });
      await page.getByRole("link", { name: m.push.subscribe }).click();
      await page.waitForURL(`${baseUrl}/app/#/settings`);
      expect(posts).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("keeps the button hidden where the browser has no PushManager, and the page works", async () => {
    const { page } = await open(pages[which], { withoutPushManager: true });
    try {
      await page.getByRole("heading", { level: 1 }).waitFor();
      // The page's other script ran (the same file): the button still is not there.
      await page.waitForFunction("document.readyState === 'complete'");
      expect(await page.locator("#push-subscribe").isHidden()).toBe(true);
    } finally {
      await page.close();
    }
  });

  it("keeps the button hidden without JavaScript", async () => {
    const { page } = await open(pages[which], { javascript: false });
    try {
      await page.getByRole("heading", { level: 1 }).waitFor();
      expect(await page.locator("#push-subscribe").isHidden()).toBe(true);
    } finally {
      await page.close();
    }
  });
});
