import type { FastifyInstance, FastifyRequest } from "fastify";
import { problems } from "../../lib/problems.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * The route takes an HTML form (the tag page's message form, the share
     * pages): a post from another site's page is refused with 403.
     */
    sameOriginForm?: boolean;
  }
}

/** Sec-Fetch-Site values of a request this site's own page made, or the user made directly. */
const OWN_FETCH_SITES = new Set(["same-origin", "none"]);
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

const originOf = (url: string): string | null => {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
};

/** This site's origin as API_PUBLIC_BASE_URL gives it, and whether the request's own origin is taken too. */
export interface FormSite {
  origin: string | null;
  /** The public base URL is a loopback one (its default): no public origin to hold a request to. */
  orRequestHost: boolean;
}

export function formSite(publicBaseUrl: string): FormSite {
  const origin = originOf(publicBaseUrl);
  return { origin, orRequestHost: origin === null || LOOPBACK_HOSTS.has(new URL(origin).hostname) };
}

/**
 * Where a form post may come from. Another site's page can make a browser
 * post our forms (each post from the visitor's own address, past every
 * per-address limit); the browser says where the post came from, and that is
 * checked here:
 * - `Sec-Fetch-Site` (every current browser) must be `same-origin` or `none`.
 * - `Origin` must be API_PUBLIC_BASE_URL's origin. While that setting is a
 *   loopback URL (its default, `npm run dev`), the request's own origin
 *   (scheme and Host, the forwarded ones only from a trusted proxy) is taken
 *   too; a public one is the only origin, so a foreign host name pointed at
 *   the API cannot pass for it. `Origin: null` passes only when
 *   `Sec-Fetch-Site` vouches for it: a page with `Referrer-Policy:
 *   no-referrer` sends null even to itself, and so can any other site.
 * - A post with neither header is let through, as OWASP's guidance for
 *   Origin checks has it: browsers without either are long gone, and a
 *   client that is not a browser can write any header it likes.
 * A page whose form posts here sets a referrer policy that keeps its
 * Origin (the tag page: `strict-origin`).
 */
export function crossSiteFormReason(request: FastifyRequest, site: FormSite): string | null {
  const fetchSite = request.headers["sec-fetch-site"];
  if (fetchSite !== undefined && !OWN_FETCH_SITES.has(String(fetchSite))) return `Sec-Fetch-Site is ${fetchSite}`;
  const origin = request.headers.origin;
  if (origin === undefined) return null;
  if (origin === "null") return fetchSite === undefined ? "Origin is null" : null;
  const sent = originOf(origin);
  if (sent !== null && sent === site.origin) return null;
  if (sent !== null && site.orRequestHost && sent === originOf(`${request.protocol}://${request.host}`)) return null;
  return `Origin ${origin} is not this site`;
}

/** Refuses another site's post to a route marked `sameOriginForm`, before its body is read (onRequest). */
export function registerSameOriginForms(app: FastifyInstance, publicBaseUrl: string): void {
  const site = formSite(publicBaseUrl);
  app.addHook("onRequest", (request, _reply, done) => {
    if (!request.routeOptions.config.sameOriginForm) return done();
    const reason = crossSiteFormReason(request, site);
    if (reason === null) return done();
    request.log.info({ reason }, "cross-site form post refused");
    done(problems.forbidden("this form accepts posts only from this site's own pages"));
  });
}
