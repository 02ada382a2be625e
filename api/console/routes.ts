import { existsSync } from "node:fs";
import { join } from "node:path";
import fastifyStatic from "@fastify/static";
import type { FastifyReply } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { packageRoot } from "../../lib/paths.js";
import { problems } from "../../lib/problems.js";

/** The built console (admin-ui/dist), from source or compiled alike. */
export function consoleBundleDir(from = import.meta.dirname): string {
  return join(packageRoot(from), "admin-ui", "dist");
}

// The page loads only what the API serves: no CDN, no inline script, no framing.
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

function securityHeaders(reply: FastifyReply): void {
  reply.header("content-security-policy", CONTENT_SECURITY_POLICY);
  reply.header("x-content-type-options", "nosniff");
  reply.header("referrer-policy", "no-referrer");
}

const ConsolePath = z.object({ "*": z.string().max(500) });
const ASSET_PATH = /^assets\/[\w-][\w.-]*$/;

/**
 * Serves the admin console at /admin. The page and its assets are public;
 * every call the page makes to /v1/admin carries the operator's credential
 * and is gated there. Hashed assets are cached for good; index.html is
 * revalidated so a deploy is picked up at the next load.
 */
export const consoleRoutes: FastifyPluginAsyncZod<{ root?: string }> = async (app, options) => {
  const root = options.root ?? consoleBundleDir();
  const built = existsSync(join(root, "index.html"));
  if (!built) app.log.warn({ root }, "console: admin-ui bundle not built (npm run build:console); /admin answers 404");

  await app.register(fastifyStatic, { root, serve: false, index: false, dotfiles: "deny" });

  const config = { auth: "public" as const };

  const sendIndex = (reply: FastifyReply) => {
    if (!built) throw problems.notFound("admin console bundle (run npm run build:console)");
    securityHeaders(reply);
    return reply.header("cache-control", "no-cache").sendFile("index.html", { cacheControl: false });
  };

  // Hidden from the OpenAPI document: these serve files, not the API.
  app.get("/admin", { config, schema: { hide: true } }, (_request, reply) => sendIndex(reply));

  app.get("/admin/*", { config, schema: { hide: true, params: ConsolePath } }, (request, reply) => {
    const path = request.params["*"];
    if (path.startsWith("assets/")) {
      // Vite's asset names are flat and hashed: anything else (dot files, folders, traversal) is not an asset.
      // A missing asset is the not-found handler's 404, never index.html.
      if (!ASSET_PATH.test(path)) return reply.callNotFound();
      securityHeaders(reply);
      return reply.sendFile(path, { maxAge: "365d", immutable: true });
    }
    // Any other path is the single page (its screens live in the URL fragment).
    return sendIndex(reply);
  });
};
