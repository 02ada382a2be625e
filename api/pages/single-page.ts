import { existsSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import fastifyStatic from "@fastify/static";
import type { FastifyReply } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { ApiConfig } from "../../lib/config.js";
import { problems } from "../../lib/problems.js";
import { escapeHtml } from "./html.js";

/**
 * What a browser bundle (the console, the app) needs to sign in, given in its
 * page as <meta name="service-config">: the bundles are built once and the
 * provider is a setting, so the page cannot know it at build time.
 */
export interface SignInConfig {
  /** The provider's issuer (AUTH_ISSUER) and the public client; null when no provider sign-in is configured. */
  oidc: { issuer: string; clientId: string; scope: string; resource: string | null } | null;
  /** The development bypass (X-Debug-Actor) is on: the page may offer it, and only then. */
  devSignIn: boolean;
}

export function signInConfig(config: ApiConfig): SignInConfig {
  const oidc =
    config.AUTH_ISSUER && config.APP_OIDC_CLIENT_ID
      ? { issuer: config.AUTH_ISSUER, clientId: config.APP_OIDC_CLIENT_ID, scope: config.APP_OIDC_SCOPE, resource: config.APP_OIDC_RESOURCE ?? null }
      : null;
  return { oidc, devSignIn: config.API_DEV_AUTH_BYPASS && config.API_ENV === "development" };
}

/** The issuer's origin, which the page's token requests (discovery, token endpoint) go to; none without provider sign-in. */
export function issuerOrigin(sign: SignInConfig): string | null {
  if (!sign.oidc) return null;
  try {
    return new URL(sign.oidc.issuer).origin;
  } catch {
    return null;
  }
}

export interface SinglePageOptions {
  /** Where it is served: "/admin", "/app" (not `prefix`, which register() would take as its own). */
  mount: `/${string}`;
  /** The built bundle (Vite's outDir). */
  root: string;
  /** The command that builds it, named in the 404 when it is not built. */
  buildCommand: string;
  contentSecurityPolicy: string;
  /** Given to the page as <meta name="service-config" content="…json…">. */
  pageConfig: unknown;
  /**
   * Files of the bundle's top level besides index.html (Vite copies public/
   * there unhashed: the manifest, icons): served revalidated after a day.
   */
  topLevelFiles?: RegExp;
}

// Vite's asset names are flat and hashed: anything else (dot files, folders, traversal) is not an asset.
const ASSET_PATH = /^assets\/[\w-][\w.-]*$/;
const PagePath = z.object({ "*": z.string().max(500) });

/**
 * Serves a Vite single-page bundle under a prefix: index.html (with the
 * page's configuration) for the prefix and any path under it, hashed assets
 * cached for good, and the given top-level files. The page and its assets are
 * public; every API call the page makes carries the person's credential and
 * is gated there.
 */
export const singlePageRoutes: FastifyPluginAsyncZod<SinglePageOptions> = async (app, options) => {
  const { mount, root } = options;
  if (!existsSync(join(root, "index.html"))) app.log.warn({ root }, `${mount}: bundle not built (${options.buildCommand}); it answers 404`);
  await app.register(fastifyStatic, { root, serve: false, index: false, dotfiles: "deny" });

  const meta = `<meta name="service-config" content="${escapeHtml(JSON.stringify(options.pageConfig))}">`;
  // The page is read when it changes (a rebuild while the API runs), not on every request.
  let page: { mtimeMs: number; html: string } | null = null;
  const readPage = async (): Promise<string | null> => {
    const file = join(root, "index.html");
    const info = await stat(file).catch(() => null);
    if (!info) return null;
    if (page?.mtimeMs !== info.mtimeMs) page = { mtimeMs: info.mtimeMs, html: (await readFile(file, "utf8")).replace("</head>", `${meta}\n</head>`) };
    return page.html;
  };

  const securityHeaders = (reply: FastifyReply) => {
    reply.header("content-security-policy", options.contentSecurityPolicy);
    reply.header("x-content-type-options", "nosniff");
    reply.header("referrer-policy", "no-referrer");
  };

  const config = { auth: "public" as const };

  const sendIndex = async (reply: FastifyReply) => {
    const html = await readPage();
    if (html === null) throw problems.notFound(`${mount} bundle (run ${options.buildCommand})`);
    securityHeaders(reply);
    return reply.header("cache-control", "no-cache").type("text/html; charset=utf-8").send(html);
  };

  // Hidden from the OpenAPI document: these serve files, not the API.
  app.get(mount, { config, schema: { hide: true } }, (_request, reply) => sendIndex(reply));

  app.get(`${mount}/*`, { config, schema: { hide: true, params: PagePath } }, (request, reply) => {
    const path = request.params["*"];
    if (path.startsWith("assets/")) {
      // A missing asset is the not-found handler's 404, never index.html.
      if (!ASSET_PATH.test(path)) return reply.callNotFound();
      securityHeaders(reply);
      return reply.sendFile(path, root, { maxAge: "365d", immutable: true });
    }
    if (options.topLevelFiles?.test(path)) {
      securityHeaders(reply);
      return reply.sendFile(path, root, { maxAge: "1d" });
    }
    // Any other path is the single page (its screens live in the URL).
    return sendIndex(reply);
  });
};
