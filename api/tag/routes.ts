import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { withTransaction, type Queryable } from "../../lib/db.js";
import { ProblemError, ProblemSlug } from "../../lib/problems.js";
import type { AppDeps } from "../deps.js";
import { hashToken, TOKEN_PATTERN } from "../../lib/secret-token.js";
import { setPageErrorHandler } from "../pages/error-handler.js";
import { sendContactMessage } from "../safety/contact-messages/send.js";
import { TAG_ASSETS } from "./assets.js";
import { parseFormBody, readMessageForm } from "./form.js";
import { catalogues, negotiateLanguage, type Messages } from "./i18n/index.js";
import { pageHeaders as sharedPageHeaders } from "../pages/html.js";
import { animalThumbs, type TagPhotoSource } from "./photos.js";
import { emptyForm, notice, tagPage, type FormState, type TagView } from "./render.js";
import { recordScan, shareLocation } from "./scans.js";
import { findTag, type TagRow } from "./store.js";

export interface TagRoutesOptions extends AppDeps {
  /** The photo slot's data source (api/tag/photos.ts); tests pass their own. */
  photos?: TagPhotoSource;
}

const pageHeaders = (reply: FastifyReply): FastifyReply => sharedPageHeaders(reply, { indexable: false });

const messagesFor = (request: FastifyRequest): Messages => catalogues[negotiateLanguage(request.headers["accept-language"])];

/**
 * The live tag behind a token. Any string is hashed and looked up, and only
 * then is its shape checked: a token of the wrong length or alphabet costs
 * the same query as an unknown one, so timing tells nothing about which.
 */
export async function lookupTag(client: Queryable, token: string): Promise<TagRow | null> {
  const tag = await findTag(client, hashToken(token));
  return tag && TOKEN_PATTERN.test(token) ? tag : null;
}

/** The one 404 page, for unknown, revoked and malformed tokens alike. */
function sendNotFound(reply: FastifyReply, m: Messages): FastifyReply {
  return pageHeaders(reply).code(404).send(notice(m, m.notFound));
}

/** Under /t/ but refused by the router (a token over 200 characters, broken percent-encoding): the same 404 page. */
export function isTagPageUrl(url: string): boolean {
  return url.startsWith("/t/");
}

/** For api/app.ts's frameworkErrors: the tag 404, after the same lookup a real token gets. */
export async function sendTagNotFound(request: FastifyRequest, reply: FastifyReply, client: Queryable): Promise<void> {
  const token = request.url.slice(3).split(/[/?]/)[0] ?? "";
  await lookupTag(client, token).catch(() => null);
  sendNotFound(reply, messagesFor(request));
}

const viewOf = (tag: TagRow, photoUrls: string[]): TagView => ({
  shownName: tag.showName ? tag.animalName : null,
  species: tag.species,
  breed: tag.breed,
  colors: tag.colors,
  medicalNotes: tag.medicalNotes,
  instructions: tag.instructions,
  lostSince: tag.lostSince,
  photoUrls,
});

const isRateLimited = (err: unknown): err is ProblemError => err instanceof ProblemError && err.slug === ProblemSlug.RateLimited;

const TokenParams = z.object({ token: z.string() });
const AssetParams = z.object({ file: z.string().max(100) });

/**
 * The tag page, GET /t/{token}: what a QR code on a collar opens. Server
 * rendered in the finder's language, with the message form that sends the
 * owner a contact message (POST /t/{token}/message) and its thank-you page. Hidden from
 * the OpenAPI document, like the console: these are pages, not API.
 */
export const tagRoutes: FastifyPluginAsync<TagRoutesOptions> = async (plain, { pool, config, photos = animalThumbs }) => {
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const routeConfig = { auth: "public" as const };

  // Only this plugin's routes take a browser form; the JSON API keeps refusing it.
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, body, done) =>
    done(null, parseFormBody(body as string)),
  );

  // A browser gets a page in its language; an API client (the test matrix, curl) the usual problem+json.
  setPageErrorHandler(app, config, (request, reply, problem) => {
    const m = messagesFor(request);
    const copy =
      problem.status === 404
        ? m.notFound
        : problem.status === 429
          ? m.tooManyViews
          : problem.slug === ProblemSlug.Forbidden
            ? m.otherSite
            : m.failed;
    return pageHeaders(reply).send(notice(m, copy));
  });

  app.get("/t/assets/:file", { config: routeConfig, schema: { hide: true, params: AssetParams } }, (request, reply) => {
    const asset = TAG_ASSETS.get(request.params.file);
    if (!asset) return reply.callNotFound();
    return reply
      .type(asset.contentType)
      .header("x-content-type-options", "nosniff")
      .header("cache-control", "public, max-age=31536000, immutable")
      .send(asset.body);
  });

  const renderTag = async (reply: FastifyReply, m: Messages, token: string, tag: TagRow, form: FormState, status: number) =>
    pageHeaders(reply)
      .code(status)
      .send(tagPage(m, token, viewOf(tag, await photos(pool, tag.animalId)), form));

  // A view records a scan, and may write the owner's tag-scanned event.
  app.get("/t/:token", { config: { ...routeConfig, wakesRelay: true }, schema: { hide: true, params: TokenParams } }, async (request, reply) => {
    const m = messagesFor(request);
    const { token } = request.params;
    const tag = await lookupTag(pool, token);
    if (!tag) return sendNotFound(reply, m);
    let scanId = "";
    // HEAD (link checkers, previews that only probe) shows the page but is no view.
    if (request.method === "GET") {
      try {
        scanId = await withTransaction(pool, (client) => recordScan(client, tag, request.ip, request.log));
      } catch (err) {
        if (!isRateLimited(err)) throw err;
        return pageHeaders(reply).headers(err.headers).code(429).send(notice(m, m.tooManyViews));
      }
    }
    return renderTag(reply, m, token, tag, emptyForm(scanId), 200);
  });

  // A form another site's page posts is refused (403 page) before anything is read: api/plugins/same-origin-forms.ts.
  app.post("/t/:token/message", { config: { ...routeConfig, sameOriginForm: true }, schema: { hide: true, params: TokenParams } }, async (request, reply) => {
    const m = messagesFor(request);
    const { token } = request.params;
    const tag = await lookupTag(pool, token);
    if (!tag) return sendNotFound(reply, m);
    const read = readMessageForm(request.body, m);
    if ("form" in read) return renderTag(reply, m, token, tag, read.form, 400);
    const { message, fromContact, scanId, coarsePoint } = read.submission;
    try {
      await withTransaction(pool, async (client) => {
        const contact = { kind: "animal" as const, animalId: tag.animalId, message, fromContact, ip: request.ip };
        await sendContactMessage(client, coarsePoint ? { ...contact, location: coarsePoint } : contact, request.log);
        if (scanId && coarsePoint) await shareLocation(client, tag, scanId, coarsePoint, request.log);
      });
    } catch (err) {
      if (!isRateLimited(err)) throw err;
      return pageHeaders(reply).headers(err.headers).code(429).send(notice(m, m.tooManyMessages));
    }
    return pageHeaders(reply).code(200).send(notice(m, m.thanks));
  });
};
