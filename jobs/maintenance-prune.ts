import type { Task } from "graphile-worker";

/**
 * Hourly housekeeping (graphile-worker cron, so several relays still run it
 * once per tick). The relay owns the work: relay/maintenance.ts.
 */
export const MAINTENANCE_PRUNE_TASK = "maintenance__prune";
export const MAINTENANCE_CRONTAB = `0 * * * * ${MAINTENANCE_PRUNE_TASK}`;

/** What one run did (relay/maintenance.ts PruneResult). */
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
