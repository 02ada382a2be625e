import { randomUUID } from "node:crypto";
import multipart from "@fastify/multipart";
import { z } from "zod";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { validatorCompiler } from "fastify-type-provider-zod";
import type { FastifySchemaCompiler } from "fastify";
import { AuditAction, AuditObject, writeAuditEvent } from "../../lib/audit.js";
import { withTransaction } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { IMAGE_MIME_TYPES } from "../../lib/images/index.js";
import type { Registry } from "../../lib/metrics.js";
import { PHOTO_DELETE_TASK, PHOTO_PROCESS_TASK } from "../../jobs/photos/task.js";
import { recordEvent } from "../../lib/outbox.js";
import {
  lockObjectKeys,
  MAX_PHOTOS_PER_PARENT,
  MAX_UPLOAD_BYTES,
  type PhotoParent,
  type PhotoParentType,
} from "../../lib/photos.js";
import { problems } from "../../lib/problems.js";
import { enqueue } from "../../jobs/queue.js";
import { originalKey, sha256Hex } from "../../lib/storage/index.js";
import type { AppDeps } from "../deps.js";
import { isAdmin, requireActor } from "../plugins/auth.js";
import { problemResponses } from "../plugins/openapi.js";
import { IdParams } from "../schemas.js";
import { PhotoAccepted, PhotoDetail, PhotoParams, PhotoUploadBody } from "./schemas.js";
import { servePhotoRoute } from "./serve.js";
import { VariantCache } from "./variant-cache.js";
import * as store from "./store.js";
import { checkImage, closeIfBodyUnread, MULTIPART_ALLOWANCE_BYTES, readPhotoPart, refuseDeclaredOversize, type ReadPhoto } from "./upload.js";
import { registerUploadSlotMetrics, UploadSlots, UploadsInFlight } from "./upload-slots.js";
import { photoDetail } from "./views.js";

const uploadTargets: Array<{ path: string; parent: PhotoParentType; what: string; who: string }> = [
  { path: "/v1/safety/lost-reports/:id/photos", parent: "lost_report", what: "lost report", who: "reporter" },
  { path: "/v1/safety/found-reports/:id/photos", parent: "found_report", what: "found report", who: "reporter" },
  { path: "/v1/animals/:id/photos", parent: "animal", what: "animal", who: "owner" },
];

/**
 * The body is read from the stream by the handler (upload.ts), never parsed
 * into request.body: its schema only documents the form, so the body part is
 * let through here while params are validated as everywhere else.
 */
const documentedBodyOnly: FastifySchemaCompiler<unknown> = (route) =>
  route.httpPart === "body" ? () => ({ value: undefined }) : (validatorCompiler(route as never) as ReturnType<FastifySchemaCompiler<unknown>>);

const cap = `${MAX_UPLOAD_BYTES} bytes (10 MiB)`;
/** Told to a client refused for want of an upload slot, or for one already in flight: about how long a few uploads take to be read and stored. */
const BUSY_RETRY_AFTER_SECONDS = 5;

