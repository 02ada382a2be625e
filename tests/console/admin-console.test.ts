import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { pino } from "pino";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuditAction, AuditObject, writeAuditEvent } from "../../lib/audit.js";
import { EventType } from "../../lib/events.js";
import { LocalObjectStorage } from "../../lib/storage/index.js";
import { createPhotoProcessor } from "../../jobs/photos/process.js";
import { admin, as, TEST_PHOTO_DIR, type TestApi } from "../helpers/app.js";
import type { TestDatabase } from "../helpers/db.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { TestIdentityProvider } from "../helpers/jwks.js";
import { photoPart, uploadRequest } from "../photos/support.js";
import { call, lostReportBody } from "../safety/helpers.js";
import { ensureConsoleBundle, launchChromium, row, screenshot, signInAsDebugActor, type Browser } from "./browser.js";

const ADMIN = "admin-1";

let h: Harness;
let db: TestDatabase;
let api: TestApi;
let idp: TestIdentityProvider;
let baseUrl: string;
let browser: Browser;
let page: Page;
/** Every URL the console's page requested, to prove it loads nothing from another origin. */
const requested: string[] = [];

beforeAll(async () => {
  await ensureConsoleBundle();
  idp = await TestIdentityProvider.start();
  // Both sign-ins work on this API: the debug actor (development) and bearer tokens from the test identity provider.
  h = await startHarness(idp.env);
  ({ db, api } = h);
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  browser = await launchChromium();
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  page.on("request", (request) => requested.push(request.url()));
  await signInAsDebugActor(page, baseUrl, ADMIN, "platform_admin");
  await page.getByRole("heading", { name: "Moderation queue" }).waitFor();
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
  await idp?.stop();
});

/** Opens a screen from the console's navigation. */
async function open(screen: string, heading: string): Promise<void> {
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: screen }).click();
  await page.getByRole("heading", { name: heading }).waitFor();
}

async function stuckOutboxRow(requeueCount: number, payload: Record<string, unknown>): Promise<string> {
  const { rows } = await db.pool.query(
    `insert into outbox_event (type, payload, occurred_at, requeue_count)
     values ($1, $2, now() - interval '1 hour', $3) returning id`,
    [EventType.ContactMessageReceived, payload, requeueCount],
  );
  return rows[0].id;
}

async function notificationRow(status: string, channel: string, lastError: string, recipient: string): Promise<string> {
  const { rows } = await db.pool.query(
    `insert into notification (recipient_actor_id, channel, status, attempts, last_error, source_event_id, event_type, kind, subject, body)
     values ($1, $2, $3, 3, $4, gen_random_uuid(), $5, 'relay_message', 'A message about your lost report', 'body') returning id`,
    [recipient, channel, status, lastError, EventType.ContactMessageReceived],
  );
  return rows[0].id;
}

