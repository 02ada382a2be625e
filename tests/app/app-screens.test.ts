import type { AddressInfo } from "node:net";
import axe from "axe-core";
import { pino } from "pino";
import type { Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType, type EventEnvelope } from "../../lib/events.js";
import { LocalObjectStorage } from "../../lib/storage/index.js";
import { createMatcher } from "../../jobs/matching/matcher.js";
import { notificationHandlers } from "../../notifier/handlers.js";
import { createPhotoProcessor } from "../../jobs/photos/process.js";
import { admin, as, buildTestApi, devEnv, TEST_PHOTO_DIR, type TestApi } from "../helpers/app.js";
import { launchChromium, type Browser } from "../console/browser.js";
import { photoPart, uploadRequest } from "../photos/support.js";
import { call } from "../safety/helpers.js";
import { appScreenshot, PHONE, signInThroughProvider, startAppStack, type AppStack } from "./support.js";
import { createMetricsRegistry } from "../../lib/metrics.js";
import type { SupervisedWorker } from "../../lib/worker.js";
import type { TestSmsProvider } from "../helpers/sms-provider.js";
import { startDeliveryWorker } from "../notifier/support.js";
import { newPhone, SMS_API_ENV, smsDeliverers, startSmsProvider, textTo } from "../sms/support.js";


/** Waits on a condition: generous, the suite shares two cores. */
const poll = <T>(check: () => T | Promise<T>) => expect.poll(check, { timeout: 30_000 });
/**
 * Every screen of the app in Chromium at a phone's width, as a person uses
 * it, signed in through the real provider: search near a point, file a report
 * with a photo and see it listed, renew and close, confirm a match, answer a
 * message, see sightings on a map, draw an alert circle, set preferences.
 * Each screen is checked with axe-core and pictured in docs/app-*.png.
 */

const OWNER = "owner-a";
const FINDER = "finder-b";
// Berlin, Alexanderplatz: where the owner is, and where the reports are.
const HERE = { lat: 52.5219, lon: 13.4132 };

let stack: AppStack;
/** The same database and bus with the debug bypass: seeds what other people did. */
let seed: TestApi;
let seedUrl: string;
let browser: Browser;
let page: Page;
/** The SMS provider the phone's code goes through, and the worker that texts it. */
let sms: TestSmsProvider;
let smsWorker: SupervisedWorker;
const cspViolations: string[] = [];
const requested: string[] = [];

const processPhoto = (id: string) =>
  createPhotoProcessor({ pool: stack.api.pool, storage: new LocalObjectStorage(TEST_PHOTO_DIR), logger: pino({ level: "silent" }) })(id, { attempt: 1, maxAttempts: 1 });

async function seeded(res: { statusCode: number; body: string; json(): { id: string } }): Promise<string> {
  expect(res.statusCode, res.body).toBeLessThan(300);
  return res.json().id;
}

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();

async function jpeg(seedValue: number): Promise<Buffer> {
  return sharp({ create: { width: 320, height: 240, channels: 3, background: { r: 150 + seedValue, g: 90, b: 40 } } }).jpeg().toBuffer();
}

/** axe-core in the page: no serious or critical violation. */
async function expectAccessible(screen: string): Promise<void> {
  // evaluate() is not subject to the page's CSP, which refuses injected script tags.
  await page.evaluate(axe.source);
  const result = await page.evaluate<axe.AxeResults>('axe.run(document, { resultTypes: ["violations"] })');
  const serious = result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  expect(serious, screen).toEqual([]);
  // A phone's width: nothing wider than the screen.
  expect(await page.evaluate<number>("document.documentElement.scrollWidth"), screen).toBeLessThanOrEqual(PHONE.width);
}

