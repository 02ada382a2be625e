import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, type TestApi } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call } from "../safety/helpers.js";
import { ensureConsoleBundle, launchChromium, row, screenshot, signInAsDebugActor, type Browser } from "./browser.js";

/** The console's Partners screen in Chromium: create a shelter partner, read its password once, change its stray hold, rotate, suspend, restore. */

const ADMIN = "admin-partners-1";
const KEY = "console-test-integration-key";

let h: Harness;
let api: TestApi;
let baseUrl: string;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  await ensureConsoleBundle();
  h = await startHarness({ PARTNER_API_KEYS: KEY });
  api = h.api;
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  browser = await launchChromium();
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await signInAsDebugActor(page, baseUrl, ADMIN, "platform_admin");
  await page.getByRole("heading", { name: "Moderation queue" }).waitFor();
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Partners" }).click();
  await page.getByRole("heading", { name: "Partners" }).waitFor();
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

const login = (email: string, password: string) =>
  call(api, { method: "POST", url: "/partners/v2/auth/login", headers: { "x-api-key": KEY }, payload: { email, password } });

let partnerId = "";
let password = "";

describe("the Partners screen", () => {
  it("creates a shelter partner and shows its password once, which logs in at the partner API", async () => {
    const form = page.getByRole("form", { name: "New partner" });
    await form.getByLabel("Name").fill("Riverside Animal Shelter");
    await form.getByLabel("Kind").selectOption("shelter");
    await form.getByLabel("Latitude").fill("48.8584");
    await form.getByLabel("Longitude").fill("2.2945");
    await form.getByLabel("Phone").fill("+33 1 23 45 67 89");
    await form.getByLabel(/^Email/).fill("desk@riverside-shelter.example");
    await form.getByLabel("Address").fill("1 Quai Branly, Paris");
    await form.getByLabel("Website").fill("https://riverside-shelter.example");
    await form.getByLabel("Login email").fill("asm3@riverside-shelter.example");
    await form.getByLabel("Date format of its software").selectOption("MM/DD/YYYY");
    await form.getByLabel("Stray hold (days)").fill("7");
    await form.getByRole("button", { name: "Create partner" }).click();

    const shown = page.getByRole("status", { name: "New password" });
    await shown.waitFor();
    password = (await shown.locator("code.secret").textContent()) ?? "";
    expect(password).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const listed = await call(api, { method: "GET", url: "/v1/admin/partners", headers: admin() });
    partnerId = listed.json().items[0].id;
    await row(page, partnerId).waitFor();
    expect(await row(page, partnerId).textContent()).toContain("Riverside Animal Shelter");
    expect(await row(page, partnerId).textContent()).toContain("desk@riverside-shelter.example");
    expect(await row(page, partnerId).textContent()).toContain("holds strays 7 days");
    await screenshot(page, "partners");
    expect((await login("asm3@riverside-shelter.example", password)).statusCode).toBe(200);
    await shown.getByRole("button", { name: "Done" }).click();
    await shown.waitFor({ state: "detached" });
  });

  it("changes how many days the partner holds a stray", async () => {
    const hold = page.getByRole("form", { name: "Stray hold of Riverside Animal Shelter" });
    await hold.getByLabel("Days held").fill("31");
    await hold.getByRole("button", { name: "Change hold" }).click();
    await row(page, partnerId).getByRole("alert").waitFor();
    expect((await h.db.pool.query(`select stray_hold_days from partner where id = $1`, [partnerId])).rows).toEqual([{ stray_hold_days: 7 }]);

    await hold.getByLabel("Days held").fill("10");
    await hold.getByRole("button", { name: "Change hold" }).click();
    await page.getByText("Riverside Animal Shelter now holds strays 10 days").waitFor();
    expect(await row(page, partnerId).textContent()).toContain("holds strays 10 days");
    expect((await h.db.pool.query(`select stray_hold_days from partner where id = $1`, [partnerId])).rows).toEqual([{ stray_hold_days: 10 }]);
  });

  it("rotates the password: the old one stops working, the new one is shown once", async () => {
    await row(page, partnerId).getByRole("button", { name: "Rotate password" }).click();
    const shown = page.getByRole("status", { name: "New password" });
    await shown.waitFor();
    const rotated = (await shown.locator("code.secret").textContent()) ?? "";
    expect(rotated).not.toBe(password);
    expect((await login("asm3@riverside-shelter.example", password)).statusCode).toBe(401);
    expect((await login("asm3@riverside-shelter.example", rotated)).statusCode).toBe(200);
    password = rotated;
    await shown.getByRole("button", { name: "Done" }).click();
  });

  it("suspends the partner, whose calls are then refused, and restores it; each is audited", async () => {
    const suspend = page.getByRole("form", { name: "Suspend Riverside Animal Shelter" });
    await suspend.getByLabel("Reason code").fill("abuse");
    await suspend.getByLabel("Reason", { exact: true }).fill("published animals it does not hold");
    await suspend.getByRole("button", { name: "Suspend" }).click();
    await page.getByText("Riverside Animal Shelter is suspended").waitFor();
    expect(await row(page, partnerId).textContent()).toContain("suspended");
    const refused = await login("asm3@riverside-shelter.example", password);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().type).toMatch(/\/account-suspended$/);

    const restore = page.getByRole("form", { name: "Restore Riverside Animal Shelter" });
    await restore.getByLabel("Reason").fill("checked with the shelter");
    await restore.getByRole("button", { name: "Restore" }).click();
    await page.getByText("Riverside Animal Shelter is restored").waitFor();
    expect((await login("asm3@riverside-shelter.example", password)).statusCode).toBe(200);

    const audit = await h.db.pool.query(`select action, actor_id from audit_event where object_type = 'partner' order by occurred_at, id`);
    expect(audit.rows).toEqual([
      { action: "admin.partner.created", actor_id: ADMIN },
      { action: "admin.partner.updated", actor_id: ADMIN },
      { action: "admin.partner.password_rotated", actor_id: ADMIN },
      { action: "admin.partner.suspended", actor_id: ADMIN },
      { action: "admin.partner.restored", actor_id: ADMIN },
    ]);
  });

  it("shows the API's problem when the input is refused", async () => {
    const form = page.getByRole("form", { name: "New partner" });
    await form.getByLabel("Name").fill("Duplicate login");
    await form.getByLabel("Latitude").fill("48.1");
    await form.getByLabel("Longitude").fill("2.1");
    await form.getByLabel("Login email").fill("asm3@riverside-shelter.example");
    await form.getByRole("button", { name: "Create partner" }).click();
    await page.getByRole("alert").getByText("a partner already logs in with this email").waitFor();
  });
});
