/**
 * Email confirmation links. The API records the request and checks a
 * followed link (api/notifications); the notifier's delivery makes the token
 * when it sends the email and stores only its hash (jobs/delivery/delivery.ts), so
 * the raw token lives in that process's memory and in the email, nowhere else.
 */

/** How long a link works once its email went out. */
export const CONFIRMATION_TTL_HOURS = 24;

/** Confirmation emails an actor may cause in any hour. */
export const CONFIRMATIONS_PER_HOUR = 3;

export const CONFIRMATION_PATH = "/v1/me/email/confirm";

/** The link's token is a lib/secret-token.ts token: newToken, stored as hashToken, checked with TOKEN_PATTERN. */

/** The link in the email, on the API's public base URL. */
export const confirmationLink = (publicBaseUrl: string, token: string): string =>
  `${publicBaseUrl.replace(/\/$/, "")}${CONFIRMATION_PATH}?token=${token}`;
