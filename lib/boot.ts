import os from "node:os";
import { ConfigError, type Env } from "./config.js";
import { createLogger, exitFatal, type Logger } from "./logger.js";

interface LoggingConfig {
  LOG_LEVEL: string;
  LOG_PRETTY: boolean;
}

/**
 * The first step of every main.ts: parse this process's config, or log
 * `fatal` naming the setting and exit 1; then the process's logger.
 */
export function loadConfigOrExit<T extends LoggingConfig>(name: string, load: (env: Env) => T): { config: T; logger: Logger } {
  let config: T;
  try {
    config = load(process.env);
  } catch (err) {
    const bootLogger = createLogger({ name, level: "info", pretty: false });
    exitFatal(bootLogger, "fatal", err, { setting: err instanceof ConfigError ? err.setting : undefined });
  }
  return { config, logger: createLogger({ name, level: config.LOG_LEVEL, pretty: config.LOG_PRETTY }) };
}

/**
 * A start-up step the process cannot run without (the bus, the database):
 * on failure, log `fatal` as "<what>: <error message>" and exit 1, before
 * any port opens.
 */
export async function orExit<T>(logger: Logger, what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    exitFatal(logger, `${what}: ${(err as Error).message}`, err);
  }
}

/**
 * Lowers this process's CPU priority to `nice` (0 leaves it); a refusal is logged, never fatal.
 * On Linux it is the main thread's, where the JavaScript runs: threads started earlier (V8's
 * platform workers) keep theirs.
 */
export function lowerPriority(logger: Logger, nice: number): void {
  if (nice === 0) return;
  try {
    os.setPriority(nice);
    logger.info({ nice }, "process priority lowered");
  } catch (err) {
    logger.warn({ nice, err: { message: (err as Error).message } }, "process priority could not be lowered");
  }
}
