import type { Task } from "graphile-worker";

/**
 * The scheduled family: graphile-worker cron tasks, which nothing queues, so
 * each one's name is here beside its crontab line. Cron runs once per tick
 * however many processes run the family.
 */

/** A cron task: nothing queues it, so its name is here, with its crontab line. */
export const ALERTS_DIGEST_TASK = "alerts__digest";

/**
 * Every morning at 07:00 UTC (graphile-worker cron in the notifier's worker,
 * one run per tick however many notifiers run; backfilled when they were all
 * down then). jobs/scheduled/alerts-digest.ts runDigest does the work.
 */
export const ALERTS_DIGEST_CRONTAB = `0 7 * * * ${ALERTS_DIGEST_TASK} ?fill=1d`;

export function alertsDigestTask(digest: () => Promise<{ subscriberDays: number; notifications: number }>): Task {
  return async (_payload, helpers) => {
    const result = await digest();
    helpers.logger.info(`alerts: digest for ${result.subscriberDays} subscriber-days, ${result.notifications} notifications`);
  };
}

/** A cron task: nothing queues it, so its name is here, with its crontab line. */
export const ALERTS_SWEEP_TASK = "alerts__sweep";

/**
 * Every minute: re-queues fan-outs whose batch job died with its worker
 * (graphile-worker keeps such a job locked for hours), so no fan-out waits
 * on a dead process. jobs/fanout/fanout.ts requeueStalledFanouts does the work.
 */
export const ALERTS_SWEEP_CRONTAB = `* * * * * ${ALERTS_SWEEP_TASK}`;

export function alertsSweepTask(sweep: () => Promise<number>): Task {
  return async (_payload, helpers) => {
    const requeued = await sweep();
    if (requeued > 0) helpers.logger.warn(`alerts: re-queued ${requeued} stalled fan-outs`);
  };
}

/** A cron task: nothing queues it, so its name is here, with its crontab line. */
export const CONTACT_MESSAGES_DIGEST_TASK = "contact_messages__digest";

/**
 * Every hour on the hour (graphile-worker cron in the notifier's worker, one
 * run per tick however many notifiers run). A missed tick needs no backfill:
 * the next run takes every message still held. jobs/scheduled/contact-messages-digest.ts
 * runContactMessageDigest does the work.
 */
export const CONTACT_MESSAGES_DIGEST_CRONTAB = `0 * * * * ${CONTACT_MESSAGES_DIGEST_TASK}`;

export function contactMessagesDigestTask(digest: () => Promise<{ notifications: number; messages: number; sendersForgotten: number }>): Task {
  return async (_payload, helpers) => {
    const result = await digest();
    if (result.messages > 0 || result.sendersForgotten > 0) {
      helpers.logger.info(
        `contact messages: ${result.messages} held messages in ${result.notifications} notifications; ${result.sendersForgotten} sender keys forgotten`,
      );
    }
  };
}

/**
 * Hourly housekeeping (graphile-worker cron, so several relays still run it
 * once per tick). The relay owns the work: jobs/scheduled/maintenance.ts.
 */
export const MAINTENANCE_PRUNE_TASK = "maintenance__prune";
export const MAINTENANCE_CRONTAB = `0 * * * * ${MAINTENANCE_PRUNE_TASK}`;

/** What one run did (jobs/scheduled/maintenance.ts PruneResult). */
export interface MaintenanceRun {
  buckets: number;
  partitionsCreated: string[];
  movedFromDefault: number;
  outboxDaysDropped: string[];
  outboxDaysStuck: string[];
}

export function maintenancePruneTask(prune: () => Promise<MaintenanceRun>): Task {
  return async (_payload, helpers) => {
    const result = await prune();
    helpers.logger.info(
      `maintenance: pruned ${result.buckets} rate-limit buckets; outbox days dropped: ${result.outboxDaysDropped.join(", ") || "none"}; ` +
        `partitions created: ${result.partitionsCreated.join(", ") || "none"}; rows moved out of default partitions: ${result.movedFromDefault}`,
    );
    // An unpublished row is never pruned: its day stays until the relay publishes it (docs/operations.md, "Partitions").
    if (result.outboxDaysStuck.length > 0) {
      helpers.logger.warn(`maintenance: outbox days past the retention kept for unpublished rows: ${result.outboxDaysStuck.join(", ")}`);
    }
  };
}

/**
 * Report lifetime every five minutes (graphile-worker cron: one job per
 * tick however many relays run). The relay runs the work:
 * jobs/scheduled/report-lifetime.ts, with the lifecycle's batch statements
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

/** A cron task: nothing queues it, so its name is here, with its crontab line. */
export const STRAY_HOLDS_REMIND_TASK = "stray_holds__remind";

/**
 * Every five minutes (the scheduled family; one run per tick however many
 * processes run it). A missed tick needs no backfill: the
 * next run takes every reminder still due, and a suggestion is reminded at
 * most once (jobs/scheduled/hold-reminder.ts runHoldReminders).
 */
export const STRAY_HOLDS_REMIND_CRONTAB = `*/5 * * * * ${STRAY_HOLDS_REMIND_TASK}`;

export function strayHoldsRemindTask(remind: () => Promise<number>): Task {
  return async (_payload, helpers) => {
    const reminded = await remind();
    if (reminded > 0) helpers.logger.info(`stray holds: ${reminded} owners reminded that a hold ends within a day`);
  };
}
