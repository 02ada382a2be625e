import type { AddressInfo } from "node:net";
import { decodeJwt } from "jose";
import type { Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApi, devEnv, type TestApi } from "../helpers/app.js";
import { TEST_AUDIENCE } from "../helpers/jwks.js";
import { ensureConsoleBundle, launchChromium, type Browser } from "../console/browser.js";
import { PHONE, signInThroughProvider, startAppStack, type AppStack } from "./support.js";


/** Waits on a condition: generous, the suite shares two cores. */
const poll = <T>(check: () => T | Promise<T>) => expect.poll(check, { timeout: 30_000 });
/**
 * The app's and the console's OpenID Connect sign-in against a real provider
 * (oidc-provider on loopback) in Chromium: the token it issues is the one the
 * API accepts, it stays in memory, it is refreshed through the provider, and
 * a forged or replayed authorization response is refused.
 */

// Short-lived access tokens: the app refreshes at three quarters of their life, so this file sees a refresh soon.
const ACCESS_TOKEN_TTL = 8;

let stack: AppStack;
let browser: Browser;

beforeAll(async () => {
  await ensureConsoleBundle();
  [stack, browser] = await Promise.all([
    startAppStack({ provider: { accessTokenTtl: ACCESS_TOKEN_TTL, roles: { "admin-7": ["platform_admin"] } } }),
    launchChromium(),
  ]);
});

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

async function phonePage(): Promise<Page> {
  const page = await browser.context.newPage();
  await page.setViewportSize(PHONE);
  return page;
}

/** The bearer tokens the page sent to the API, in order. */
function bearerTokens(page: Page): string[] {
  const tokens: string[] = [];
  page.on("request", (request: Request) => {
    const header = request.headers().authorization;
    if (request.url().startsWith(`${stack.baseUrl}/v1/`) && header?.startsWith("Bearer ")) tokens.push(header.slice(7));
  });
  return tokens;
}

/** Opens the app's reports screen and signs in there; returns the authorization response's URL (the callback). */
async function signIn(page: Page, login: string): Promise<string> {
  let callback = "";
  page.on("request", (request) => {
    if (request.url().startsWith(`${stack.baseUrl}/app/callback`)) callback = request.url();
  });
  await signInThroughProvider(page, login, async () => {
    await page.goto(`${stack.baseUrl}/app/#/reports`);
    await page.getByRole("button", { name: "Sign in" }).click();
  });
  await page.getByRole("heading", { name: "My reports" }).waitFor();
  return callback;
}

async function storedValues(page: Page): Promise<string> {
  return page.evaluate<string>("JSON.stringify([{ ...localStorage }, { ...sessionStorage }, document.cookie])");
}

