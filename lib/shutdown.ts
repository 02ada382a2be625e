import type { Logger } from "./logger.js";

export interface ShutdownStage {
  name: string;
  run: () => Promise<unknown> | unknown;
}

/**
 * Runs the stages in order on SIGTERM or SIGINT (stop intake, finish
 * in-flight work, close the bus, end the pool), then exits 0. A stage that
 * throws is logged and the next one still runs. A second signal, or the
 * deadline, forces exit 1.
 */
export function installShutdown(logger: Logger, stages: ShutdownStage[], deadlineMs = 9_000): () => Promise<void> {
  let shuttingDown: Promise<void> | null = null;

  const shutdown = async (): Promise<void> => {
    for (const stage of stages) {
      try {
        await stage.run();
        logger.info({ stage: stage.name }, "shutdown: stage done");
      } catch (err) {
        logger.error({ stage: stage.name, err: { message: (err as Error).message } }, "shutdown: stage failed");
      }
    }
  };

  const onSignal = (signal: NodeJS.Signals) => {
    if (shuttingDown) {
      logger.warn({ signal }, "shutdown: second signal, exiting now");
      process.exit(1);
    }
    logger.info({ signal }, "shutdown: started");
    const timer = setTimeout(() => {
      logger.error("shutdown: deadline passed, exiting");
      process.exit(1);
    }, deadlineMs);
    timer.unref();
    shuttingDown = shutdown().then(() => {
      logger.info("shutdown: complete");
      logger.flush?.();
      process.exit(0);
    });
  };

  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  return () => shuttingDown ?? shutdown();
}
