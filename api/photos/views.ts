import type { z } from "zod";
import type { PhotoDetail, PhotoView } from "./schemas.js";
import type { PhotoRow, ReadyPhoto } from "./store.js";

/** Photo rows → responses. URLs are absolute under `baseUrl` (API_PUBLIC_BASE_URL); "" gives same-origin paths. */

const urlOf = (baseUrl: string, id: string, variant: "thumb" | "display") => `${baseUrl.replace(/\/$/, "")}/v1/photos/${id}/${variant}`;

export function photoView(photo: ReadyPhoto, baseUrl: string): PhotoView {
  return {
    id: photo.id,
    thumbUrl: urlOf(baseUrl, photo.id, "thumb"),
    displayUrl: urlOf(baseUrl, photo.id, "display"),
    width: photo.width,
    height: photo.height,
    ...(photo.moderationState ? { moderationState: photo.moderationState } : {}),
  };
}

export const photoViews = (photos: ReadyPhoto[], baseUrl: string) => photos.map((photo) => photoView(photo, baseUrl));

export function photoDetail(row: PhotoRow, baseUrl: string): z.input<typeof PhotoDetail> {
  const ready = row.status === "ready";
  return {
    id: row.id,
    status: row.status,
    failureReason: row.failureReason,
    parent: row.parent,
    attempts: row.attempts,
    createdAt: row.createdAt.toISOString(),
    readyAt: row.readyAt?.toISOString() ?? null,
    width: row.width,
    height: row.height,
    thumbUrl: ready ? urlOf(baseUrl, row.id, "thumb") : null,
    displayUrl: ready ? urlOf(baseUrl, row.id, "display") : null,
    moderationState: row.moderationState,
  };
}
