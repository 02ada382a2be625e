import { findPhoneNumbersInText, isSupportedCountry, parsePhoneNumberFromString, type CountryCode } from "libphonenumber-js/max";

/**
 * Phone numbers, read with libphonenumber's full metadata (libphonenumber-js/max),
 * so a number is checked against its country's real ranges, not its length
 * alone. Numbers are kept and compared in E.164 (`+4917612345678`), the form
 * the provider sends and expects.
 */

/** An ISO 3166 alpha-2 region libphonenumber knows (SMS_DEFAULT_REGION). */
export type Region = CountryCode;

/** A number in any format libphonenumber reads, in E.164; null when it is no valid number. */
export function toE164(input: string, defaultRegion?: Region): string | null {
  const parsed = parsePhoneNumberFromString(input.trim(), defaultRegion);
  return parsed?.isValid() ? parsed.number : null;
}

/**
 * The first valid number in free text (a finder's fromContact: "Anna, 0176 1234 5678"),
 * in E.164; null when it holds none, so the finder gets no text.
 */
export function phoneInText(text: string, defaultRegion?: Region): string | null {
  for (const found of findPhoneNumbersInText(text, defaultRegion)) {
    if (found.number.isValid()) return found.number.number;
  }
  return null;
}

/** The last two digits: what a person is shown of their own number, so no response carries the number. */
export const phoneEnding = (e164: string): string => e164.slice(-2);

/** True for a region libphonenumber has metadata for (SMS_DEFAULT_REGION). */
export const isRegion = (value: string): value is Region => isSupportedCountry(value);