/** Opens a screen by its address's fragment, as the tab bar does: the page (and the tokens in its memory) stays. */
async function open(hash: string, heading: string): Promise<void> {
  const target = `${stack.baseUrl}/app/#/${hash}`;
  // The same address again would keep the screen as it was: leave it first, so it starts afresh.
  if (page.url() === target) await page.goto(`${stack.baseUrl}/app/#/search`);
  await page.goto(target);
  await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
}

/** Taps the map at an offset from its centre. */
async function tapMap(dx = 0, dy = 0): Promise<void> {
  const map = page.getByTestId("map").first();
  const box = (await map.boundingBox())!;
  await map.click({ position: { x: box.width / 2 + dx, y: box.height / 2 + dy } });
}

beforeAll(async () => {
  [stack, browser] = await Promise.all([startAppStack({ env: { EMAIL_VERIFICATION: "required", ...SMS_API_ENV } }), launchChromium()]);
  sms = await startSmsProvider(() => stack.baseUrl);
  smsWorker = await startDeliveryWorker(stack.api.pool, smsDeliverers(stack.api.pool, sms, createMetricsRegistry("notifier")));
  seed = await buildTestApi(devEnv(stack.db.url, stack.bus.url));
  await seed.app.listen({ port: 0, host: "127.0.0.1" });
  seedUrl = `http://127.0.0.1:${(seed.app.server.address() as AddressInfo).port}`;
  await browser.context.grantPermissions(["geolocation"]);
  await browser.context.setGeolocation({ latitude: HERE.lat, longitude: HERE.lon });
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.setViewportSize(PHONE);
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  // What the app's own pages asked for (the provider's login page is the provider's business).
  page.on("request", (request) => {
    if (request.frame().url().startsWith(`${stack.baseUrl}/`)) requested.push(request.url());
  });
});

afterAll(async () => {
  await smsWorker?.stop();
  await sms?.close();
  await browser?.close();
  await seed?.close();
  await stack?.stop();
});

describe("without signing in", () => {
  it("searches lost and found reports near the phone's location, showing their coarse areas only", async () => {
    const precise = { lat: 52.52311, lon: 13.41187 };
    const reportId = await seeded(
      await call(seed, {
        method: "POST",
        url: "/v1/safety/lost-reports",
        headers: as("neighbour-1"),
        payload: { animal: { name: "Bella", species: "cat", colors: ["grey"] }, lastSeenAt: minutesAgo(90), location: precise },
      }),
    );
    const coarse = (await call(seed, { url: `/v1/safety/lost-reports/${reportId}` })).json().location;
    // A shelter 1.5 km away, which holds strays 6 days.
    const shelter = await call(seed, {
      method: "POST",
      url: "/v1/admin/partners",
      headers: admin(),
      payload: {
        name: "Tierheim Mitte",
        kind: "shelter",
        location: { lat: HERE.lat + 0.0135, lon: HERE.lon },
        publicContact: { phone: "+49 30 1234567", website: "https://tierheim-mitte.example" },
        loginEmail: "asm3@tierheim-mitte.example",
        dateFormat: "DD.MM.YYYY",
        strayHoldDays: 6,
      },
    });
    expect(shelter.statusCode, shelter.body).toBe(201);

    await open("search", "Lost and found animals near you");
    await page.getByRole("button", { name: "Use my location" }).click();
    const card = page.locator(`li[data-id="${reportId}"]`);
    await card.waitFor();
    expect(await card.textContent()).toContain("Cat");
    expect(await card.locator(".coords").textContent()).toBe(`${coarse.lat.toFixed(3)}, ${coarse.lon.toFixed(3)}`);
    // The coarse cell is drawn, and the precise point is nowhere in the page.
    await page.locator("path.area-lost").first().waitFor();
    expect(await page.content()).not.toContain(String(precise.lat));
    expect(requested.filter((url) => url.includes("/private"))).toEqual([]);
    // The shelters near the point, with their public contact and hold.
    const shelters = page.getByTestId("shelters");
    await shelters.getByText("Tierheim Mitte").waitFor();
    expect(await shelters.textContent()).toContain("1.5 km away");
    expect(await shelters.textContent()).toContain("+49 30 1234567");
    expect(await shelters.textContent()).toContain("6 days");
    // The map's tiles came from the tile server.
    expect(stack.tiles.requested.length).toBeGreaterThan(0);
    await expectAccessible("search");
    await appScreenshot(page, "search");
  });
});

