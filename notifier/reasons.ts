/**
 * The failures console's reasonCategory, derived from last_error. Permanent
 * means a resend cannot help (no deliverer, no address, the provider refused
 * the message); transient means it may succeed later (timeouts, connection
 * errors, SMTP 4xx). An error we do not recognise is treated as transient, so
 * an operator may still replay it.
 */
export type ReasonCategory = "transient" | "permanent";

export const NO_DELIVERER = "no deliverer configured for channel";
export const NO_ADDRESS = "no email address configured for recipient";
export const PROVIDER_REJECTED = "provider rejected";

const permanentPatterns = [
  new RegExp(NO_DELIVERER, "i"),
  new RegExp(NO_ADDRESS, "i"),
  new RegExp(PROVIDER_REJECTED, "i"),
  /\bsmtp 5\d\d\b/i,
];

export function reasonCategory(lastError: string | null): ReasonCategory {
  if (lastError && permanentPatterns.some((p) => p.test(lastError))) return "permanent";
  return "transient";
}
