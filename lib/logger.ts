import { pino, type Logger } from "pino";

export type { Logger };

export interface LoggerOptions {
  name: string;
  level: string;
  pretty: boolean;
}

const redact = [
  "req.headers.authorization",
  "req.headers.cookie",
  "*.fromContact",
  "*.verificationDetail",
  "*.token",
];

/** What a masked secret is logged as: pino's own censor, so the two read alike. */
export const REDACTED = "[Redacted]";

/** The token segment of the tag page (/t/{token}, not its /t/assets/) and of the emergency link (/emergency/{token}). */
const SECRET_PATH = /^(\/+(?:t|emergency)\/+)(?!assets(?:\/|$))[^/?#]+/;
/** A query parameter whose name holds "token": the alert unsubscribe link, the email confirmation link. */
const SECRET_QUERY = /([?&][^=&#]*token[^=&#]*=)[^&#]*/gi;

/**
 * A request URL as it may be logged. The tokens in it are bearer secrets: the
 * tag and emergency tokens open an animal's page and message its owner, and
 * whoever reads a log must not be able to follow them.
 */
export function maskUrl(url: string): string {
  const at = url.indexOf("?");
  const path = at < 0 ? url : url.slice(0, at);
  const query = at < 0 ? "" : url.slice(at);
  return path.replace(SECRET_PATH, `$1${REDACTED}`) + query.replace(SECRET_QUERY, `$1${REDACTED}`);
}

interface LoggedRequest {
  method: string;
  url: string;
  headers?: Record<string, string | string[] | undefined>;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/**
 * Fastify's request serializer (the `req` of "incoming request" and of error
 * lines) with the same fields, the URL masked. Fastify takes a logger's own
 * `req` serializer over its default.
 */
export function requestSerializer(req: LoggedRequest) {
  return {
    method: req.method,
    url: maskUrl(req.url),
    version: req.headers?.["accept-version"],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/** The logger an HTTP server is given: the same lines, with request URLs masked. */
export const withMaskedRequests = (logger: Logger): Logger => logger.child({}, { serializers: { req: requestSerializer } });

export function createLogger({ name, level, pretty }: LoggerOptions): Logger {
  if (pretty) {
    return pino({ name, level, redact, transport: { target: "pino-pretty", options: { translateTime: "HH:MM:ss.l" } } });
  }
  // Synchronous writes keep lines in the order they were logged and lose none
  // at exit; the asynchronous default can reorder the last lines of a shutdown.
  return pino({ name, level, redact }, pino.destination({ dest: 1, sync: true }));
}

/**
 * Logs a fatal startup failure and exits 1. Configuration failures use the
 * message `fatal` and name the setting; bus connection failures use the
 * spec's texts (`event publisher: ...`, `relay: connect: ...`).
 */
export function exitFatal(logger: Logger, message: string, err: unknown, fields: Record<string, unknown> = {}): never {
  const detail = err instanceof Error ? err.message : String(err);
  logger.fatal({ ...fields, err: { message: detail } }, message);
  logger.flush?.();
  process.exit(1);
}
