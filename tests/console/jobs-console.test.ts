import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApi } from "../helpers/app.js";
import type { TestDatabase } from "../helpers/db.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { eventually } from "../helpers/stream.js";
import { CRON_ITEM, HELD, NOBODY, startJobWorld, THROWS, type JobWorld } from "../admin/jobs-world.js";
import { ensureConsoleBundle, launchChromium, row, screenshot, signInAsDebugActor, type Browser } from "./browser.js";

const ADMIN = "jobs-admin-1";
const SMTP_ERROR = [
  "Error: SMTP 451 4.7.1 greylisted, try again later",
  "    at deliver (jobs/delivery/task.ts:88:11)",
  "    at async Object.notification__deliver (jobs/families.ts:41:5)",
].join("\n");

let h: Harness;
let db: TestDatabase;
let api: TestApi;
let world: JobWorld;
let baseUrl: string;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  await ensureConsoleBundle();
  h = await startHarness();
  ({ db, api } = h);
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  world = await startJobWorld(db.pool, db.url, { error: SMTP_ERROR });
  browser = await launchChromium();
  page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await signInAsDebugActor(page, baseUrl, ADMIN, "platform_admin");
  await page.getByRole("heading", { name: "Moderation queue" }).waitFor();
  await page.getByRole("navigation", { name: "Screens" }).getByRole("link", { name: "Jobs" }).click();
  await page.getByRole("heading", { name: "Jobs", exact: true }).waitFor();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await world?.stop();
  await h?.close();
});

const summaryRow = (task: string) => page.getByRole("table", { name: "Jobs by task" }).locator(`tr[data-task="${task}"]`);
/** Lists one state of every task. */
async function showState(state: string): Promise<void> {
  const filters = page.getByRole("form", { name: "Job filters" });
  await filters.getByLabel("Task").selectOption({ value: "" });
  await filters.getByLabel("State").selectOption(state);
}
const detail = (id: number) => page.getByRole("region", { name: `Job ${id}` });

async function auditRows(action: string, id: number) {
  const { rows } = await db.pool.query(`select actor_id, metadata from audit_event where action = $1 and object_id = $2`, [action, String(id)]);
  return rows;
}

describe("the Jobs screen", () => {
  it("shows each task's jobs by state and the cron items with their last run", async () => {
    await expect.poll(() => summaryRow(THROWS).locator("td").allInnerTexts()).toEqual([THROWS, "0", "0", "0", "1", "—"]);
    await expect.poll(() => summaryRow(HELD).locator("td").allInnerTexts()).toEqual([HELD, "0", "0", "1", "0", "—"]);
    const queued = await summaryRow(NOBODY).locator("td").allInnerTexts();
    expect(queued.slice(0, 5)).toEqual([NOBODY, "1", "0", "0", "0"]);
    expect(queued[5]).toMatch(/^\d+s$/);
    await expect.poll(() => page.getByRole("table", { name: "Cron items" }).innerText()).toContain(CRON_ITEM);
    expect(await page.getByRole("table", { name: "Cron items" }).innerText()).toContain("never");
    // The API keeps the counts a few seconds: the screen says when they were read.
    expect(await page.getByText(/^Counts as of \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z$/).count()).toBe(1);
  });

  it("lists each state: failed first, then the running, scheduled and queued jobs, payloads masked", async () => {
    await row(page, String(world.ids.failed)).waitFor();
    expect(await row(page, String(world.ids.failed)).innerText()).toContain("SMTP 451 4.7.1");
    await showState("running");
    await row(page, String(world.ids.running)).waitFor();
    // Locked by: the worker pool holding it.
    expect(await row(page, String(world.ids.running)).innerText()).toMatch(/running\t1 \/ 25\t.*\tpool-[0-9a-f]+\t/);
    await showState("scheduled");
    await row(page, String(world.ids.scheduled)).waitFor();
    // A count in the summary opens its listing.
    await summaryRow(NOBODY).getByRole("button", { name: `1 queued ${NOBODY} jobs` }).click();
    await row(page, String(world.ids.queued)).waitFor();
    const text = await row(page, String(world.ids.queued)).innerText();
    expect(text).toContain("report-1");
    expect(text).not.toMatch(/finder@example|52\.52|call me|1234567/);
  });

  it("offers neither action on a running job", async () => {
    await showState("running");
    await row(page, String(world.ids.running)).getByRole("button", { name: "Details" }).click();
    await expect.poll(() => detail(world.ids.running).getByRole("button", { name: "Retry now" }).isDisabled()).toBe(true);
    expect(await detail(world.ids.running).getByRole("button", { name: "Fail for good" }).isDisabled()).toBe(true);
    await detail(world.ids.running).getByRole("button", { name: "Close" }).click();
  });

  it("fails the queued job for good, asking for a reason first", async () => {
    await showState("queued");
    await row(page, String(world.ids.queued)).getByRole("button", { name: "Details" }).click();
    const fail = detail(world.ids.queued).getByRole("form", { name: "Fail job" });
    // No reason: the browser refuses the form (required), and nothing is sent.
    await fail.getByRole("button", { name: "Fail for good" }).click();
    expect(await fail.getByLabel("Reason").evaluate((el) => (el as unknown as { validity: { valueMissing: boolean } }).validity.valueMissing)).toBe(true);
    expect(await auditRows("admin.job.failed", world.ids.queued)).toEqual([]);
    await fail.getByLabel("Reason").fill("poison payload");
    await fail.getByRole("button", { name: "Fail for good" }).click();
    await fail.getByRole("status").filter({ hasText: "failed for good" }).waitFor();
    expect(await detail(world.ids.queued).getByRole("heading").first().innerText()).toContain("failed");
    expect(await auditRows("admin.job.failed", world.ids.queued)).toEqual([
      { actor_id: ADMIN, metadata: { task: NOBODY, fromState: "queued", attempts: 0, reason: "poison payload" } },
    ]);
    await expect.poll(() => summaryRow(NOBODY).locator("td").allInnerTexts()).toEqual([NOBODY, "0", "0", "0", "1", "—"]);
    await detail(world.ids.queued).getByRole("button", { name: "Close" }).click();
  });

  it("shows the failed job's last error, and retries it with a reason: it then runs and completes", async () => {
    await showState("failed");
    await row(page, String(world.ids.failed)).getByRole("button", { name: "Details" }).click();
    const job = detail(world.ids.failed);
    await expect.poll(() => job.getByLabel("Last error").innerText()).toBe(SMTP_ERROR);
    await job.getByRole("form", { name: "Retry job" }).getByLabel("Reason").fill("SMTP relay back");
    await screenshot(page, "jobs");

    world.heal();
    await job.getByRole("button", { name: "Retry now" }).click();
    await job.getByRole("status").filter({ hasText: "retried" }).waitFor();
    expect(await auditRows("admin.job.retried", world.ids.failed)).toEqual([
      { actor_id: ADMIN, metadata: { task: THROWS, fromState: "failed", attempts: 2, reason: "SMTP relay back" } },
    ]);
    await eventually(async () => (world.completed.includes(world.ids.failed) ? true : undefined), 20_000);
  });
});
