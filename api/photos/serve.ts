import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { PublicReads } from "../../lib/read-replica.js";
import { problems } from "../../lib/problems.js";
import { VARIANTS_PREFIX, type ObjectStorage } from "../../lib/storage/index.js";
import { isAdmin } from "../plugins/auth.js";
import { problemResponses } from "../plugins/openapi.js";
import { VariantParams } from "./schemas.js";
import { getPhoto } from "./store.js";
import type { VariantCache } from "./variant-cache.js";

/**
 * Variants never change: their key is the hash of their bytes. The cost: a CDN
 * keeps serving one after its photo stops being public, until it is purged
 * (docs/operations.md, "Photos in a CDN", says when and how).
 */
const IMMUTABLE = "public, max-age=31536000, immutable";
/** What the owner or an admin is shown of a photo hidden from the public must not sit in a shared cache. */
const PRIVATE = "private, no-store";

/** The variant's ETag: the SHA-256 its content-addressed key carries (variants/<sha256>.webp). */
const etagOf = (key: string) => `"${key.slice(VARIANTS_PREFIX.length, -".webp".length)}"`;

/** If-None-Match holds this ETag (a list, weak forms and * included). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t === etag || t === `W/${etag}`;
  });
}

/**
 * GET /v1/photos/{photoId}/{variant}: a ready photo's WebP to anyone when its
 * content is public; otherwise (still processing, failed, deleted, the photo
 * or its report quarantined or removed, an animal without a live emergency
 * profile) 404, except that the uploader, the owner and platform admins still
 * get it, privately (the admin console shows a quarantined photo this way).
 * The original is never served: only variant keys are read.
 */
export function servePhotoRoute(
  parent: FastifyInstance,
  { reads, storage, variants }: { reads: PublicReads; storage: ObjectStorage; variants: VariantCache },
): void {
  const app = parent.withTypeProvider<ZodTypeProvider>();
  app.get(
    "/v1/photos/:photoId/:variant",
    {
      config: { auth: "public" },
      schema: {
        tags: ["photos"],
        summary: "A photo variant (image/webp)",
        description:
          "thumb (longest side 320 px) or display (longest side 1600 px), WebP without EXIF, XMP or IPTC metadata, with " +
          "an ETag (the SHA-256 of the bytes) and Cache-Control: public, max-age=31536000, immutable; If-None-Match " +
          "gets 304. 404 while the photo is processing, when it failed or was deleted, when the photo or its report is " +
          "quarantined or removed, and for an animal's photo unless the animal has a live emergency profile. The " +
          "uploader, the owner and platform admins still get such a ready photo, with Cache-Control: private, no-store. " +
          "The original upload is never served.",
        params: VariantParams,
        response: {
          200: { description: "The WebP image", content: { "image/webp": { schema: z.string().meta({ format: "binary" }) } } },
          304: z.null().describe("Not modified: If-None-Match holds the ETag"),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request, reply) => {
      const { photoId, variant } = request.params;
      // The public reads; a photo not (yet) ready on the replica is asked again on the primary: it may have just been processed.
      const photo = await reads.lookup((db) => getPhoto(db, photoId), (p) => p?.status === "ready");
      const key = variant === "thumb" ? photo?.thumbKey : photo?.displayKey;
      if (!photo || photo.status !== "ready" || !key) throw problems.notFound("photo");
      const visible = photo.moderationState === null && photo.parentPublic;
      const actor = request.actor;
      const privileged = actor !== null && (actor.id === photo.uploaderId || actor.id === photo.ownerId || isAdmin(actor));
      if (!visible && !privileged) throw problems.notFound("photo");

      const etag = etagOf(key);
      const cacheControl = visible ? IMMUTABLE : PRIVATE;
      if (matches(request.headers["if-none-match"], etag)) {
        return reply.code(304).header("etag", etag).header("cache-control", cacheControl).send(null);
      }
      // HEAD (Fastify's twin of this route) needs the length only, not the bytes.
      const head = request.method === "HEAD";
      const bytes = head ? null : await variants.get(key);
      const length = head ? (await storage.head(key))?.contentLength : bytes?.length;
      if (length === undefined) {
        request.log.error({ photoId, key }, "photos: a ready photo's variant is missing from storage");
        throw problems.notFound("photo");
      }
      reply
        .type("image/webp")
        .header("etag", etag)
        .header("cache-control", cacheControl)
        .header("x-content-type-options", "nosniff")
        .header("content-length", length);
      // A buffer or stream is sent as it is (the zod serializer never sees it); Fastify's HEAD twin keeps
      // the content-length set above for a stream, so HEAD sends an empty one.
      return reply.send((bytes ?? Readable.from([])) as never);
    },
  );
}
