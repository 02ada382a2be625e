import type { Task } from "graphile-worker";

/** A cron task: nothing queues it, so its name is here, with its crontab line. */
export const ALERTS_DIGEST_TASK = "alerts__digest";

/**
 * Every morning at 07:00 UTC (graphile-worker cron in the notifier's worker,
 * one run per tick however many notifiers run; backfilled when they were all
 * down then). notifier/alerts/digest.ts runDigest does the work.
 */
export const ALERTS_DIGEST_CRONTAB = `0 7 * * * ${ALERTS_DIGEST_TASK} ?fill=1d`;

export function alertsDigestTask(digest: () => Promise<{ subscriberDays: number; notifications: number }>): Task {
  return async (_payload, helpers) => {
    const result = await digest();
    helpers.logger.info(`alerts: digest for ${result.subscriberDays} subscriber-days, ${result.notifications} notifications`);
  };
}
