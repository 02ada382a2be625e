import { COARSE_PRECISION_METERS, round } from "../../lib/geo.js";
import type { ModerationState } from "./schemas.js";

/** Row → response helpers shared by the safety views. Only coarse points reach public views. */

/** Nulls become absent optional fields. */
export const opt = <T>(value: T | null): T | undefined => value ?? undefined;

export const coarse = (row: { coarseLat: number; coarseLon: number }) => ({
  lat: round(row.coarseLat, 6),
  lon: round(row.coarseLon, 6),
  precisionMeters: COARSE_PRECISION_METERS,
});

/** The moderation state is shown only to those allowed to see moderated content (owner, admins). */
export const marked = (state: ModerationState | null) => (state ? { moderationState: state } : {});
