import type { PartnerDateFormat } from "../../lib/partners.js";

/**
 * Dates as shelter software writes them. ASM3's publisher sends ISO
 * (asm3.i18n.format_date's default is %Y-%m-%d, and an unknown date is "");
 * other software may write a locale's form, such as a US shelter's
 * 11/20/2025. The partner's dateFormat (set by the admin) says which order a
 * slashed or dotted date is in; ISO (2025-11-20, or a full RFC 3339 time) is
 * always accepted. A date that is not a real calendar day is null, which the
 * route answers 400.
 */

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i;
const LOCAL: Record<Exclude<PartnerDateFormat, "YYYY-MM-DD">, { pattern: RegExp; order: ["d" | "m", "d" | "m"] }> = {
  "MM/DD/YYYY": { pattern: /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/, order: ["m", "d"] },
  "DD/MM/YYYY": { pattern: /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/, order: ["d", "m"] },
  "DD.MM.YYYY": { pattern: /^(\d{1,2})\.(\d{1,2})\.(\d{4})$/, order: ["d", "m"] },
};

function calendarDay(year: number, month: number, day: number): Date | null {
  const date = new Date(Date.UTC(year, month - 1, day));
  const real = date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
  return real && year >= 1900 ? date : null;
}

/** The instant a partner's date names (a day is its UTC midnight), or null when it is not a date in an accepted form. */
export function parsePartnerDate(value: string, format: PartnerDateFormat): Date | null {
  const text = value.trim();
  const iso = ISO_DATE.exec(text);
  if (iso) return calendarDay(Number(iso[1]), Number(iso[2]), Number(iso[3]));
  if (ISO_TIME.test(text)) {
    const time = new Date(text);
    return Number.isNaN(time.getTime()) ? null : time;
  }
  if (format === "YYYY-MM-DD") return null;
  const { pattern, order } = LOCAL[format];
  const local = pattern.exec(text);
  if (!local) return null;
  const first = Number(local[1]);
  const second = Number(local[2]);
  const [month, day] = order[0] === "m" ? [first, second] : [second, first];
  return calendarDay(Number(local[3]), month, day);
}

/** How the 400 names the forms accepted for this partner. */
export const acceptedForms = (format: PartnerDateFormat): string =>
  format === "YYYY-MM-DD" ? "YYYY-MM-DD (or an RFC 3339 time)" : `${format} or YYYY-MM-DD (or an RFC 3339 time)`;
