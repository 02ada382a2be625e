import { join } from "node:path";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { ApiConfig } from "../../lib/config.js";
import { packageRoot } from "../../lib/paths.js";
import { issuerOrigin, signInConfig, singlePageRoutes, type SignInConfig } from "../pages/single-page.js";

/** The built app (app-ui/dist), from source or compiled alike. */
export function appBundleDir(from = import.meta.dirname): string {
  return join(packageRoot(from), "app-ui", "dist");
}

/** What the app's page is told besides sign-in: its map's tiles, and whether the service sends texts (its settings then offer a phone). */
export interface AppPageConfig extends SignInConfig {
  map: { tileUrl: string; attribution: string };
  sms: boolean;
}

export function tileOrigin(tileUrl: string): string {
  // {s} subdomains would be several origins; the template's own host (with {s} as a wildcard label) stands for them.
  const url = new URL(tileUrl.replaceAll("{s}", "s").replace(/\{[a-z]+\}/g, "0"));
  return tileUrl.includes("{s}") ? `${url.protocol}//*.${url.host.split(".").slice(1).join(".")}` : url.origin;
}

/**
 * A strict policy: scripts, styles, workers and the manifest from this
 * origin only; images also from the tile server (the one origin added for the
 * app), data: (Leaflet's and the icons') and blob: (a photo's preview before
 * upload); connections to this origin and to the identity provider's (its
 * discovery and token endpoints; the sign-in itself is a navigation).
 */
export function appContentSecurityPolicy(tiles: string, issuer: string | null): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data: blob: ${tiles}`,
    `connect-src 'self'${issuer ? ` ${issuer}` : ""}`,
    "worker-src 'self'",
    "manifest-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/**
 * People's own app at /app (contract part 4): a Preact and Leaflet bundle
 * that calls this API like any other client. The page, its assets, the
 * manifest and icons are public; the service worker is /sw.js (push routes).
 */
export const peopleAppRoutes: FastifyPluginAsyncZod<{ config: ApiConfig; root?: string }> = async (app, options) => {
  const { config } = options;
  const sign = signInConfig(config);
  const pageConfig: AppPageConfig = {
    ...sign,
    map: { tileUrl: config.APP_MAP_TILE_URL, attribution: config.APP_MAP_ATTRIBUTION },
    // PUT /v1/me/phone takes numbers only then (api/phone/routes.ts).
    sms: Boolean(config.SMS_AUTH_TOKEN),
  };
  await app.register(singlePageRoutes, {
    mount: "/app",
    root: options.root ?? appBundleDir(),
    buildCommand: "npm run build:app",
    contentSecurityPolicy: appContentSecurityPolicy(tileOrigin(config.APP_MAP_TILE_URL), issuerOrigin(sign)),
    pageConfig,
    topLevelFiles: /^(manifest\.webmanifest|icon-[\w-]+\.(png|svg))$/,
  });
};