async function created(res: { statusCode: number; body: string; json(): { id: string } }): Promise<string> {
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

describe("the console is served by the API at /admin and loads nothing from another origin", () => {
  it("serves the page publicly with a same-origin content security policy", async () => {
    const res = await fetch(`${baseUrl}/admin`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/html/);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'self'");
    const html = await res.text();
    expect(html).toMatch(/src="\/admin\/assets\/[^"]+\.js"/);
    expect(html).not.toMatch(/https?:\/\//);
  });

  it("answers a missing asset, or any path out of the bundle, with a 404 problem and never a file", async () => {
    for (const url of [
      "/admin/assets/missing.js",
      "/admin/assets/..%2f..%2fpackage.json",
      "/admin/assets/%2e%2e/%2e%2e/package.json",
      "/admin/assets/.env",
      "/admin/assets/",
    ]) {
      const res = await api.app.inject({ url });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers["content-type"], url).toMatch(/application\/problem\+json/);
    }
  });

  it("serves the page for any other path under /admin, whose screens live in the URL fragment", async () => {
    const res = await api.app.inject({ url: "/admin/outbox" });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<div id="app">');
  });

  it("made every browser request to the API's own origin", () => {
    expect(requested.length).toBeGreaterThan(2);
    expect(requested.filter((url) => !url.startsWith(`${baseUrl}/`) && !url.startsWith("data:"))).toEqual([]);
  });

  it("signs in with a bearer token and shows the token's subject", async () => {
    const other = await browser.context.newPage();
    try {
      await other.goto(`${baseUrl}/admin`);
      const form = other.getByRole("form", { name: "Sign in" });
      await form.getByRole("radio", { name: "Bearer token" }).check();
      await form.getByLabel("Token", { exact: true }).fill(await idp.sign({ sub: "admin-jwt", roles: ["platform_admin"] }));
      await form.getByRole("button", { name: "Sign in" }).click();
      await other.getByRole("heading", { name: "Moderation queue" }).waitFor();
      expect(await other.locator(".who").textContent()).toContain("admin-jwt");
    } finally {
      await other.close();
    }
  });

  it("refuses a sign-in without the platform_admin role and shows the API's problem", async () => {
    const other = await browser.context.newPage();
    try {
      await signInAsDebugActor(other, baseUrl, "someone", "");
      const problem = other.getByRole("alert");
      await problem.waitFor();
      expect(await problem.textContent()).toContain("403 forbidden");
      expect(await problem.textContent()).toContain("the platform_admin role is required");
      await screenshot(other, "sign-in");
    } finally {
      await other.close();
    }
  });
});

describe("outbox: requeueing a stuck event re-publishes it and raises its count toward the cap of 5", () => {
  let stuck: string;
  let capped: string;

  beforeAll(async () => {
    stuck = await stuckOutboxRow(2, { messageId: "m-1", fromContact: "finder@example.com", message: "I saw your dog" });
    capped = await stuckOutboxRow(5, { messageId: "m-2", fromContact: "+33 6 00 00 00 00" });
    await open("Outbox", "Stuck outbox events");
  });

  it("lists stuck events with their running count against the cap and the payload masked", async () => {
    await row(page, stuck).waitFor();
    expect(await row(page, stuck).getByTestId("requeue-count").textContent()).toContain("2 / 5");
    expect(await row(page, stuck).textContent()).not.toContain("finder@example.com");
    expect(await row(page, capped).getByTestId("requeue-count").textContent()).toContain("5 / 5");
  });

  it("shows the count rise to 3 of 5 after a requeue, and the event is published", async () => {
    await row(page, stuck).getByRole("button", { name: "Requeue" }).click();
    await row(page, stuck).getByText("published (requeue 3 of 5)").waitFor();
    expect(await row(page, stuck).getByTestId("requeue-count").textContent()).toContain("3 / 5");
    const { rows } = await db.pool.query(`select requeue_count, published_at from outbox_event where id = $1`, [stuck]);
    expect(rows[0].requeue_count).toBe(3);
    expect(rows[0].published_at).not.toBeNull();
    const audits = await db.pool.query(`select actor_id, metadata from audit_event where action = $1 and object_id = $2`, [
      AuditAction.OutboxRequeued,
      stuck,
    ]);
    expect(audits.rows).toEqual([{ actor_id: ADMIN, metadata: expect.objectContaining({ requeueCount: 3, published: true }) }]);
    await screenshot(page, "outbox");
  });

  it("offers no requeue for an event at the cap", async () => {
    expect(await row(page, capped).getByRole("button", { name: "Requeue" }).isDisabled()).toBe(true);
    expect(await row(page, capped).textContent()).toContain("cap of 5 reached");
  });
});

describe("notifications: replaying a dead-lettered notification shows the API's refusal reason", () => {
  let permanent: string;
  let transient: string;

  beforeAll(async () => {
    permanent = await notificationRow("dead_letter", "email", "no deliverer configured for channel email", "owner-7");
    transient = await notificationRow("dead_letter", "in_app", "connect ECONNREFUSED 10.0.0.1:25", "owner-8");
    await open("Notifications", "Notification failures");
  });

  it("shows the permanent refusal with its reason and detail, and leaves the notification dead-lettered", async () => {
    await row(page, permanent).getByRole("button", { name: "Replay" }).click();
    const problem = row(page, permanent).getByRole("alert");
    await problem.waitFor();
    const text = await problem.textContent();
    expect(text).toContain("409 replay-not-eligible");
    expect(text).toContain("reason: permanent");
    expect(text).toContain("a configured delivery provider is needed, not a resend");
    const { rows } = await db.pool.query(`select status from notification where id = $1`, [permanent]);
    expect(rows[0].status).toBe("dead_letter");
  });

  it("replays a transient failure and shows its new status", async () => {
    await row(page, transient).getByRole("button", { name: "Replay" }).click();
    await row(page, transient).getByText("replayed: dead_letter → pending").waitFor();
    const { rows } = await db.pool.query(`select status from notification where id = $1`, [transient]);
    expect(rows[0].status).toBe("pending");
    await screenshot(page, "notifications");
  });

  it("filters the listing by status and channel", async () => {
    const filters = page.locator("form.filters");
    await filters.getByLabel("Status").selectOption("dead_letter");
    await filters.getByLabel("Channel").selectOption("email");
    await page.getByText("1 notification shown").waitFor();
    expect(await row(page, permanent).count()).toBe(1);
    expect(await row(page, transient).count()).toBe(0);
  });
});

describe("moderation: quarantining a reported sighting removes it from the public sighting listing", () => {
  let lostReport: string;
  let sighting: string;
  let report: string;
  let lostItem: string;

  const publicSightings = async () => {
    const res = await fetch(`${baseUrl}/v1/safety/lost-reports/${lostReport}/sightings`);
    expect(res.status).toBe(200);
    return ((await res.json()) as { items: { id: string }[] }).items.map((s) => s.id);
  };

  beforeAll(async () => {
    lostReport = await created(
      await call(api, { method: "POST", url: "/v1/safety/lost-reports", headers: as("owner-1"), payload: lostReportBody() }),
    );
    sighting = await created(
      await call(api, {
        method: "POST",
        url: "/v1/safety/sightings",
        headers: as("finder-1"),
        payload: { lostReportId: lostReport, location: { lat: 48.857, lon: 2.353 }, seenAt: "2025-11-21T09:00:00Z", note: "Buy my pet food!" },
      }),
    );
    report = await created(
      await call(api, {
        method: "POST",
        url: "/v1/moderation/reports",
        headers: as("reporter-1"),
        payload: { targetType: "sighting", targetId: sighting, reason: "spam", details: "advertising in a sighting note" },
      }),
    );
    // A second item, so the queue shows more than the one acted on.
    lostItem = await created(
      await call(api, {
        method: "POST",
        url: "/v1/moderation/reports",
        headers: as("reporter-2"),
        payload: { targetType: "lost_report", targetId: lostReport, reason: "scam", details: "asks for a reward up front" },
      }),
    );
    await open("Moderation", "Moderation queue");
  });

  it("lists the sighting publicly before any action", async () => {
    expect(await publicSightings()).toContain(sighting);
  });

  it("claims the item, quarantines the sighting, and the public listing no longer has it", async () => {
    const item = row(page, report);
    await item.getByRole("button", { name: "Claim" }).click();
    await item.getByText(`by ${ADMIN}`).waitFor();
    await item.getByLabel("Moderation action").selectOption("quarantine");
    await item.getByLabel("Note").fill("advertising, not a sighting");
    await screenshot(page, "moderation");
    await item.getByRole("button", { name: "Apply" }).click();
    await item.getByText("resolved: quarantine").waitFor();
    expect(await item.textContent()).toContain("quarantined");
    expect(await publicSightings()).not.toContain(sighting);
  });

  it("shows a reported lost report's matches with their reasons", async () => {
    const found = await created(
      await call(api, {
        method: "POST",
        url: "/v1/safety/found-reports",
        headers: as("finder-2"),
        payload: { animal: { species: "dog" }, foundAt: "2025-11-21T09:00:00Z", location: { lat: 48.86, lon: 2.35 } },
      }),
    );
    await db.pool.query(
      `insert into safety_match (lost_report_id, kind, target_id, score, reasons, distance_m) values ($1, 'found_report', $2, 0.82, '{breed,colors}', 1300)`,
      [lostReport, found],
    );
    const item = row(page, lostItem);
    await item.getByRole("button", { name: "Matches" }).click();
    const matches = item.getByRole("table", { name: "Matches" });
    await matches.waitFor();
    const text = await matches.textContent();
    expect(text).toContain("82 %");
    expect(text).toContain("breed, colors");
    expect(text).toContain("1.3 km");
    expect(text).toContain("suggested");
  });

  it("shows a reported lost report's neighbourhood alerts: subscriptions in range and its fan-out", async () => {
    for (const [actor, radiusKm] of [["neighbour-1", 2], ["neighbour-2", 5]] as const) {
      const res = await call(api, {
        method: "POST",
        url: "/v1/me/alert-subscriptions",
        headers: as(actor),
        payload: { location: { lat: 48.861, lon: 2.349 }, radiusKm },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    const item = row(page, lostItem);
    await item.getByRole("button", { name: "Alerts" }).click();
    await item.getByText("2 subscriptions in range").waitFor();
    expect(await item.getByTestId("report-alerts").textContent()).toContain("notified 0");
    // Any lost report, reported or not, on the Alerts screen by its id.
    await open("Alerts", "Alerts");
    await page.getByLabel("Lost report id").fill(lostReport);
    await page.getByRole("button", { name: "Look up" }).click();
    await page.getByTestId("report-alerts").getByText("2 subscriptions in range (2 subscribers)").waitFor();
    await open("Moderation", "Moderation queue");
  });
});

describe("moderation: a reported photo shows its thumbnail, blurred once quarantined until revealed", () => {
  let photo: string;
  let report: string;

  beforeAll(async () => {
    const owner = "owner-photo";
    const lostReport = await created(
      await call(api, { method: "POST", url: "/v1/safety/lost-reports", headers: as(owner), payload: lostReportBody() }),
    );
    const jpeg = await sharp({ create: { width: 400, height: 300, channels: 3, background: "#c0392b" } }).jpeg().toBuffer();
    const upload = await call(api, uploadRequest(`/v1/safety/lost-reports/${lostReport}/photos`, owner, [photoPart(jpeg)]));
    expect(upload.statusCode, upload.body).toBe(202);
    photo = upload.json().id;
    const process = createPhotoProcessor({ pool: api.pool, storage: new LocalObjectStorage(TEST_PHOTO_DIR), logger: pino({ level: "silent" }) });
    await process(photo, { attempt: 1, maxAttempts: 1 });
    report = await created(
      await call(api, {
        method: "POST",
        url: "/v1/moderation/reports",
        headers: as("reporter-3"),
        payload: { targetType: "photo", targetId: photo, reason: "abuse", details: "not an animal" },
      }),
    );
    await open("Moderation", "Moderation queue");
    // The screen is already open from the moderation tests above: load the queue again.
    await page.locator("form.filters").getByRole("button", { name: "Refresh" }).click();
  });

  const thumb = () => row(page, report).getByTestId("photo-thumb");
  // Runs in the page (this project's type check has no DOM library, hence the casts).
  const rendered = () =>
    thumb().evaluate((img) => {
      const style = (globalThis as unknown as { getComputedStyle(el: unknown): { filter: string } }).getComputedStyle(img);
      return { width: (img as unknown as { naturalWidth: number }).naturalWidth, filter: style.filter };
    });

  it("shows the photo itself, loaded with the operator's credential and allowed by the page's policy", async () => {
    await thumb().waitFor();
    expect(await thumb().getAttribute("data-blurred")).toBe("false");
    expect(await thumb().getAttribute("src")).toMatch(/^data:image\/webp;base64,/);
    expect(await rendered()).toEqual({ width: 320, filter: "none" });
  });

  it("quarantines it: the public gets 404, the console blurs it, and Reveal shows it", async () => {
    const item = row(page, report);
    await item.getByRole("button", { name: "Claim" }).click();
    await item.getByText(`by ${ADMIN}`).waitFor();
    await item.getByLabel("Moderation action").selectOption("quarantine");
    await item.getByRole("button", { name: "Apply" }).click();
    await item.getByText("resolved: quarantine").waitFor();
    expect((await fetch(`${baseUrl}/v1/photos/${photo}/thumb`)).status).toBe(404);

    await item.locator('[data-testid="photo-thumb"][data-blurred="true"]').waitFor();
    expect((await rendered()).filter).toMatch(/^blur\(/);
    await screenshot(page, "moderation-photo");
    await item.getByRole("button", { name: "Reveal" }).click();
    await item.locator('[data-testid="photo-thumb"][data-blurred="false"]').waitFor();
    expect((await rendered()).filter).toBe("none");
    await item.getByRole("button", { name: "Blur" }).click();
    await item.locator('[data-testid="photo-thumb"][data-blurred="true"]').waitFor();
  });
});

describe("audit: the search returns only the events matching its filters", () => {
  const auditor = "admin-audit";

  beforeAll(async () => {
    await writeAuditEvent(db.pool, {
      actorId: auditor,
      action: AuditAction.OutboxRequeued,
      objectType: AuditObject.OutboxEvent,
      objectId: crypto.randomUUID(),
      metadata: { requeueCount: 1, published: false },
    });
    await writeAuditEvent(db.pool, {
      actorId: auditor,
      action: AuditAction.AccountRestored,
      objectType: AuditObject.Account,
      objectId: "user-audit",
      metadata: { reason: "appeal accepted" },
    });
    await open("Audit log", "Audit log");
  });

  it("filters by actor and action", async () => {
    const filters = page.locator("form.filters");
    await filters.getByLabel("Actor id").fill(auditor);
    await filters.getByLabel("Action").fill(AuditAction.OutboxRequeued);
    await filters.getByRole("button", { name: "Search" }).click();
    await page.getByText("1 event shown").waitFor();
    expect(await page.locator("tbody").textContent()).toContain(AuditAction.OutboxRequeued);
    expect(await page.locator("tbody").textContent()).not.toContain(AuditAction.AccountRestored);
  });

  it("shows every event without filters, newest first", async () => {
    await page.locator("form.filters").getByRole("button", { name: "Clear" }).click();
    await page.locator("tbody").getByText(AuditAction.AccountRestored).waitFor();
    const actions = await page.locator("tbody tr td:nth-child(3)").allTextContents();
    expect(actions[0]).toBe(AuditAction.AccountRestored);
    expect(actions[1]).toBe(AuditAction.OutboxRequeued);
    await screenshot(page, "audit");
  });

  it("shows a validation problem for a window that ends before it starts", async () => {
    const filters = page.locator("form.filters");
    await filters.getByLabel("From", { exact: true }).fill("2025-06-02T10:00");
    await filters.getByLabel("To", { exact: true }).fill("2025-06-01T10:00");
    await filters.getByRole("button", { name: "Search" }).click();
    const problem = page.getByRole("alert");
    await problem.waitFor();
    expect(await problem.textContent()).toContain("400 validation-failed");
  });
});

describe("accounts: suspend and restore follow the spec's rules", () => {
  const lookUp = async (userId: string) => {
    await page.getByLabel("User id").fill(userId);
    await page.getByRole("button", { name: "Look up" }).click();
    await page.getByRole("definition").filter({ hasText: userId }).waitFor();
  };

  beforeAll(async () => {
    await open("Accounts", "Accounts");
  });

  it("suspends an account, which the API then refuses on its next request", async () => {
    await lookUp("user-42");
    const form = page.getByRole("form", { name: "Suspend account" });
    await form.getByLabel("Reason code").fill("scam");
    await form.getByLabel("Reason detail").fill("asked finders for a reward before the handover");
    await form.getByRole("button", { name: "Suspend" }).click();
    await page.getByText("user-42 is suspended").waitFor();
    expect(await page.locator("dl.state").textContent()).toContain("suspended");
    const res = await call(api, { method: "GET", url: "/v1/me/notifications", headers: as("user-42") });
    expect(res.statusCode).toBe(403);
    expect(res.json().type).toMatch(/\/account-suspended$/);
    await screenshot(page, "accounts");
  });

  it("restores the account with a reason", async () => {
    const form = page.getByRole("form", { name: "Restore account" });
    await form.getByLabel("Reason").fill("appeal accepted");
    await form.getByRole("button", { name: "Restore" }).click();
    await page.getByText("user-42 is restored").waitFor();
    const state = await call(api, { method: "GET", url: "/v1/admin/accounts/user-42", headers: admin() });
    expect(state.json()).toMatchObject({ status: "active", restoreReason: "appeal accepted", restoredBy: ADMIN });
  });

  it("shows the self-suspension refusal when an admin tries to suspend their own account", async () => {
    await lookUp(ADMIN);
    const form = page.getByRole("form", { name: "Suspend account" });
    // The hint renders once the looked-up account is shown; wait for it rather than read at once.
    await form.getByText("This is your own account").waitFor();
    await form.getByLabel("Reason detail").fill("testing");
    await form.getByRole("button", { name: "Suspend" }).click();
    const problem = page.getByRole("alert");
    await problem.waitFor();
    expect(await problem.textContent()).toContain("409 self-suspension");
    expect(await problem.textContent()).toContain("an admin cannot suspend their own account");
    const state = await call(api, { method: "GET", url: `/v1/admin/accounts/${ADMIN}`, headers: admin() });
    expect(state.json().status).toBe("active");
  });
});
