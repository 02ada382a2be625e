import type { TaskList } from "graphile-worker";
import type { Pool } from "../lib/db.js";
import type { Logger } from "../lib/logger.js";
import { ALERTS_DIGEST_CRONTAB, ALERTS_DIGEST_TASK, alertsDigestTask } from "../jobs/alerts-digest.js";
import { ALERTS_SWEEP_CRONTAB, ALERTS_SWEEP_TASK, alertsSweepTask } from "../jobs/alerts-sweep.js";
import { CONTACT_MESSAGES_DIGEST_CRONTAB, CONTACT_MESSAGES_DIGEST_TASK, contactMessagesDigestTask } from "../jobs/contact-messages-digest.js";
import { matchSubjectTask } from "../jobs/match-subject.js";
import { notificationDeliverBatchTask, notificationDeliverTask } from "../jobs/notification-deliver.js";
import { STRAY_HOLDS_REMIND_CRONTAB, STRAY_HOLDS_REMIND_TASK, strayHoldsRemindTask } from "../jobs/stray-holds-remind.js";
import { MATCH_SUBJECT_TASK, NOTIFICATION_DELIVER_BATCH_TASK, NOTIFICATION_DELIVER_TASK } from "../lib/job-payloads.js";
import { runDigest } from "./alerts/digest.js";
import { requeueStalledFanouts, type FanoutOptions } from "./alerts/fanout.js";
import { fanoutTasks } from "./alerts/worker.js";
import { runContactMessageDigest } from "./contact-messages-digest.js";
import { createBatchDelivery, createDelivery } from "./delivery.js";
import type { Deliverers } from "./deliverers/types.js";
import { runHoldReminders } from "./holds/reminder.js";
import { createMatcher } from "./matching/matcher.js";
import type { NotifierMetrics } from "./metrics.js";

/**
 * graphile-worker task lists of the notifier's main runner, and its crontab:
 * each task's entry point (jobs/) wired to the notifier function doing the
 * work. The fan-out's and the photos' runners have their lists in
 * alerts/worker.ts and photos/worker.ts.
 */

/** The notifier worker's recurring tasks. */
export const NOTIFIER_CRONTAB = [ALERTS_DIGEST_CRONTAB, ALERTS_SWEEP_CRONTAB, CONTACT_MESSAGES_DIGEST_CRONTAB, STRAY_HOLDS_REMIND_CRONTAB].join("\n");

/** The alert fan-out's recurring tasks: the morning digest and the stall sweep. */
export function alertHousekeepingTasks(pool: Pool, fanout?: FanoutOptions): TaskList {
  return {
    [ALERTS_DIGEST_TASK]: alertsDigestTask(() => runDigest(pool, undefined, fanout?.dailyCap, fanout?.deliveryBatch)),
    [ALERTS_SWEEP_TASK]: alertsSweepTask(() => requeueStalledFanouts(pool)),
  } as TaskList;
}

/** Every alert task on one runner (tests): the fan-out's batches, the digest and the sweep. */
export function alertTasks(pool: Pool, fanout?: FanoutOptions): TaskList {
  return { ...fanoutTasks(pool, fanout), ...alertHousekeepingTasks(pool, fanout) };
}

export interface NotifierTaskOptions {
  pool: Pool;
  deliverers: Deliverers;
  logger: Logger;
  metrics?: NotifierMetrics;
  /** Wakes the relay after a job committed events (lib/bus.ts relayWaker); without it the relay's poll finds them. */
  wakeRelay?: () => void;
  /** nearby_lost notifications per delivery job of the morning digest (NOTIFIER_ALERT_DELIVERY_BATCH). */
  alertDeliveryBatch?: number;
}

/**
 * Every task the notifier's main graphile-worker runner runs: deliveries,
 * matching, the alert crons and the held contact messages' digest. The
 * fan-out's batches run on a runner of their own (notifier/alerts/worker.ts).
 */
export function notifierTasks({ pool, deliverers, logger, metrics, wakeRelay, alertDeliveryBatch }: NotifierTaskOptions): TaskList {
  return {
    [NOTIFICATION_DELIVER_TASK]: notificationDeliverTask(createDelivery({ pool, deliverers, logger, metrics })),
    [NOTIFICATION_DELIVER_BATCH_TASK]: notificationDeliverBatchTask(createBatchDelivery({ pool, deliverers, logger, metrics })),
    [MATCH_SUBJECT_TASK]: matchSubjectTask(createMatcher({ pool, logger, wakeRelay })),
    ...alertHousekeepingTasks(pool, { deliveryBatch: alertDeliveryBatch }),
    [CONTACT_MESSAGES_DIGEST_TASK]: contactMessagesDigestTask(() => runContactMessageDigest(pool)),
    [STRAY_HOLDS_REMIND_TASK]: strayHoldsRemindTask(() => runHoldReminders(pool)),
  } as TaskList;
}
