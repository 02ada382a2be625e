import type { Species } from "../../lib/animals.js";
import { round, type LatLon } from "../../lib/geo.js";
import type { FoundReportPartner } from "../../lib/partners.js";
import type { ReportKind } from "../../lib/report-lifecycle.js";
import type { ShareReportRow } from "./store.js";

/** The shelter holding a found animal, as the page shows it: its name and public contact. */
export type AtPartner = Omit<FoundReportPartner, "kind">;

/** How the page treats the report: only an open one takes sightings and messages. */
export type ShareState = "open" | "reunited" | "closed" | "expired";

/** What a share page, its card and its flyer show. Every field is public; the point is the ~1 km cell's centre. */
export interface ShareView {
  kind: ReportKind;
  id: string;
  state: ShareState;
  /** Lost reports only, and only when the reporter gave one. */
  name: string | null;
  species: Species;
  breed: string | null;
  colors: string[];
  sex: "male" | "female" | "unknown" | null;
  marks: string | null;
  description: string | null;
  /** Last seen (lost) or found (found). */
  happenedAt: Date;
  /** The coarse point, to 3 decimals (~100 m, inside its 1 km cell). */
  place: LatLon;
  /** Same-origin display-variant paths of the ready photos, first shown first. */
  photoPaths: string[];
  /**
   * The shelter partner that has the found animal in custody; null when none.
   * The share store fills null: the partner module supplies it where it knows one.
   */
  atPartner: AtPartner | null;
  /** The end of that partner's stray hold: "At <partner> until <date>". */
  heldUntil: Date | null;
}

export function stateOf(row: Pick<ShareReportRow, "status" | "closedReason">): ShareState {
  if (row.status === "open") return "open";
  if (row.status === "reunited") return "reunited";
  return row.closedReason === "expired" ? "expired" : "closed";
}

const SEXES = new Set(["male", "female", "unknown"]);

export function shareViewOf(kind: ReportKind, row: ShareReportRow): ShareView {
  return {
    kind,
    id: row.id,
    state: stateOf(row),
    name: kind === "lost" ? row.animalName : null,
    species: row.species,
    breed: row.breed,
    colors: row.colors,
    sex: row.sex !== null && SEXES.has(row.sex) ? (row.sex as ShareView["sex"]) : null,
    marks: row.distinguishingMarks,
    description: row.description,
    happenedAt: row.happenedAt,
    place: { lat: round(row.coarseLat, 3), lon: round(row.coarseLon, 3) },
    photoPaths: row.photos.map((photo) => `/v1/photos/${photo.id}/display`),
    atPartner: row.partner,
    heldUntil: row.partner ? row.heldUntil : null,
  };
}

/** "48.857, 2.352": how the coarse point is written on the page, the card and the flyer. */
export const placeText = (place: LatLon) => `${place.lat.toFixed(3)}, ${place.lon.toFixed(3)}`;

/** A plain link to the area on openstreetmap.org: a link, never an embedded map from another origin. */
export const osmUrl = (place: LatLon) =>
  `https://www.openstreetmap.org/?mlat=${place.lat.toFixed(3)}&mlon=${place.lon.toFixed(3)}#map=15/${place.lat.toFixed(3)}/${place.lon.toFixed(3)}`;
