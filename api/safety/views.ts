import type { z } from "zod";
import { COARSE_PRECISION_METERS, round } from "../../lib/geo.js";
import type { Alert, FoundReportPublic, LostReportPrivate, LostReportPublic, Sighting } from "./schemas.js";
import type { AlertRow, FoundReportRow, LostReportRow, SightingRow } from "./store.js";

/** Row → response shapes. Nulls become absent optional fields; only coarse points reach public views. */

const opt = <T>(value: T | null): T | undefined => value ?? undefined;

const coarse = (row: { coarseLat: number; coarseLon: number }) => ({
  lat: round(row.coarseLat, 6),
  lon: round(row.coarseLon, 6),
  precisionMeters: COARSE_PRECISION_METERS,
});

const publicAnimal = (row: FoundReportRow | LostReportRow) => ({
  species: row.species,
  breed: opt(row.breed),
  colors: row.colors,
  sex: opt(row.sex),
  distinguishingMarks: opt(row.distinguishingMarks),
});

/** The moderation state is shown only to those allowed to see moderated content (owner, admins). */
const marked = (state: LostReportRow["moderationState"]) => (state ? { moderationState: state } : {});

export function lostReportPublic(row: LostReportRow): z.input<typeof LostReportPublic> {
  return {
    id: row.id,
    status: row.status,
    animal: { name: opt(row.animalName), ...publicAnimal(row) },
    lastSeenAt: row.lastSeenAt.toISOString(),
    location: coarse(row),
    description: opt(row.description),
    createdAt: row.createdAt.toISOString(),
    resolvedAt: row.resolvedAt?.toISOString() ?? null,
    ...marked(row.moderationState),
  };
}

export function foundReportPublic(row: FoundReportRow): z.input<typeof FoundReportPublic> {
  return {
    id: row.id,
    status: row.status,
    animal: publicAnimal(row),
    foundAt: row.foundAt.toISOString(),
    location: coarse(row),
    description: opt(row.description),
    createdAt: row.createdAt.toISOString(),
    resolvedAt: row.resolvedAt?.toISOString() ?? null,
    ...marked(row.moderationState),
  };
}

export function lostReportPrivate(row: LostReportRow, viewerIsAdmin: boolean): z.input<typeof LostReportPrivate> {
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
    moderationState: row.moderationState,
  };
}

/** Distances are to the coarse point and rounded to 0.1 km. */
export function alert(row: AlertRow): z.input<typeof Alert> {
  return {
    id: row.id,
    kind: row.kind,
    species: row.species,
    animalName: opt(row.animalName),
    location: coarse(row),
    distanceKm: round(row.distanceM / 1000, 1),
    createdAt: row.createdAt.toISOString(),
  };
}

export function sighting(row: SightingRow): z.input<typeof Sighting> {
  return {
    id: row.id,
    lostReportId: row.lostReportId,
    location: coarse(row),
    seenAt: row.seenAt.toISOString(),
    note: opt(row.note),
    createdAt: row.createdAt.toISOString(),
    ...marked(row.moderationState),
  };
}
