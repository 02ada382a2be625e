import type { FastifyReply } from "fastify";
import { catalogues } from "../tag/i18n/index.js";
import { notice } from "../tag/render.js";

/**
 * The pages a browser gets from a confirmation email's link: the tag page's
 * plain layout (no script), in English like the email.
 */

export interface PageCopy {
  title: string;
  body: string;
}

export const CONFIRMED_PAGE: PageCopy = {
  title: "Email address confirmed",
  body: "The notifications you chose to get by email now go to this address. You can close this page.",
};

/** One page for every link that does not work: unknown, malformed, used, expired or replaced alike. */
export const BAD_LINK_PAGE: PageCopy = {
  title: "This link does not work",
  body: "It may have been used already, have expired, or been replaced by a newer one. Set your email address again in the app to get a new link.",
};

export const FAILED_PAGE: PageCopy = {
  title: "Something went wrong",
  body: "Your address could not be confirmed just now. Please open the link again in a few minutes.",
};

// The stylesheet is the tag page's, on this origin; the page has no script and no form.
const CONTENT_SECURITY_POLICY = "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function sendPage(reply: FastifyReply, status: number, copy: PageCopy): FastifyReply {
  return reply
    .code(status)
    .type("text/html; charset=utf-8")
    .header("content-security-policy", CONTENT_SECURITY_POLICY)
    .header("x-content-type-options", "nosniff")
    .header("referrer-policy", "no-referrer")
    .header("x-robots-tag", "noindex, nofollow")
    .header("cache-control", "no-store")
    .send(notice(catalogues.en, copy));
}