describe("signed in through the provider", () => {
  let lostId: string;

  beforeAll(async () => {
    await signInThroughProvider(page, OWNER, async () => {
      await page.goto(`${stack.baseUrl}/app/#/reports`);
      await page.getByRole("button", { name: "Sign in" }).click();
    });
    await page.getByRole("heading", { name: "My reports" }).waitFor();
  });

  it("shows the API's problem next to the field it concerns, and files nothing", async () => {
    await open("file", "Report an animal");
    await page.getByLabel("Name").fill("Rex");
    await page.getByLabel("Microchip number").fill("x");
    await tapMap();
    await page.getByRole("button", { name: "File the report" }).click();
    const microchip = page.getByLabel("Microchip number");
    await poll(() => microchip.getAttribute("aria-invalid")).toBe("true");
    const describedBy = (await microchip.getAttribute("aria-describedby"))!;
    expect(await page.locator(`[id="${describedBy}"]`).textContent()).toContain("5-40 letters");
    expect(await page.getByRole("alert").first().textContent()).toContain("Some fields need attention");
    const { rows } = await stack.db.pool.query("select count(*)::int as n from safety_lost_report where reporter_id = $1", [OWNER]);
    expect(rows[0].n).toBe(0);
  });

  it("files a lost report with a photo and a point tapped on the map, and lists it", async () => {
    await open("file", "Report an animal");
    await page.getByLabel("Name").fill("Rex");
    await page.getByLabel("Breed").fill("Beagle");
    await page.getByLabel("Colours (separated by commas)").fill("brown, white");
    await page.getByRole("button", { name: "Use my location" }).click();
    await page.getByText(/Point chosen/).waitFor();
    // A tap moves the point from the phone's location to where the dog was last seen.
    await tapMap(20, -15);
    await page.getByLabel("Photos (up to 5)").setInputFiles({ name: "rex.jpg", mimeType: "image/jpeg", buffer: await jpeg(1) });
    await expectAccessible("file");
    await appScreenshot(page, "file");
    await page.getByRole("button", { name: "File the report" }).click();
    await page.waitForURL(/#\/reports\/lost\//);
    lostId = page.url().split("/").pop()!;

    const { rows } = await stack.db.pool.query(
      "select reporter_id, animal_name, st_y(location::geometry) as lat, st_x(location::geometry) as lon from safety_lost_report where id = $1",
      [lostId],
    );
    expect(rows[0]).toMatchObject({ reporter_id: OWNER, animal_name: "Rex" });
    // The tapped point, not the phone's location.
    expect(Math.abs(rows[0].lat - HERE.lat) + Math.abs(rows[0].lon - HERE.lon)).toBeGreaterThan(0.0005);
    const photos = await stack.db.pool.query("select id from photo where lost_report_id = $1", [lostId]);
    expect(photos.rows).toHaveLength(1);
    await processPhoto(photos.rows[0].id);

    await open("reports", "My reports");
    const card = page.locator(`li[data-id="${lostId}"]`);
    await card.waitFor();
    expect(await card.textContent()).toContain("Rex");
    expect(await card.getByRole("link", { name: "Print flyer" }).getAttribute("href")).toContain(`/lost/${lostId}/flyer.pdf`);
    expect(await card.getByRole("link", { name: "Share page" }).getAttribute("href")).toContain(`/lost/${lostId}`);

    await card.getByRole("link", { name: "Matches and sightings" }).click();
    await page.locator(`img[src="/v1/photos/${photos.rows[0].id}/thumb"]`).waitFor();
  });

  it("renews one report and closes another from the list", async () => {
    const other = await seeded(
      await call(seed, {
        method: "POST",
        url: "/v1/safety/found-reports",
        headers: as(OWNER),
        payload: { animal: { species: "bird", colors: ["green"] }, foundAt: minutesAgo(30), location: HERE },
      }),
    );
    await stack.db.pool.query("update safety_lost_report set expires_at = now() + interval '2 days' where id = $1", [lostId]);
    await open("reports", "My reports");
    const card = page.locator(`li[data-id="${lostId}"]`);
    await card.getByRole("button", { name: "Keep active" }).click();
    await poll(async () => (await stack.db.pool.query("select expires_at > now() + interval '20 days' as renewed from safety_lost_report where id = $1", [lostId])).rows[0].renewed)
      .toBe(true);

    page.once("dialog", (dialog) => void dialog.accept());
    await page.locator(`li[data-id="${other}"]`).getByRole("button", { name: "Close" }).click();
    await page.locator(`li[data-id="${other}"]`).getByText("Closed").waitFor();
    const { rows } = await stack.db.pool.query("select status from safety_found_report where id = $1", [other]);
    expect(rows[0].status).toBe("closed");
    await expectAccessible("reports");
    await appScreenshot(page, "reports");
  });

  it("shows matches best first with reasons and photos, confirms one, and shows sightings on a map", async () => {
    const found = await seeded(
      await call(seed, {
        method: "POST",
        url: "/v1/safety/found-reports",
        headers: as(FINDER),
        payload: { animal: { species: "dog", breed: "Beagle", colors: ["brown", "white"] }, foundAt: new Date().toISOString(), location: HERE },
      }),
    );
    const upload = await call(seed, uploadRequest(`/v1/safety/found-reports/${found}/photos`, FINDER, [photoPart(await jpeg(2))]));
    expect(upload.statusCode, upload.body).toBe(202);
    await processPhoto(upload.json().id);
    await createMatcher({ pool: stack.api.pool, logger: pino({ level: "silent" }) })({ kind: "found", id: found });
    const match = await stack.db.pool.query("select id from safety_match where lost_report_id = $1 and target_id = $2", [lostId, found]);
    expect(match.rows).toHaveLength(1);
    await seeded(
      await call(seed, {
        method: "POST",
        url: "/v1/safety/sightings",
        headers: as(FINDER),
        payload: { lostReportId: lostId, location: { lat: HERE.lat + 0.01, lon: HERE.lon }, seenAt: minutesAgo(10), note: "Ran into the park" },
      }),
    );

    await open(`reports/lost/${lostId}`, "Lost: Dog · Rex");
    const card = page.locator(`li[data-id="${match.rows[0].id}"]`);
    // The finder's photo arrives with the found report's public view, after the match itself.
    await card.locator(`img[src="/v1/photos/${upload.json().id}/thumb"]`).waitFor();
    expect(await card.textContent()).toMatch(/Found report · Dog · \d+% match/);
    expect(await card.locator(".chip").allTextContents()).toContain("Breed");
    await page.locator("path.area-sighting").first().waitFor();
    await expectAccessible("matches");
    await appScreenshot(page, "matches");

    await card.getByRole("button", { name: "This is my animal" }).click();
    await card.getByText("Confirmed").waitFor();
    const { rows } = await stack.db.pool.query("select status from safety_match where id = $1", [match.rows[0].id]);
    expect(rows[0].status).toBe("confirmed");

    // Answering the finder goes through the service's relay.
    await card.getByRole("button", { name: "Message the finder" }).click();
    await card.getByLabel("Your message").fill("That is Rex! Thank you so much.");
    await card.getByLabel("How they can reach you").fill("owner@example.com");
    await card.getByRole("button", { name: "Send" }).click();
    await card.getByText("Your message was sent through the service.").waitFor();
    const relayed = await stack.db.pool.query("select message from safety_relay_message where found_report_id = $1", [found]);
    expect(relayed.rows.map((r) => r.message)).toContain("That is Rex! Thank you so much.");
  });

  it("shows a finder's message, offers to answer it by the contact they gave, and marks it read", async () => {
    const sent = await call(seed, {
      method: "POST",
      url: `/v1/safety/lost-reports/${lostId}/relay-message`,
      payload: { message: "I think I saw Rex near the fountain.", fromContact: "finder@example.com" },
    });
    expect(sent.statusCode, sent.body).toBe(202);
    // The notifier's own handler turns the event into the owner's notification.
    const outbox = await stack.db.pool.query("select id, occurred_at, payload from outbox_event where type = $1 and payload->>'relayMessageId' = $2", [
      EventType.ContactMessageReceived,
      sent.json().id,
    ]);
    const event = { id: outbox.rows[0].id, type: EventType.ContactMessageReceived, occurredAt: outbox.rows[0].occurred_at.toISOString(), data: outbox.rows[0].payload };
    const [draft] = notificationHandlers[EventType.ContactMessageReceived]!(event as EventEnvelope<typeof EventType.ContactMessageReceived>);
    const inserted = await stack.db.pool.query(
      `insert into notification (recipient_actor_id, channel, status, attempts, source_event_id, source_occurred_at, event_type, kind, subject, body, data)
       values ($1, 'in_app', 'sent', 1, $2, $3, $4, $5, $6, $7, $8) returning id`,
      [draft!.recipientActorId, event.id, event.occurredAt, event.type, draft!.kind, draft!.subject, draft!.body, draft!.data],
    );
    const id = inserted.rows[0].id;

    await open("messages", "Messages");
    const card = page.locator(`li[data-id="${id}"]`);
    await card.waitFor();
    expect(await card.locator("blockquote").textContent()).toBe("I think I saw Rex near the fountain.");
    expect(await card.locator(".contact").textContent()).toBe("finder@example.com");
    const reply = card.getByRole("link", { name: "Reply by email" });
    const href = (await reply.getAttribute("href"))!;
    expect(href.startsWith("mailto:finder@example.com?subject=")).toBe(true);
    expect(decodeURIComponent(href)).toContain("> I think I saw Rex near the fountain.");
    await expectAccessible("messages");
    await appScreenshot(page, "messages");

    await card.getByRole("button", { name: "Mark as read" }).click();
    await card.getByRole("button", { name: "Mark as read" }).waitFor({ state: "detached" });
    const { rows } = await stack.db.pool.query("select read_at from notification where id = $1", [id]);
    expect(rows[0].read_at).not.toBeNull();
  });

  it("draws an alert circle on the map, refusing a radius the API refuses next to its field", async () => {
    await open("alerts", "Alerts near me");
    await tapMap(-10, 10);
    await page.getByLabel("Radius (km)").fill("80");
    await page.getByRole("button", { name: "Add this circle" }).click();
    const radius = page.getByLabel("Radius (km)");
    await poll(() => radius.getAttribute("aria-invalid")).toBe("true");

    await radius.fill("3");
    await page.getByRole("checkbox", { name: "Dog" }).check();
    await page.getByRole("button", { name: "Add this circle" }).click();
    const item = page.locator("li.subscription");
    await item.first().waitFor();
    expect(await item.first().textContent()).toContain("3 km around");
    await page.locator("path.area-alert").first().waitFor();
    const { rows } = await stack.db.pool.query("select radius_m, species from alert_subscription where actor_id = $1", [OWNER]);
    expect(rows).toEqual([{ radius_m: 3000, species: ["dog"] }]);
    await expectAccessible("alerts");
    await appScreenshot(page, "alerts");
  });

  it("sets the email and shows it waiting for confirmation; confirms a phone with the texted code; offers push; speaks German", async () => {
    await open("settings", "Settings");
    await page.getByLabel("Email address").fill("not an address");
    await page.getByRole("button", { name: "Save address" }).click();
    await poll(() => page.getByLabel("Email address").getAttribute("aria-invalid")).toBe("true");

    await page.getByLabel("Email address").fill("owner@example.com");
    await page.getByRole("button", { name: "Save address" }).click();
    await page.getByTestId("email-status").getByText("Waiting for confirmation", { exact: false }).waitFor();

    // The phone: a number the API cannot read is refused next to its field; a real one gets a code by text.
    const phoneCard = page.getByTestId("phone");
    await phoneCard.locator(".phone-none").waitFor();
    await page.getByLabel("Phone number").fill("12");
    await page.getByRole("button", { name: "Text me a code" }).click();
    await poll(() => page.getByLabel("Phone number").getAttribute("aria-invalid")).toBe("true");
    const phone = newPhone();
    await page.getByLabel("Phone number").fill(phone);
    await page.getByRole("button", { name: "Text me a code" }).click();
    await phoneCard.locator(".phone-pending").waitFor();
    const text = await textTo(sms, phone, /code: \d{6}/, 30_000);
    const code = /code: (\d{6})/.exec(text.body)![1]!;
    const wrong = code === "000000" ? "111111" : "000000";
    await page.getByLabel("The 6-digit code").fill(wrong);
    await page.getByRole("button", { name: "Confirm" }).click();
    await poll(() => page.getByLabel("The 6-digit code").getAttribute("aria-invalid")).toBe("true");
    await page.getByLabel("The 6-digit code").fill(code);
    await page.getByRole("button", { name: "Confirm" }).click();
    await phoneCard.locator(".phone-verified").waitFor();
    // Only the last two digits are shown again: the number itself is in no response.
    expect(await phoneCard.textContent()).toContain(`ending in ${phone.slice(-2)}`);
    expect(await phoneCard.textContent()).not.toContain(phone.slice(3));
    const { rows } = await stack.db.pool.query("select phone from notification_preference where actor_id = $1", [OWNER]);
    expect(rows).toEqual([{ phone }]);

    // Headless Chromium may refuse notifications outright: then the app says so instead of offering them.
    const permission = await page.evaluate<string>("Notification.permission");
    await (permission === "denied"
      ? page.getByText("Notifications are blocked for this site").waitFor()
      : page.getByRole("button", { name: "Turn on notifications" }).waitFor());
    await expectAccessible("settings");
    await appScreenshot(page, "settings");

    await page.getByRole("combobox", { name: "Language" }).selectOption("de");
    await page.getByRole("heading", { name: "Einstellungen", level: 1 }).waitFor();
    expect(await page.evaluate<string>("document.documentElement.lang")).toBe("de");
    await page.getByRole("combobox", { name: "Sprache" }).selectOption("en");
  });

  it("is installable: Chromium finds the manifest, its icons and the service worker", async () => {
    await open("search", "Lost and found animals near you");
    await page.evaluate("navigator.serviceWorker.ready");
    const cdp = await browser.context.newCDPSession(page);
    const { installabilityErrors } = (await cdp.send("Page.getInstallabilityErrors")) as { installabilityErrors: unknown[] };
    expect(installabilityErrors).toEqual([]);
    await cdp.detach();
  });

  it("broke no content security rule and loaded nothing from an origin the policy does not name", async () => {
    const res = await fetch(`${stack.baseUrl}/app/`);
    const policy = res.headers.get("content-security-policy")!;
    expect(policy).toContain(`img-src 'self' data: blob: ${stack.tiles.origin};`);
    expect(policy).toContain(`connect-src 'self' ${stack.provider.issuer};`);
    expect(cspViolations).toEqual([]);
    const allowed = [stack.baseUrl, stack.tiles.origin, stack.provider.issuer];
    expect(requested.filter((url) => !allowed.some((origin) => url.startsWith(`${origin}/`)) && !url.startsWith("data:") && !url.startsWith("blob:"))).toEqual([]);
  });
});