/** Upload, status, delete and serving of photos (contract part 2, "Photos"). */
export const photoRoutes: FastifyPluginAsyncZod<AppDeps & { metrics: Registry }> = async (app, { pool, reads, storage, config, metrics }) => {
  // Here only: multipart/form-data is accepted by the upload routes and stays 415 everywhere else.
  await app.register(multipart, { limits: { fileSize: MAX_UPLOAD_BYTES, files: 1 } });
  // Shared by the three upload routes: the memory bound is per process.
  const slots = new UploadSlots(config.API_PHOTO_UPLOAD_CONCURRENCY, MAX_UPLOAD_BYTES);
  registerUploadSlotMetrics(metrics, slots);
  const inFlight = new UploadsInFlight();
  const waitSeconds = config.API_PHOTO_UPLOAD_WAIT_MS / 1000;
  const busy = () =>
    problems.unavailable(`the server is reading as many uploads as it can; none could start within ${waitSeconds} s`, BUSY_RETRY_AFTER_SECONDS);

  for (const { path, parent: parentType, what, who } of uploadTargets) {
    app.post(
      path,
      {
        // The body's time is bounded here (the slot wait, the idle and body timeouts), not by API_REQUEST_TIMEOUT_MS.
        config: { auth: "actor", timeLimits: "own" },
        validatorCompiler: documentedBodyOnly,
        schema: {
          tags: ["photos"],
          summary: `Upload a photo of a ${what} (${who} only)`,
          description:
            `multipart/form-data with exactly one file part named photo, at most ${cap} (413 payload-too-large; the ` +
            `upload is cut off there, never read whole). The type comes from the bytes, whatever the declared type or ` +
            `file name: JPEG, PNG, WebP, GIF (its first frame) and HEIC/HEIF are taken, anything else is 415 ` +
            `unsupported-media-type. HEVC-coded HEIC (iPhone photos) is 415 on servers whose image library has no HEVC ` +
            `decoder, as the prebuilt one has not. A truncated image or one over 40,000,000 pixels (told from its ` +
            `headers, before any pixel is decoded) is 422 validation-failed. At most ${MAX_PHOTOS_PER_PARENT} photos ` +
            `that are not deleted per ${what} (409 conflict). Not the ${who}: 403; unknown ${what}: 404. A declared ` +
            `Content-Length over the cap plus ${MULTIPART_ALLOWANCE_BYTES} bytes for the form is 413 before any of the ` +
            `body is read. One upload at a time per caller: a second one while the first is in flight is 429 ` +
            `rate-limited with a Retry-After header, so send photos one after another. The server reads a few ` +
            `uploads at once (API_PHOTO_UPLOAD_CONCURRENCY), each taking its place once the photo's first 64 KiB ` +
            `have arrived (a smaller photo needs none); the others wait for their turn, their body not read ` +
            `meanwhile, and one that could not go on within API_PHOTO_UPLOAD_WAIT_MS (30 s) is 503 ` +
            `service-unavailable with a Retry-After header. A body that sends nothing for ` +
            `API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS (10 s), before its first bytes or between two, or has not fully arrived ` +
            `within API_PHOTO_UPLOAD_BODY_TIMEOUT_MS (120 s) of its reading starting (the wait not counted), is 408 ` +
            `request-timeout; these limits replace API_REQUEST_TIMEOUT_MS for this route. On any refusal ` +
            `nothing is stored. Accepted: 202 {id, status: processing}; the original is kept privately until a job ` +
            `has made the thumb and display variants, then the photo is ready (GET /v1/photos/{photoId}).`,
          consumes: ["multipart/form-data"],
          params: IdParams,
          body: PhotoUploadBody,
          response: { 202: PhotoAccepted, ...problemResponses(400, 401, 403, 404, 408, 409, 413, 415, 422, 429, 503) },
        },
      },
      async (request, reply) => {
        const actor = requireActor(request);
        const parent: PhotoParent = { type: parentType, id: request.params.id };
        const refuse = (ownerId: string | null, live: number) => {
          if (ownerId === null) throw problems.notFound(what);
          if (ownerId !== actor.id) throw problems.forbidden(`only the ${who} can add photos`);
          if (live >= MAX_PHOTOS_PER_PARENT) throw problems.conflict(`a ${what} has at most ${MAX_PHOTOS_PER_PARENT} photos; delete one first`);
        };
        closeIfBodyUnread(request, reply);
        // Before reading the body: a refused caller costs no upload.
        refuseDeclaredOversize(request);
        const done = inFlight.claim(actor.id);
        if (!done) throw problems.rateLimited(BUSY_RETRY_AFTER_SECONDS, "an upload of yours is still in flight; send photos one after another");
        const id = randomUUID();
        let read: ReadPhoto | undefined;
        try {
          refuse(await store.parentOwner(pool, parent), await store.countLivePhotos(pool, parent));
          read = await readPhotoPart(request, {
            slots,
            waitMs: config.API_PHOTO_UPLOAD_WAIT_MS,
            idleMs: config.API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS,
            deadlineMs: config.API_PHOTO_UPLOAD_BODY_TIMEOUT_MS,
            busy,
          });
          // The slot, if the photo took one, is held while its buffer holds the bytes: checked, hashed and stored.
          const { bytes } = read;
          const image = await checkImage(bytes);
          const sha256 = sha256Hex(bytes);
          const key = originalKey(sha256);
          await withTransaction(pool, async (client) => {
            // The parent's row lock makes the cap race-safe: concurrent uploads count one after another.
            refuse(await store.parentOwner(client, parent, true), await store.countLivePhotos(client, parent));
            await store.insertPhoto(client, { id, uploaderId: actor.id, parent, sha256, type: image.type, bytes: bytes.length });
            await recordEvent(client, EventType.PhotoUploaded, { photoId: id, uploaderId: actor.id, parentType, parentId: parent.id }, request.log);
            await enqueue(client, PHOTO_PROCESS_TASK, { photoId: id });
            // Last, under the key's lock: a refusal above stored nothing, and a job releasing an equal original waits for this commit.
            await lockObjectKeys(client, [key]);
            await storage.put(key, bytes, IMAGE_MIME_TYPES[image.type]);
          });
        } finally {
          read?.release();
          done();
        }
        return reply.code(202).header("location", `/v1/photos/${id}`).send({ id, status: "processing" as const });
      },
    );
  }

  app.get(
    "/v1/photos/:photoId",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["photos"],
        summary: "A photo's status (the uploader, the report's or animal's owner, or platform_admin)",
        description:
          "processing, ready, failed (with failureReason: why the image could not be used, or that processing kept " +
          "failing after its retries) or deleted. The variant URLs are given once it is ready.",
        params: PhotoParams,
        response: { 200: PhotoDetail, ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const photo = await store.getPhoto(pool, request.params.photoId);
      if (!photo) throw problems.notFound("photo");
      if (photo.uploaderId !== actor.id && photo.ownerId !== actor.id && !isAdmin(actor)) {
        throw problems.forbidden("only the uploader or a platform admin can see this photo's status");
      }
      return photoDetail(photo, config.API_PUBLIC_BASE_URL);
    },
  );

  app.delete(
    "/v1/photos/:photoId",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["photos"],
        summary: "Delete a photo (the uploader or platform_admin)",
        description:
          "204 at once: the photo stops being listed and served, and a job deletes its stored objects (an object " +
          "another photo shares, being the same bytes, stays). Deleting a deleted photo is a 204 no-op. A platform " +
          "admin's delete of someone else's photo is audited as admin.photo.deleted in the same transaction.",
        params: PhotoParams,
        response: { 204: z.null().describe("Deleted"), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const { photoId } = request.params;
      await withTransaction(pool, async (client) => {
        const photo = await store.lockPhoto(client, photoId);
        if (!photo) throw problems.notFound("photo");
        const asAdmin = photo.uploaderId !== actor.id;
        if (asAdmin && !isAdmin(actor)) throw problems.forbidden("only the uploader or a platform admin can delete this photo");
        if (photo.status === "deleted") return;
        await store.markDeleted(client, photoId, actor.id);
        await recordEvent(
          client,
          EventType.PhotoDeleted,
          { photoId, uploaderId: photo.uploaderId, parentType: photo.parent.type, parentId: photo.parent.id, deletedBy: actor.id },
          request.log,
        );
        await enqueue(client, PHOTO_DELETE_TASK, { photoId });
        if (asAdmin) {
          await writeAuditEvent(client, {
            actorId: actor.id,
            action: AuditAction.PhotoDeletedByAdmin,
            objectType: AuditObject.Photo,
            objectId: photoId,
            metadata: { uploaderId: photo.uploaderId, parentType: photo.parent.type, parentId: photo.parent.id, previousStatus: photo.status },
          });
        }
      });
      return reply.code(204).send(null);
    },
  );

  servePhotoRoute(app, { reads, storage, variants: new VariantCache(storage, config.API_PHOTO_CACHE_BYTES) });
};
