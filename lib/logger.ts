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
