import type { TaskList } from "graphile-worker";
import type { Pool } from "../lib/db.js";
import type { Logger } from "../lib/logger.js";
import { ALERTS_DIGEST_CRONTAB, ALERTS_DIGEST_TASK, alertsDigestTask } from "../jobs/alerts-digest.js";
import { ALERTS_FANOUT_TASK, alertsFanoutTask } from "../jobs/alerts-fanout.js";
import { ALERTS_SWEEP_CRONTAB, ALERTS_SWEEP_TASK, alertsSweepTask } from "../jobs/alerts-sweep.js";
import { MATCH_SUBJECT_TASK, matchSubjectTask } from "../jobs/match-subject.js";
import { NOTIFICATION_DELIVER_TASK, notificationDeliverTask } from "../jobs/notification-deliver.js";
import { runDigest } from "./alerts/digest.js";
import { requeueStalledFanouts, runFanoutBatch, type FanoutOptions } from "./alerts/fanout.js";
import { createDelivery } from "./delivery.js";
import type { Deliverers } from "./deliverers/types.js";
import { createMatcher } from "./matching/matcher.js";
import type { NotifierMetrics } from "./metrics.js";

/** The notifier worker's recurring tasks. */
export const NOTIFIER_CRONTAB = [ALERTS_DIGEST_CRONTAB, ALERTS_SWEEP_CRONTAB].join("\n");

/** The alert fan-out's tasks: its batches, the morning digest, the stall sweep. */
export function alertTasks(pool: Pool, fanout?: FanoutOptions): TaskList {
  return {
    [ALERTS_FANOUT_TASK]: alertsFanoutTask(({ fanoutId, batch, reportId, eventType }) =>
      runFanoutBatch(pool, fanoutId, batch, fanout, reportId && eventType ? { reportId, eventType } : undefined),
    ),
    [ALERTS_DIGEST_TASK]: alertsDigestTask(() => runDigest(pool)),
    [ALERTS_SWEEP_TASK]: alertsSweepTask(() => requeueStalledFanouts(pool)),
  } as TaskList;
}

export interface NotifierTaskOptions {
  pool: Pool;
  deliverers: Deliverers;
  logger: Logger;
  metrics?: NotifierMetrics;
}

/** Every task the notifier's graphile-worker runs: deliveries, matching, and the alert fan-out with its crons. */
export function notifierTasks({ pool, deliverers, logger, metrics }: NotifierTaskOptions): TaskList {
  return {
    [NOTIFICATION_DELIVER_TASK]: notificationDeliverTask(createDelivery({ pool, deliverers, logger, metrics })),
    [MATCH_SUBJECT_TASK]: matchSubjectTask(createMatcher({ pool, logger })),
    ...alertTasks(pool),
  } as TaskList;
}
