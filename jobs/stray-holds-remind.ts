import type { Task } from "graphile-worker";

/** A cron task: nothing queues it, so its name is here, with its crontab line. */
export const STRAY_HOLDS_REMIND_TASK = "stray_holds__remind";

/**
 * Every five minutes (graphile-worker cron in the notifier's worker, one run
 * per tick however many notifiers run). A missed tick needs no backfill: the
 * next run takes every reminder still due, and a suggestion is reminded at
 * most once (notifier/holds/reminder.ts runHoldReminders).
 */
export const STRAY_HOLDS_REMIND_CRONTAB = `*/5 * * * * ${STRAY_HOLDS_REMIND_TASK}`;

export function strayHoldsRemindTask(remind: () => Promise<number>): Task {
  return async (_payload, helpers) => {
    const reminded = await remind();
    if (reminded > 0) helpers.logger.info(`stray holds: ${reminded} owners reminded that a hold ends within a day`);
  };
}
