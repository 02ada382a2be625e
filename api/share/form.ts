import { coarsen, type LatLon } from "../../lib/geo.js";
import { CreateSightingBody, type CreateSightingBody as SightingBody } from "../safety/sightings/schemas.js";
import { format, type Messages } from "../tag/i18n/index.js";
import { pointOf, stringField } from "../tag/form.js";
import type { SightingFormState } from "./render.js";

/** The API's own limit on a sighting's note (api/safety/sightings/schemas.ts). */
export const NOTE_MAX = 1000;

/**
 * Reads the "I have seen this animal" form into the API's own sighting body,
 * checked by the API's schema (CreateSightingBody), so the page takes what
 * POST /v1/safety/sightings takes: the sighting, or the form again with its
 * errors in the page's language. The shared point is coarsened here; with
 * none, the sighting is placed at the report's own coarse point (`fallback`),
 * which says "seen in this area" and nothing more.
 */
export function readSightingForm(
  body: unknown,
  m: Messages,
  lostReportId: string,
  fallback: LatLon,
  now: Date,
): { sighting: SightingBody } | { form: SightingFormState } {
  const values = { note: stringField(body, "note"), lat: stringField(body, "lat"), lon: stringField(body, "lon") };
  const note = values.note.trim();
  const shared = pointOf(values.lat.trim(), values.lon.trim());
  const coarsePoint = shared ? coarsen(shared) : null;
  const errors: SightingFormState["errors"] = {};
  // NUL cannot be stored in Postgres text: refused, never silently stripped.
  if (note.includes("\u0000")) errors.note = m.share.errors.noteInvalid;
  else {
    const parsed = CreateSightingBody.safeParse({
      lostReportId,
      location: coarsePoint ?? fallback,
      seenAt: now.toISOString(),
      ...(note === "" ? {} : { note }),
    });
    if (parsed.success) return { sighting: parsed.data };
    const issue = parsed.error.issues[0]!;
    errors.note =
      issue.path[0] === "note" && issue.code === "too_big"
        ? format(m.share.errors.noteTooLong, { count: note.length, max: NOTE_MAX })
        : format(m.share.errors.failed, { detail: `${issue.path.join(".")}: ${issue.message}` });
  }
  // The page shown again carries the cell centre, never the precise point it was sent.
  const kept = coarsePoint ? { lat: String(coarsePoint.lat), lon: String(coarsePoint.lon) } : { lat: "", lon: "" };
  return { form: { values: { ...values, ...kept }, errors } };
}
