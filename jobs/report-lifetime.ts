import type { Task } from "graphile-worker";

/**
 * Report lifetime every five minutes (graphile-worker cron: one job per
 * tick however many relays run). The relay runs the work:
 * relay/report-lifetime.ts, with the lifecycle's batch statements
 * (lib/report-lifecycle.ts), and is safe to run twice at once.
 */
export const REPORT_LIFETIME_TASK = "report__lifetime";
export const REPORT_LIFETIME_CRONTAB = `*/5 * * * * ${REPORT_LIFETIME_TASK}`;

export function reportLifetimeTask(run: () => Promise<{ dated: number; expired: number; warned: number }>): Task {
  return async (_payload, helpers) => {
    const result = await run();
    helpers.logger.info(
      `report lifetime: ${result.expired} reports expired, ${result.warned} reminded, ${result.dated} given an expiry`,
    );
  };
}
