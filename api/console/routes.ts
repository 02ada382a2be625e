import { join } from "node:path";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { ApiConfig } from "../../lib/config.js";
import { packageRoot } from "../../lib/paths.js";
import { issuerOrigin, signInConfig, singlePageRoutes } from "../pages/single-page.js";

/** The built console (admin-ui/dist), from source or compiled alike. */
export function consoleBundleDir(from = import.meta.dirname): string {
  return join(packageRoot(from), "admin-ui", "dist");
}

/**
 * The page loads only what the API serves: no CDN, no inline script, no
 * framing. Its one other origin is the identity provider's, for the sign-in's
 * token requests (the sign-in itself is a navigation).
 */
export function consoleContentSecurityPolicy(issuer: string | null): string {
  return [
    "default-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self'${issuer ? ` ${issuer}` : ""}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/**
 * Serves the admin console at /admin. The page and its assets are public;
 * every call the page makes to /v1/admin carries the operator's credential
 * and is gated there. Hashed assets are cached for good; index.html is
 * revalidated so a deploy is picked up at the next load.
 */
export const consoleRoutes: FastifyPluginAsyncZod<{ config: ApiConfig; root?: string }> = async (app, options) => {
  const sign = signInConfig(options.config);
  await app.register(singlePageRoutes, {
    mount: "/admin",
    root: options.root ?? consoleBundleDir(),
    buildCommand: "npm run build:console",
    contentSecurityPolicy: consoleContentSecurityPolicy(issuerOrigin(sign)),
    pageConfig: sign,
  });
};
