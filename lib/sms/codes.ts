import { createHash, randomInt } from "node:crypto";

/**
 * Phone verification codes (contract part 4, "SMS"). The API records the
 * request and checks a code (api/phone); the notifier makes the code when it
 * sends the text and stores only its hash (notifier/deliverers/sms.ts), so the
 * code lives in that process's memory and in the text, nowhere else.
 */

/** How long a code works once its text went out. */
export const PHONE_CODE_TTL_MINUTES = 10;
/** Wrong codes a verification allows; then a new code must be asked for. */
export const PHONE_CODE_TRIES = 5;
/** Code texts an actor may cause in any hour. */
export const PHONE_CODES_PER_HOUR = 3;

export const PHONE_CODE_PATTERN = /^\d{6}$/;

export const newPhoneCode = (): string => String(randomInt(0, 1_000_000)).padStart(6, "0");

/**
 * The stored hash: salted with the verification's id, so equal codes of two
 * verifications differ; a code has only a million values, so the tries and the
 * ten minutes are what protect it, not the hash.
 */
export const hashPhoneCode = (verificationId: string, code: string): Buffer =>
  createHash("sha256").update(`${verificationId}:${code}`, "utf8").digest();
