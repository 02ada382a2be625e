import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { chromium, type BrowserContext, type Locator, type Page } from "playwright-core";
import { build } from "vite";
import { consoleBundleDir } from "../../api/console/routes.js";

export const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const bundleDir = consoleBundleDir();
const sourceDir = dirname(bundleDir);

export function newestSourceChange(dir: string): number {
  let newest = 0;
  if (!existsSync(dir)) return newest;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "dist" || entry.name === "node_modules") continue;
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSourceChange(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Builds admin-ui into admin-ui/dist when it is missing or older than its
 * sources, so `npm test` works on a clean clone and never tests a stale bundle.
 */
export async function ensureConsoleBundle(): Promise<void> {
  await ensureBundle(bundleDir);
}

/** The browser code both bundles import (the OpenID Connect sign-in). */
const sharedSourceDir = join(dirname(sourceDir), "ui-shared");

/** Builds a Vite bundle (its source folder is the bundle's parent) when it is missing or older than its or the shared sources. */
export async function ensureBundle(outDir: string): Promise<void> {
  const root = dirname(outDir);
  const index = join(outDir, "index.html");
  const fresh = () => existsSync(index) && statSync(index).mtimeMs >= Math.max(newestSourceChange(root), newestSourceChange(sharedSourceDir));
  if (fresh()) return;
  // Test files run in parallel: one builds, the others wait for its lock to go (a lock older than 2 minutes is a dead run's).
  const lock = `${outDir}.lock`;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? 0) > 120_000) rmSync(lock, { recursive: true, force: true });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    if (!fresh()) await build({ root, logLevel: "warn" });
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Debian's Chromium, headless, on a fresh profile. A missing binary fails the run: it is never skipped. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: the admin console tests need Debian's chromium package (apt-get install -y chromium)`,
    );
  }
  const profile = await mkdtemp(join(tmpdir(), "console-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1360, height: 820 },
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Signs in on the console's form with the development debug actor. */
export async function signInAsDebugActor(page: Page, baseUrl: string, actorId: string, roles: string): Promise<void> {
  await page.goto(`${baseUrl}/admin`);
  const form = page.getByRole("form", { name: "Sign in" });
  await form.getByLabel("Debug actor (development only)").check();
  await form.getByLabel("Actor id").fill(actorId);
  await form.getByLabel("Roles").fill(roles);
  await form.getByRole("button", { name: "Sign in" }).click();
}

/** The table row of one listed item (rows carry the item id). */
export function row(page: Page, id: string): Locator {
  return page.locator(`tr[data-id="${id}"]`);
}

const screenshotDir = join(dirname(sourceDir), "docs");

/**
 * UPDATE_SCREENSHOTS=1 refreshes the README's screenshots (docs/console-*.png)
 * from this run; a normal run leaves the committed ones alone.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.UPDATE_SCREENSHOTS !== "1") return;
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: join(screenshotDir, `console-${name}.png`), fullPage: true });
}
