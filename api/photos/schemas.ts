import { z } from "zod";
import { CONTENT_STATES } from "../../lib/moderation.js";
import { PHOTO_PARENT_TYPES, PHOTO_STATUSES } from "../../lib/photos.js";

/** A ready photo as report, animal and emergency views list it. */
export const PhotoView = z
  .object({
    id: z.uuid(),
    thumbUrl: z.string().describe("GET /v1/photos/{id}/thumb: WebP, longest side 320 px"),
    displayUrl: z.string().describe("GET /v1/photos/{id}/display: WebP, longest side 1600 px, never enlarged"),
    width: z.number().int().describe("Of the display variant"),
    height: z.number().int().describe("Of the display variant"),
    moderationState: z.enum(CONTENT_STATES).optional().describe("Only in the owner's and admins' views"),
  })
  .meta({ id: "Photo" });
export type PhotoView = z.input<typeof PhotoView>;

/** The views' list: ready photos only, oldest first. */
export const PhotoList = z.array(PhotoView).describe("Ready photos only, oldest first");

export const PhotoAccepted = z
  .object({ id: z.uuid(), status: z.literal("processing") })
  .meta({ id: "PhotoAccepted" });

/** Documents the multipart body; the route reads the stream itself (upload.ts), so this is never validated. */
export const PhotoUploadBody = z
  .object({ photo: z.string().meta({ format: "binary" }).describe("The image file: JPEG, PNG, WebP, HEIC/HEIF or GIF, at most 10 MiB") })
  .meta({ id: "PhotoUpload" });

export const PhotoParams = z.object({ photoId: z.uuid() });
export const VariantParams = z.object({ photoId: z.uuid(), variant: z.enum(["thumb", "display"]) });

export const PhotoDetail = z
  .object({
    id: z.uuid(),
    status: z.enum(PHOTO_STATUSES),
    failureReason: z.string().nullable().describe("Why processing failed, when status is failed"),
    parent: z.object({ type: z.enum(PHOTO_PARENT_TYPES), id: z.uuid() }),
    attempts: z.number().int().describe("Processing attempts so far"),
    createdAt: z.string(),
    readyAt: z.string().nullable(),
    width: z.number().int().nullable(),
    height: z.number().int().nullable(),
    thumbUrl: z.string().nullable(),
    displayUrl: z.string().nullable(),
    moderationState: z.enum(CONTENT_STATES).nullable(),
  })
  .meta({ id: "PhotoDetail" });