describe("signing in to the app through the OpenID provider", () => {
  it("offers the provider's sign-in and no development sign-in when the bypass is off", async () => {
    const page = await phonePage();
    try {
      await page.goto(`${stack.baseUrl}/app/#/reports`);
      await page.getByRole("button", { name: "Sign in" }).waitFor();
      expect(await page.getByText("Development sign-in").count()).toBe(0);
    } finally {
      await page.close();
    }
  });

  it("signs in through the provider's pages, and the API takes the token it issued as that person", async () => {
    const page = await phonePage();
    try {
      const tokens = bearerTokens(page);
      const requested: string[] = [];
      page.on("request", (request) => requested.push(request.url()));
      const callback = await signIn(page, "owner-1");
      expect(new URL(callback).searchParams.get("code")).toBeTruthy();
      // The code left the address bar before it was used.
      expect(page.url()).toBe(`${stack.baseUrl}/app/#/reports`);
      expect(await page.locator(".who").textContent()).toContain("owner-1");

      expect(tokens.length).toBeGreaterThan(0);
      const claims = decodeJwt(tokens[0]!);
      expect(claims).toMatchObject({ iss: stack.provider.issuer, aud: TEST_AUDIENCE, sub: "owner-1" });
      expect(stack.provider.tokenGrants).toContain("authorization_code");

      // The same token, straight to the API: it is that person.
      const res = await stack.api.app.inject({
        method: "POST",
        url: "/v1/me/alert-subscriptions",
        headers: { authorization: `Bearer ${tokens[0]}` },
        payload: { location: { lat: 52.52, lon: 13.405 }, radiusKm: 2 },
      });
      expect(res.statusCode, res.body).toBe(201);
      const { rows } = await stack.db.pool.query("select actor_id from alert_subscription where id = $1", [res.json().id]);
      expect(rows[0].actor_id).toBe("owner-1");

      // Nothing of the tokens is stored or put in a URL.
      const stored = await storedValues(page);
      for (const token of new Set(tokens)) {
        expect(stored).not.toContain(token);
        expect(requested.filter((url) => url.includes(token))).toEqual([]);
      }
    } finally {
      await page.close();
    }
  });

  it("refreshes the access token through the provider before it runs out, and keeps working with the new one", async () => {
    const page = await phonePage();
    try {
      const tokens = bearerTokens(page);
      const grantsBefore = stack.provider.tokenGrants.filter((g) => g === "refresh_token").length;
      await signIn(page, "owner-2");
      await poll(() => stack.provider.tokenGrants.filter((g) => g === "refresh_token").length)
        .toBeGreaterThan(grantsBefore);
      // The next screen's calls carry the refreshed token, and the API takes it.
      const first = tokens[0]!;
      await page.getByRole("link", { name: "Alerts" }).click();
      await page.getByRole("heading", { name: "Alerts near me" }).waitFor();
      await poll(() => tokens.at(-1)).not.toBe(first);
      expect(decodeJwt(tokens.at(-1)!).sub).toBe("owner-2");
      expect(await page.getByRole("alert").count()).toBe(0);
      const stored = await storedValues(page);
      for (const token of new Set(tokens)) expect(stored).not.toContain(token);
    } finally {
      await page.close();
    }
  });

  it("refuses a forged authorization response: no sign-in was started in that tab, and nothing is exchanged", async () => {
    const page = await phonePage();
    try {
      const grants = stack.provider.tokenGrants.length;
      await page.goto(`${stack.baseUrl}/app/callback?code=forged-code&state=forged-state`);
      const alert = page.getByRole("alert");
      await alert.waitFor();
      expect(await alert.textContent()).toContain("Sign-in refused");
      expect(stack.provider.tokenGrants.length).toBe(grants);
      expect(await page.locator(".who").count()).toBe(0);
    } finally {
      await page.close();
    }
  });

  it("refuses a replayed authorization response, in the same tab and in another", async () => {
    const page = await phonePage();
    const other = await phonePage();
    try {
      const callback = await signIn(page, "owner-3");
      const grants = stack.provider.tokenGrants.length;
      for (const tab of [page, other]) {
        await tab.goto(callback);
        await tab.getByRole("alert").waitFor();
        expect(await tab.getByRole("alert").textContent()).toContain("Sign-in refused");
      }
      expect(stack.provider.tokenGrants.length).toBe(grants);
    } finally {
      await page.close();
      await other.close();
    }
  });

  const startFromReports = (page: Page) => async () => {
    await page.goto(`${stack.baseUrl}/app/#/reports`);
    await page.getByRole("button", { name: "Sign in" }).click();
  };

  it("refuses an ID token whose nonce is not the one this tab sent", async () => {
    const page = await phonePage();
    try {
      const tokens = bearerTokens(page);
      // The response is genuine and unused; only the nonce this tab expects is changed, before the app reads it.
      await page.addInitScript(`
        if (location.pathname === "/app/callback") {
          for (const key of Object.keys(sessionStorage).filter((k) => k.startsWith("oidc.pending"))) {
            sessionStorage.setItem(key, JSON.stringify({ ...JSON.parse(sessionStorage.getItem(key)), nonce: "another-nonce" }));
          }
        }`);
      await signInThroughProvider(page, "owner-4", startFromReports(page));
      await page.getByRole("alert").waitFor();
      expect(await page.getByRole("alert").textContent()).toMatch(/Sign-in refused.*nonce/);
      expect(tokens).toEqual([]);
      expect(await page.locator(".who").count()).toBe(0);
    } finally {
      await page.close();
    }
  });

  it("refuses another tab's authorization code: its PKCE verifier is not this tab's", async () => {
    const first = await phonePage();
    const second = await phonePage();
    try {
      // The first tab's response is never used: its pending sign-in is dropped before the app reads it.
      let stolen = "";
      first.on("request", (request) => {
        if (request.url().startsWith(`${stack.baseUrl}/app/callback`)) stolen = new URL(request.url()).searchParams.get("code") ?? "";
      });
      await first.addInitScript(`
        if (location.pathname === "/app/callback") {
          for (const key of Object.keys(sessionStorage).filter((k) => k.startsWith("oidc.pending"))) sessionStorage.removeItem(key);
        }`);
      await signInThroughProvider(first, "owner-5", startFromReports(first));
      await first.getByRole("alert").waitFor();
      expect(stolen).not.toBe("");
      const codeGrants = stack.provider.tokenGrants.filter((g) => g === "authorization_code").length;

      // The second tab's own response, its code swapped for the first tab's: the state matches, the verifier does not.
      await second.addInitScript(`
        if (location.pathname === "/app/callback") {
          const url = new URL(location.href);
          url.searchParams.set("code", ${JSON.stringify(stolen)});
          history.replaceState(null, "", url.href);
        }`);
      const tokens = bearerTokens(second);
      await signInThroughProvider(second, "owner-5", startFromReports(second));
      await second.getByRole("alert").waitFor();
      expect(await second.getByRole("alert").textContent()).toContain("Sign-in refused");
      expect(tokens).toEqual([]);
      expect(stack.provider.tokenGrants.filter((g) => g === "authorization_code").length).toBe(codeGrants);
    } finally {
      await first.close();
      await second.close();
    }
  });
});

