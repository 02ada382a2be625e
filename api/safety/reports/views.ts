import type { z } from "zod";
import type { PhotoView } from "../../photos/schemas.js";
import { coarse, marked, opt } from "../views.js";
import { publicShareLinks, shareLinks } from "./links.js";
import type { FoundReportPrivate, FoundReportPublic, LostReportPrivate, LostReportPublic } from "./schemas.js";
import type { FoundReportRow, LostReportRow } from "./store.js";

/** Report rows → responses: the public views show the coarse point only; the private view is the reporter's and admins'. */

const publicAnimal = (row: FoundReportRow | LostReportRow) => ({
  species: row.species,
  breed: opt(row.breed),
  colors: row.colors,
  sex: opt(row.sex),
  distinguishingMarks: opt(row.distinguishingMarks),
});

const held = (row: FoundReportRow) => (row.heldUntil ? { heldUntil: row.heldUntil.toISOString() } : {});

const lifetime = (row: FoundReportRow | LostReportRow) => ({
  expiresAt: row.expiresAt?.toISOString() ?? null,
  closedReason: row.closedReason,
});

/** `publicBase` is PUBLIC_BASE_URL: the share links are absolute. */
export function lostReportPublic(row: LostReportRow, photos: PhotoView[], publicBase: string): z.input<typeof LostReportPublic> {
  return {
    id: row.id,
    status: row.status,
    animal: { name: opt(row.animalName), ...publicAnimal(row) },
    lastSeenAt: row.lastSeenAt.toISOString(),
    location: coarse(row),
    description: opt(row.description),
    createdAt: row.createdAt.toISOString(),
    resolvedAt: row.resolvedAt?.toISOString() ?? null,
    ...lifetime(row),
    ...marked(row.moderationState),
    photos,
    ...publicShareLinks(publicBase, "lost", row),
  };
}

export function foundReportPublic(row: FoundReportRow, photos: PhotoView[], publicBase: string): z.input<typeof FoundReportPublic> {
  return {
    id: row.id,
    status: row.status,
    animal: publicAnimal(row),
    foundAt: row.foundAt.toISOString(),
    location: coarse(row),
    description: opt(row.description),
    createdAt: row.createdAt.toISOString(),
    resolvedAt: row.resolvedAt?.toISOString() ?? null,
    ...lifetime(row),
    ...marked(row.moderationState),
    photos,
    ...publicShareLinks(publicBase, "found", row),
    // In a shelter partner's custody: its public contact (public by design, contract part 3), and until when it holds the animal.
    ...(row.partner ? { partner: row.partner } : {}),
    ...held(row),
  };
}

export function lostReportPrivate(
  row: LostReportRow,
  viewerIsAdmin: boolean,
  photos: PhotoView[],
  publicBase: string,
  nearbyShelters: z.input<typeof LostReportPrivate>["nearbyShelters"],
): z.input<typeof LostReportPrivate> {
  return {
    id: row.id,
    reporterId: row.reporterId,
    status: row.status,
    animal: { name: opt(row.animalName), ...publicAnimal(row), microchipId: opt(row.microchipId) },
    lastSeenAt: row.lastSeenAt.toISOString(),
    location: { lat: row.lat, lon: row.lon },
    coarseLocation: coarse(row),
    description: opt(row.description),
    verificationDetail: opt(row.verificationDetail),
    flag:
      row.flagged && row.flaggedReason !== null && row.flaggedAt !== null
        ? {
            reason: row.flaggedReason,
            flaggedAt: row.flaggedAt.toISOString(),
            flaggedBy: viewerIsAdmin ? opt(row.flaggedBy) : undefined,
          }
        : null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    resolvedAt: row.resolvedAt?.toISOString() ?? null,
    ...lifetime(row),
    animalId: row.animalId,
    moderationState: row.moderationState,
    photos,
    ...shareLinks(publicBase, "lost", row),
    nearbyShelters,
  };
}

/** The reporter's own view of a found report (what PATCH returns): the precise point and every field. */
export function foundReportPrivate(row: FoundReportRow, photos: PhotoView[], publicBase: string): z.input<typeof FoundReportPrivate> {
  return {
    id: row.id,
    reporterId: row.reporterId,
    status: row.status,
    animal: { ...publicAnimal(row), microchipId: opt(row.microchipId) },
    foundAt: row.foundAt.toISOString(),
    location: { lat: row.lat, lon: row.lon },
    coarseLocation: coarse(row),
    description: opt(row.description),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    resolvedAt: row.resolvedAt?.toISOString() ?? null,
    ...lifetime(row),
    moderationState: row.moderationState,
    photos,
    ...shareLinks(publicBase, "found", row),
    ...held(row),
  };
}
