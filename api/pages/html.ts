import type { FastifyReply } from "fastify";

/**
 * What every server-rendered page shares (the tag page, the share pages):
 * HTML escaping, the security headers and the document shell. No framework:
 * every value from the database or the request is escaped by the caller with
 * escapeHtml before it reaches a template.
 */

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

// As the console's, but the page may post its own forms. Images come from this origin only (photos are same-origin paths).
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export interface PageHeaderOptions {
  /** Share pages are meant to be found; the tag page (a token in its URL) is not. */
  indexable: boolean;
}

export function pageHeaders(reply: FastifyReply, { indexable }: PageHeaderOptions): FastifyReply {
  reply
    .type("text/html; charset=utf-8")
    .header("content-security-policy", CONTENT_SECURITY_POLICY)
    .header("x-content-type-options", "nosniff")
    // Not no-referrer: with it a browser sends `Origin: null` even on the page's own form post (Fetch), which
    // the same-origin check cannot tell from another site's. strict-origin sends the origin alone, never the path.
    .header("referrer-policy", "strict-origin")
    .header("cache-control", "no-store")
    .header("vary", "Accept-Language");
  return indexable ? reply : reply.header("x-robots-tag", "noindex, nofollow");
}

export interface PageShell {
  /** BCP 47 tag for <html lang>. */
  lang: string;
  /** Already escaped. */
  title: string;
  /** Already escaped: the header's and the title's service name. */
  service: string;
  /** Already escaped. */
  footer: string;
  stylesheet: string;
  script?: string;
  indexable: boolean;
  /** Extra, already escaped <head> lines (canonical link, Open Graph tags). */
  head?: string;
  main: string;
}

export function pageDocument(page: PageShell): string {
  const robots = page.indexable ? "" : `<meta name="robots" content="noindex, nofollow">\n`;
  return `<!doctype html>
<html lang="${escapeHtml(page.lang)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${robots}<meta name="referrer" content="strict-origin">
<title>${page.title} · ${page.service}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${escapeHtml(page.stylesheet)}">
${page.head ?? ""}${page.script ? `<script src="${escapeHtml(page.script)}" defer></script>\n` : ""}</head>
<body>
<header>${page.service}</header>
<main>
${page.main}
</main>
<footer><p>${page.footer}</p></footer>
</body>
</html>
`;
}
