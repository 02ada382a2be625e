import { createHash } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import sharp from "sharp";
import { z } from "zod";
import { takeBucketToken, type BucketSpec } from "../../lib/buckets.js";
import { clientAddressKey } from "../../lib/client-address.js";
import { withTransaction, type Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { recordEvent } from "../../lib/outbox.js";
import { ProblemError, ProblemSlug, problems } from "../../lib/problems.js";
import type { ReportKind } from "../../lib/report-lifecycle.js";
import type { ObjectStorage } from "../../lib/storage/index.js";
import type { AppDeps } from "../deps.js";
import { pageHeaders as sharedPageHeaders } from "../pages/html.js";
import { setPageErrorHandler } from "../pages/error-handler.js";
import { lockVisibleLostReport } from "../safety/access.js";
import { sendContactMessage } from "../safety/contact-messages/send.js";
import { shareLinks } from "../safety/reports/links.js";
import { insertSighting } from "../safety/sightings/store.js";
import { parseFormBody, readMessageForm } from "../tag/form.js";
import { catalogues, negotiateLanguage, type Language, type Messages } from "../tag/i18n/index.js";
import { RenderCache } from "./cache.js";
import { cardSvg, renderCard } from "./card.js";
import { flyerSizeOf, renderFlyer } from "./flyer.js";
import { readSightingForm } from "./form.js";
import { emptyForms, notice, sharePage, type ShareForms } from "./render.js";
import { findByShortCode, findShareReport, type ShareReportRow } from "./store.js";
import { shareViewOf } from "./view.js";

export interface ShareRoutesOptions extends AppDeps {
  /** Bytes of rendered flyers and cards kept by ETag (RenderCache). */
  renderCacheBytes?: number;
}

/** Under a share prefix but refused by the router (an over-long id, broken percent-encoding): the same 404 page. */
export function isSharePageUrl(url: string): boolean {
  return /^\/(?:lost|found|s)\//.test(url);
}

/** For api/app.ts's frameworkErrors: the share pages' 404 in the asker's language. */
export function sendShareNotFound(request: FastifyRequest, reply: FastifyReply): void {
  const m = catalogues[negotiateLanguage(request.headers["accept-language"])];
  pageHeaders(reply).header("x-robots-tag", "noindex").code(404).send(notice(m, m.share.notFound));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The short code's alphabet (migration 000018): 8 of 2-9 and a-z without i, l, o. */
export const SHORT_CODE = /^[2-9a-hjkmnp-z]{8}$/;

/** Anonymous sightings from a share page: per client address, the relay's limit (5 an hour). */
const SIGHTINGS_PER_ADDRESS_PER_HOUR = 5;
const sightingAddressBucket = (address: string): BucketSpec => ({
  key: `share-sighting:${address}`,
  capacity: SIGHTINGS_PER_ADDRESS_PER_HOUR,
  refillPerSecond: SIGHTINGS_PER_ADDRESS_PER_HOUR / 3600,
});
/** Who a share page's sighting names as its reporter: no account made it. */
export const SHARE_PAGE_SIGHTING_REPORTER = "anonymous:share-page";

/** Bumped when the flyer's or card's layout changes, so no cache holds the old one under a valid ETag. */
const RENDER_FORMAT = "2";
const DEFAULT_RENDER_CACHE_BYTES = 32 * 1024 * 1024;

const pageHeaders = (reply: FastifyReply): FastifyReply => sharedPageHeaders(reply, { indexable: true });

/** `?lang=` when it names a catalogue, else Accept-Language (api/tag/i18n). */
function languageOf(request: FastifyRequest): Language {
  const asked = (request.query as { lang?: unknown } | undefined)?.lang;
  if (typeof asked === "string" && Object.hasOwn(catalogues, asked.toLowerCase())) return asked.toLowerCase() as Language;
  return negotiateLanguage(request.headers["accept-language"]);
}

const isRateLimited = (err: unknown): err is ProblemError => err instanceof ProblemError && err.slug === ProblemSlug.RateLimited;

/** Whether If-None-Match names this ETag (a list, weak or not, or `*`). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t.replace(/^W\//, "") === etag;
  });
}

async function readAll(storage: ObjectStorage, key: string): Promise<Buffer | null> {
  const object = await storage.get(key);
  if (!object) return null;
  const chunks: Buffer[] = [];
  for await (const chunk of object.body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const ReportParams = z.object({ id: z.string().max(200) });
const CodeParams = z.object({ code: z.string().max(200) });
// Anything goes: an unknown language or size falls back, a repeated one too; never a 400 for a link someone printed.
const PageQuery = z.object({ lang: z.unknown().optional(), size: z.unknown().optional() }).loose();

/**
 * Share pages, cards, flyers and short links: GET /lost/{id} and /found/{id}
 * with their two forms, …/card.png, …/flyer.pdf, and GET /s/{code}. Pages,
 * not API: hidden from the OpenAPI document like the tag page, whose shell,
 * catalogue, assets and message form they use.
 */
export const shareRoutes: FastifyPluginAsync<ShareRoutesOptions> = async (plain, options) => {
  const { pool, reads, config, storage } = options;
  const cache = new RenderCache(options.renderCacheBytes ?? DEFAULT_RENDER_CACHE_BYTES);
  const base = config.PUBLIC_BASE_URL;
  const app = plain.withTypeProvider<ZodTypeProvider>();
  const routeConfig = { auth: "public" as const };

  // Only this plugin's routes take a browser form; the JSON API keeps refusing it.
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, body, done) =>
    done(null, parseFormBody(body as string)),
  );

  const messagesFor = (request: FastifyRequest): Messages => catalogues[languageOf(request)];

  setPageErrorHandler(app, config, (request, reply, problem) => {
    const m = messagesFor(request);
    const copy =
      problem.status === 404
        ? m.share.notFound
        : problem.status === 410
          ? m.share.expired
          : problem.status === 429
            ? m.tooManyViews
            : problem.slug === ProblemSlug.Forbidden
              ? m.otherSite
              : m.failed;
    return pageHeaders(reply).header("x-robots-tag", "noindex").send(notice(m, copy));
  });

  /** The one 404 (HTML for a browser, problem+json for an API client) for unknown, malformed, quarantined and removed alike. */
  const notFound = (): never => {
    throw problems.notFound("report");
  };

  /** The report when public reads may show it; a malformed id is looked up no further. */
  async function visibleReport(client: Queryable, kind: ReportKind, id: string): Promise<ShareReportRow> {
    if (!UUID.test(id)) return notFound();
    const row = await findShareReport(client, kind, id);
    if (!row || row.moderationState) return notFound();
    return row;
  }

  /** visibleReport for the GET pages, cards, flyers: on the public reads, a miss asked again on the primary. */
  async function publicReport(kind: ReportKind, id: string): Promise<ShareReportRow> {
    if (!UUID.test(id)) return notFound();
    const row = await reads.lookup((db) => findShareReport(db, kind, id));
    if (!row || row.moderationState) return notFound();
    return row;
  }

  const urlsOf = (kind: ReportKind, row: ShareReportRow, lang: Language) => {
    const links = shareLinks(base, kind, { id: row.id, shortCode: row.shortCode });
    const first = row.photos[0];
    const image = first
      ? `${base.replace(/\/+$/, "")}/v1/photos/${first.id}/display`
      : `${links.shareUrl}/card.png?lang=${lang}`;
    return { page: links.shareUrl, image, short: links.shortUrl };
  };

  async function renderPage(reply: FastifyReply, request: FastifyRequest, kind: ReportKind, row: ShareReportRow, forms: ShareForms, status: number) {
    const lang = languageOf(request);
    const view = shareViewOf(kind, row);
    return pageHeaders(reply).code(status).send(sharePage(catalogues[lang], view, urlsOf(kind, row, lang), forms));
  }

  /** An ETag for one rendering of one report state: what it shows, its photos, the language and the size. */
  const etagOf = (what: string, kind: ReportKind, row: ShareReportRow, lang: Language, size = "") =>
    `"${createHash("sha256")
      .update(
        JSON.stringify([
          RENDER_FORMAT,
          what,
          kind,
          row.id,
          row.updatedAt.toISOString(),
          row.status,
          row.closedReason,
          row.photos.map((p) => p.id),
          // A partner's edit (its name, its strayHoldDays) changes what the flyer says without touching the report.
          row.partner?.name ?? null,
          row.heldUntil?.toISOString() ?? null,
          lang,
          size,
          base,
        ]),
      )
      .digest("base64url")
      .slice(0, 27)}"`;

  async function firstPhotoJpeg(row: ShareReportRow): Promise<Buffer | null> {
    const first = row.photos[0];
    if (!first) return null;
    const bytes = await readAll(storage, first.displayKey);
    // A display variant is at most 1600 px; 1000 px is 300 dpi over the flyer's photo box and keeps the PDF small.
    return bytes ? sharp(bytes).resize(1000, 1000, { fit: "inside", withoutEnlargement: true }).jpeg({ quality: 80 }).toBuffer() : null;
  }

  for (const kind of ["lost", "found"] as const) {
    app.get(`/${kind}/:id`, { config: routeConfig, schema: { hide: true, params: ReportParams, querystring: PageQuery } }, async (request, reply) => {
      const row = await publicReport(kind, request.params.id);
      return renderPage(reply, request, kind, row, emptyForms(), 200);
    });

    app.get(`/${kind}/:id/card.png`, { config: routeConfig, schema: { hide: true, params: ReportParams, querystring: PageQuery } }, async (request, reply) => {
      const row = await publicReport(kind, request.params.id);
      const lang = languageOf(request);
      const etag = etagOf("card", kind, row, lang);
      reply.header("etag", etag).header("cache-control", "public, max-age=300").header("vary", "Accept-Language");
      if (matches(request.headers["if-none-match"], etag)) return reply.code(304).send();
      const view = shareViewOf(kind, row);
      const png = await cache.get(etag, () => renderCard(cardSvg(catalogues[lang], view)));
      return reply.type("image/png").header("x-content-type-options", "nosniff").send(png);
    });

    app.get(`/${kind}/:id/flyer.pdf`, { config: routeConfig, schema: { hide: true, params: ReportParams, querystring: PageQuery } }, async (request, reply) => {
      const row = await publicReport(kind, request.params.id);
      if (row.status !== "open") throw problems.gone(`this ${kind} report is ${row.closedReason === "expired" ? "no longer active" : row.status}; its flyer is withdrawn`);
      const lang = languageOf(request);
      const size = flyerSizeOf((request.query as { size?: unknown }).size);
      const etag = etagOf("flyer", kind, row, lang, size);
      reply
        .header("etag", etag)
        .header("cache-control", "public, max-age=300")
        .header("vary", "Accept-Language")
        .header("content-disposition", `inline; filename="${kind}-${row.species}-${row.shortCode}.pdf"`);
      if (matches(request.headers["if-none-match"], etag)) return reply.code(304).send();
      const pdf = await cache.get(etag, async () => {
        const urls = urlsOf(kind, row, lang);
        return renderFlyer({
          m: catalogues[lang],
          view: shareViewOf(kind, row),
          size,
          pageUrl: urls.page,
          shortUrl: urls.short,
          photo: await firstPhotoJpeg(row),
          createdAt: row.updatedAt,
        });
      });
      return reply.type("application/pdf").header("x-content-type-options", "nosniff").send(pdf);
    });

    // A form another site's page posts is refused (403 page) before anything is read: api/plugins/same-origin-forms.ts.
    app.post(`/${kind}/:id/message`, { config: { ...routeConfig, sameOriginForm: true, wakesRelay: true }, schema: { hide: true, params: ReportParams } }, async (request, reply) => {
      const m = messagesFor(request);
      const row = await visibleReport(pool, kind, request.params.id);
      if (row.status !== "open") return renderPage(reply, request, kind, row, emptyForms(), 409);
      const read = readMessageForm(request.body, m);
      if ("form" in read) return renderPage(reply, request, kind, row, { ...emptyForms(), message: read.form }, 400);
      const { message, fromContact, coarsePoint } = read.submission;
      try {
        await withTransaction(pool, (client) => {
          const contact = { kind, reportId: row.id, message, fromContact, ip: request.ip };
          return sendContactMessage(client, coarsePoint ? { ...contact, location: coarsePoint } : contact, request.log);
        });
      } catch (err) {
        if (!isRateLimited(err)) throw err;
        return pageHeaders(reply).header("x-robots-tag", "noindex").headers(err.headers).code(429).send(notice(m, m.tooManyMessages));
      }
      return pageHeaders(reply).header("x-robots-tag", "noindex").code(200).send(notice(m, kind === "lost" ? m.thanks : m.share.thanksFinder));
    });
  }

  // Sightings link to lost reports only (safety_sighting.lost_report_id): a found report's page has the message form alone.
  app.post("/lost/:id/sighting", { config: { ...routeConfig, sameOriginForm: true, wakesRelay: true }, schema: { hide: true, params: ReportParams } }, async (request, reply) => {
    const m = messagesFor(request);
    const row = await visibleReport(pool, "lost", request.params.id);
    if (row.status !== "open") return renderPage(reply, request, "lost", row, emptyForms(), 409);
    const read = readSightingForm(request.body, m, row.id, { lat: row.coarseLat, lon: row.coarseLon }, new Date());
    if ("form" in read) return renderPage(reply, request, "lost", row, { ...emptyForms(), sighting: read.form }, 400);
    const body = read.sighting;
    try {
      await withTransaction(pool, async (client) => {
        // The address's token first, so a refused sender locks no report; a later refusal rolls the token back.
        const wait = await takeBucketToken(client, sightingAddressBucket(clientAddressKey(request.ip)));
        if (wait > 0) throw problems.rateLimited(wait, `you can send at most ${SIGHTINGS_PER_ADDRESS_PER_HOUR} sightings per hour`);
        const report = await lockVisibleLostReport(client, row.id, null);
        if (report.status !== "open") throw problems.conflict(`this report is ${report.status}`);
        const sighting = await insertSighting(client, SHARE_PAGE_SIGHTING_REPORTER, body);
        await recordEvent(
          client,
          EventType.SightingReported,
          {
            sightingId: sighting.id,
            lostReportId: report.id,
            recipientActorId: report.reporterId,
            reporterId: SHARE_PAGE_SIGHTING_REPORTER,
            location: { lat: sighting.coarseLat, lon: sighting.coarseLon },
            seenAt: body.seenAt,
          },
          request.log,
        );
      });
    } catch (err) {
      if (!isRateLimited(err)) throw err;
      return pageHeaders(reply).header("x-robots-tag", "noindex").headers(err.headers).code(429).send(notice(m, m.share.tooManySightings));
    }
    return pageHeaders(reply).header("x-robots-tag", "noindex").code(200).send(notice(m, m.share.sighting.thanks));
  });

  // A printed short link: 301 to the report's page (a code names one report for good). The page applies moderation.
  app.get("/s/:code", { config: routeConfig, schema: { hide: true, params: CodeParams } }, async (request, reply) => {
    const code = request.params.code.toLowerCase();
    const target = SHORT_CODE.test(code) ? await reads.lookup((db) => findByShortCode(db, code)) : null;
    if (!target) return notFound();
    return reply.code(301).header("cache-control", "public, max-age=86400").header("location", `/${target.kind}/${target.id}`).send();
  });
};
