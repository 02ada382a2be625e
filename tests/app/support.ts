import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { mkdirSync } from "node:fs";
import type { Page } from "playwright-core";
import sharp from "sharp";
import { appBundleDir } from "../../api/people-app/routes.js";
import type { Env } from "../../lib/config.js";
import { buildTestApi, devEnv, type TestApi } from "../helpers/app.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestBus, type TestBus } from "../helpers/nats.js";
import { reserveProviderPort, startOidcProvider, TEST_CLIENT_ID, TEST_RESOURCE, type OidcProviderOptions, type TestOidcProvider } from "../helpers/oidc-provider.js";
import { ensureBundle } from "../console/browser.js";

export const ensureAppBundle = () => ensureBundle(appBundleDir());

/** A phone's screen: the app's every screen is tested and pictured at this width. */
export const PHONE = { width: 360, height: 740 };

export interface TileServer {
  /** APP_MAP_TILE_URL for it. */
  template: string;
  origin: string;
  /** Tile paths requested, to show the map used it. */
  requested: string[];
  stop(): Promise<void>;
}

/** Local map tiles: one plain 256 px PNG for every {z}/{x}/{y}, on its own origin (as a real tile server is). */
export async function startTileServer(): Promise<TileServer> {
  const tile = await sharp({ create: { width: 256, height: 256, channels: 3, background: { r: 226, g: 236, b: 229 } } }).png().toBuffer();
  const requested: string[] = [];
  const server: Server = createServer((req, res) => {
    requested.push(req.url ?? "");
    if (!/^\/\d+\/\d+\/\d+\.png$/.test(req.url ?? "")) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "image/png", "cache-control": "max-age=3600" }).end(tile);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    template: `${origin}/{z}/{x}/{y}.png`,
    origin,
    requested,
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

export interface AppStack {
  db: TestDatabase;
  bus: TestBus;
  api: TestApi;
  provider: TestOidcProvider;
  tiles: TileServer;
  baseUrl: string;
  stop(): Promise<void>;
}

/**
 * The API on a real port with the app, trusting a real OpenID provider
 * (oidc-provider on loopback) whose public client redirects to this API's
 * /app/callback and /admin/callback, and a local tile server.
 */
export async function startAppStack(options: { env?: Env; provider?: Omit<OidcProviderOptions, "redirectUris"> } = {}): Promise<AppStack> {
  await ensureAppBundle();
  const db = await createTestDatabase();
  const bus = await startTestBus();
  const tiles = await startTileServer();
  const reserved = await reserveProviderPort();
  const api = await buildTestApi(
    devEnv(db.url, bus.url, {
      // The provider's tokens are the only way in: no debug actor.
      API_DEV_AUTH_BYPASS: "false",
      AUTH_ISSUER: reserved.issuer,
      AUTH_JWKS_URL: `${reserved.issuer}/jwks`,
      AUTH_AUDIENCE: "animal-safety-api",
      APP_OIDC_CLIENT_ID: TEST_CLIENT_ID,
      APP_OIDC_RESOURCE: TEST_RESOURCE,
      APP_MAP_TILE_URL: tiles.template,
      ...options.env,
    }),
  );
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  const baseUrl = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  const provider = await startOidcProvider(reserved, { ...options.provider, redirectUris: [`${baseUrl}/app/callback`, `${baseUrl}/admin/callback`] });
  return {
    db,
    bus,
    api,
    provider,
    tiles,
    baseUrl,
    async stop() {
      await api.close();
      await provider.stop();
      await tiles.stop();
      await bus.dispose();
      await db.drop();
    },
  };
}

/**
 * Signs in as a person would: the app's button, then the provider's own login
 * page (any login becomes the subject) and consent page, back to the app.
 * The browser's cookies are cleared first, so each sign-in meets the login page.
 */
export async function signInThroughProvider(page: Page, login: string, start: () => Promise<void>): Promise<void> {
  // The provider's session cookie of an earlier sign-in would skip its login page (and keep its subject).
  await page.context().clearCookies();
  await start();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("any password");
  await page.locator('button[type="submit"]').click();
  // The consent page, the first time this login meets the client.
  const consent = page.getByRole("button", { name: "Continue" });
  await Promise.race([consent.waitFor().then(() => consent.click()), page.waitForURL((url) => url.pathname.startsWith("/app") || url.pathname.startsWith("/admin"))]);
}

const screenshotDir = join(dirname(dirname(appBundleDir())), "docs");

/** UPDATE_SCREENSHOTS=1 refreshes docs/app-*.png (phone width); a normal run leaves them alone. */
export async function appScreenshot(page: Page, name: string): Promise<void> {
  if (process.env.UPDATE_SCREENSHOTS !== "1") return;
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: join(screenshotDir, `app-${name}.png`), fullPage: true });
}