describe("the admin console signs in through the same provider", () => {
  it("signs an operator in through the provider's pages, with the roles the token carries", async () => {
    const page = await browser.context.newPage();
    try {
      await signInThroughProvider(page, "admin-7", async () => {
        await page.goto(`${stack.baseUrl}/admin`);
        await page.getByRole("button", { name: "Sign in with the identity provider" }).click();
      });
      await page.getByRole("heading", { name: "Moderation queue" }).waitFor();
      expect(await page.locator(".who").textContent()).toContain("admin-7");
      expect(await storedValues(page)).not.toMatch(/eyJ/);
    } finally {
      await page.close();
    }
  });

  it("keeps pasting a token as the operators' fallback, and offers no debug actor without the bypass", async () => {
    const page = await browser.context.newPage();
    try {
      await page.goto(`${stack.baseUrl}/admin`);
      const form = page.getByRole("form", { name: "Sign in" });
      await form.getByRole("radio", { name: "Bearer token" }).waitFor();
      expect(await form.getByText("Debug actor (development only)").count()).toBe(0);
    } finally {
      await page.close();
    }
  });
});

describe("without a provider, in development", () => {
  let devApi: TestApi;
  let devUrl: string;

  beforeAll(async () => {
    devApi = await buildTestApi(devEnv(stack.db.url, stack.bus.url, { APP_MAP_TILE_URL: stack.tiles.template }));
    await devApi.app.listen({ port: 0, host: "127.0.0.1" });
    devUrl = `http://127.0.0.1:${(devApi.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await devApi?.close();
  });

  it("offers the development sign-in (the API's debug actor) and no provider, and it works", async () => {
    const page = await phonePage();
    try {
      await page.goto(`${devUrl}/app/#/reports`);
      await page.getByRole("heading", { name: "Development sign-in" }).waitFor();
      expect(await page.getByRole("button", { name: "Sign in", exact: true }).count()).toBe(0);
      await page.getByLabel("Actor id").fill("dev-owner");
      await page.getByRole("button", { name: "Sign in for development" }).click();
      await page.getByRole("heading", { name: "My reports" }).waitFor();
      await page.getByText("You have no reports yet.").waitFor();
    } finally {
      await page.close();
    }
  });
});
