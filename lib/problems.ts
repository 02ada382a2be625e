/**
 * Problem slugs (RFC 7807 `type` suffixes), one registry. Every error the
 * API returns is a ProblemError built by one of the factories below and
 * rendered once by api/plugins/errors.ts.
 */
export const ProblemSlug = {
  ValidationFailed: "validation-failed",
  Unauthenticated: "unauthenticated",
  Forbidden: "forbidden",
  AccountSuspended: "account-suspended",
  NotFound: "not-found",
  Gone: "gone",
  Conflict: "conflict",
  AlreadyFlagged: "already-flagged",
  SelfSuspension: "self-suspension",
  RequeueLimitReached: "requeue-limit-reached",
  ReplayNotEligible: "replay-not-eligible",
  ModerationClaimed: "moderation-claimed",
  PayloadTooLarge: "payload-too-large",
  RequestTimeout: "request-timeout",
  RequestHeaderFieldsTooLarge: "request-header-fields-too-large",
  UnsupportedMediaType: "unsupported-media-type",
  RateLimited: "rate-limited",
  NotReady: "not-ready",
  Unavailable: "service-unavailable",
  Internal: "internal",
} as const;

export type ProblemSlug = (typeof ProblemSlug)[keyof typeof ProblemSlug];

const titles: Record<ProblemSlug, string> = {
  "validation-failed": "Validation failed",
  unauthenticated: "Unauthenticated",
  forbidden: "Forbidden",
  "account-suspended": "Account suspended",
  "not-found": "Not found",
  gone: "Gone",
  conflict: "Conflict",
  "already-flagged": "Already flagged",
  "self-suspension": "Self-suspension",
  "requeue-limit-reached": "Requeue limit reached",
  "replay-not-eligible": "Replay not eligible",
  "moderation-claimed": "Moderation item claimed",
  "payload-too-large": "Payload too large",
  "request-timeout": "Request timeout",
  "request-header-fields-too-large": "Request header fields too large",
  "unsupported-media-type": "Unsupported media type",
  "rate-limited": "Too many requests",
  "not-ready": "Not ready",
  "service-unavailable": "Service unavailable",
  internal: "Internal error",
};

export interface ValidationIssue {
  path: string;
  message: string;
}

export class ProblemError extends Error {
  constructor(
    readonly slug: ProblemSlug,
    readonly status: number,
    readonly detail: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = "ProblemError";
  }

  get title(): string {
    return titles[this.slug];
  }
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  [key: string]: unknown;
}

export function problemBody(baseUrl: string, problem: ProblemError): ProblemBody {
  return {
    type: `${baseUrl.replace(/\/$/, "")}/${problem.slug}`,
    title: problem.title,
    status: problem.status,
    detail: problem.detail,
    ...problem.extra,
  };
}

export const problems = {
  validation: (detail: string, errors: ValidationIssue[] = []) =>
    new ProblemError(ProblemSlug.ValidationFailed, 400, detail, { errors }),
  unauthenticated: (detail = "a valid credential is required") =>
    new ProblemError(ProblemSlug.Unauthenticated, 401, detail, {}, { "www-authenticate": "Bearer" }),
  forbidden: (detail = "you are not allowed to do this") => new ProblemError(ProblemSlug.Forbidden, 403, detail),
  accountSuspended: () => new ProblemError(ProblemSlug.AccountSuspended, 403, "this account is suspended"),
  notFound: (what = "resource") => new ProblemError(ProblemSlug.NotFound, 404, `${what} not found`),
  conflict: (detail: string) => new ProblemError(ProblemSlug.Conflict, 409, detail),
  /** Something that existed and never will again in this form (a resolved report's flyer). */
  gone: (detail: string) => new ProblemError(ProblemSlug.Gone, 410, detail),
  alreadyFlagged: () =>
    new ProblemError(ProblemSlug.AlreadyFlagged, 409, "you have already flagged this report"),
  selfSuspension: () =>
    new ProblemError(ProblemSlug.SelfSuspension, 409, "an admin cannot suspend their own account"),
  requeueLimitReached: (limit: number) =>
    new ProblemError(ProblemSlug.RequeueLimitReached, 409, `this event was already requeued ${limit} times`),
  replayNotEligible: (reason: "status" | "permanent" | "superseded", detail: string) =>
    new ProblemError(ProblemSlug.ReplayNotEligible, 409, detail, { reason }),
  moderationClaimed: () =>
    new ProblemError(ProblemSlug.ModerationClaimed, 409, "this moderation item is claimed by another admin"),
  /** An upload that is an image of an accepted type but not one the service takes (too many pixels, truncated). */
  unprocessableImage: (detail: string) =>
    new ProblemError(ProblemSlug.ValidationFailed, 422, detail, { errors: [{ path: "photo", message: detail }] }),
  payloadTooLarge: (limit: number) =>
    new ProblemError(ProblemSlug.PayloadTooLarge, 413, `request body is larger than ${limit} bytes`),
  requestTimeout: (detail = "the request was not received in time") => new ProblemError(ProblemSlug.RequestTimeout, 408, detail),
  /** Answered by Node's HTTP parser before any route runs (api/plugins/errors.ts clientErrorHandler). */
  requestHeaderFieldsTooLarge: () =>
    new ProblemError(ProblemSlug.RequestHeaderFieldsTooLarge, 431, "the request's headers are larger than the server accepts"),
  unsupportedMediaType: (detail = "request body must be application/json") =>
    new ProblemError(ProblemSlug.UnsupportedMediaType, 415, detail),
  rateLimited: (retryAfterSeconds: number, detail = "too many requests") =>
    new ProblemError(ProblemSlug.RateLimited, 429, detail, {}, { "retry-after": String(Math.max(1, Math.ceil(retryAfterSeconds))) }),
  notReady: (detail = "the database is not reachable") => new ProblemError(ProblemSlug.NotReady, 503, detail),
  unavailable: (detail = "a dependency is unavailable; retry shortly", retryAfterSeconds = 2) =>
    new ProblemError(ProblemSlug.Unavailable, 503, detail, {}, { "retry-after": String(retryAfterSeconds) }),
  internal: () => new ProblemError(ProblemSlug.Internal, 500, "an unexpected error occurred"),
};

