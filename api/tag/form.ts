import { coarsen, type LatLon } from "../../lib/geo.js";
import { format, type Messages } from "./i18n/index.js";
import type { FormField, FormState } from "./render.js";

/** The API's contact message limits (api/safety/contact-messages/schemas.ts): the tag page's form takes the same. */
export const MESSAGE_MAX = 2000;
export const CONTACT_MAX = 200;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** application/x-www-form-urlencoded → fields; a repeated field keeps its first value. */
export function parseFormBody(body: string): Record<string, string> {
  const fields: Record<string, string> = Object.create(null);
  for (const [key, value] of new URLSearchParams(body)) if (!(key in fields)) fields[key] = value;
  return fields;
}

export interface MessageSubmission {
  message: string;
  fromContact: string;
  scanId: string | null;
  /** The shared location's grid-cell centre: the precise point goes no further than this function. */
  coarsePoint: LatLon | null;
}

/** A posted form's field as a string; a missing or non-string field is "". */
export const stringField = (body: unknown, key: string): string => {
  const value = body && typeof body === "object" ? (body as Record<string, unknown>)[key] : undefined;
  return typeof value === "string" ? value : "";
};

/** A latitude/longitude pair the browser gave; anything else is no location (the finder cannot fix hidden fields). */
export function pointOf(lat: string, lon: string): LatLon | null {
  if (!/^-?\d{1,3}(\.\d{1,20})?$/.test(lat) || !/^-?\d{1,3}(\.\d{1,20})?$/.test(lon)) return null;
  const point = { lat: Number(lat), lon: Number(lon) };
  return Math.abs(point.lat) <= 90 && Math.abs(point.lon) <= 180 ? point : null;
}

/**
 * Reads the posted form: the submission when it is valid, else the form
 * again with every error in the page's language (and what was typed kept).
 */
export function readMessageForm(body: unknown, m: Messages): { submission: MessageSubmission } | { form: FormState } {
  const values = {
    message: stringField(body, "message"),
    fromContact: stringField(body, "fromContact"),
    scan: stringField(body, "scan"),
    lat: stringField(body, "lat"),
    lon: stringField(body, "lon"),
  };
  const message = values.message.trim();
  const fromContact = values.fromContact.trim();
  const errors: Partial<Record<FormField, string>> = {};
  // NUL cannot be stored in Postgres text: refused, never silently stripped.
  if (message === "") errors.message = m.errors.messageRequired;
  else if (message.length > MESSAGE_MAX) errors.message = format(m.errors.messageTooLong, { count: message.length, max: MESSAGE_MAX });
  else if (message.includes("\u0000")) errors.message = m.errors.messageInvalid;
  if (fromContact === "") errors.fromContact = m.errors.contactRequired;
  else if (fromContact.length > CONTACT_MAX) errors.fromContact = format(m.errors.contactTooLong, { max: CONTACT_MAX });
  else if (fromContact.includes("\u0000")) errors.fromContact = m.errors.contactInvalid;
  const point = pointOf(values.lat.trim(), values.lon.trim());
  const coarsePoint = point ? coarsen(point) : null;
  if (Object.keys(errors).length > 0) {
    // The page shown again carries the cell centre, never the precise point it was sent.
    const shared = coarsePoint ? { lat: String(coarsePoint.lat), lon: String(coarsePoint.lon) } : { lat: "", lon: "" };
    return { form: { values: { ...values, ...shared }, errors } };
  }
  return { submission: { message, fromContact, scanId: UUID.test(values.scan) ? values.scan.toLowerCase() : null, coarsePoint } };
}
