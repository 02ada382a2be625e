import type { Task } from "graphile-worker";

/**
 * Hourly housekeeping (graphile-worker cron, so several relays still run it
 * once per tick). The relay owns the work: relay/maintenance.ts.
 */
export const MAINTENANCE_PRUNE_TASK = "maintenance__prune";
export const MAINTENANCE_CRONTAB = `0 * * * * ${MAINTENANCE_PRUNE_TASK}`;

export function maintenancePruneTask(prune: () => Promise<{ buckets: number; outboxEvents: number }>): Task {
  return async (_payload, helpers) => {
    const result = await prune();
    helpers.logger.info(`maintenance: pruned ${result.buckets} rate-limit buckets and ${result.outboxEvents} published outbox rows`);
  };
}
