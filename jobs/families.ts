import type { TaskList } from "graphile-worker";
import type { Pool } from "../lib/db.js";
import type { JobFamily } from "../lib/job-families.js";
import type { Channel } from "../lib/notifications.js";
import type { Logger } from "../lib/logger.js";
import type { SafeFetchOptions } from "../lib/safe-fetch.js";
import type { ObjectStorage } from "../lib/storage/index.js";
import { startWorker, type SupervisedWorker } from "../lib/worker.js";
import { createBatchDelivery, createDelivery, type DeliveryMetrics } from "./delivery/delivery.js";
import type { Deliverers } from "./delivery/deliverers/types.js";
import { DELIVERY_TASKS, notificationDeliverBatchTask, notificationDeliverTask, type DeliveryChannel } from "./delivery/task.js";
import { requeueStalledFanouts, type FanoutOptions } from "./fanout/fanout.js";
import { fanoutTasks } from "./fanout/worker.js";
import { createMatcher } from "./matching/matcher.js";
import { MATCH_SUBJECT_TASK, matchSubjectTask } from "./matching/task.js";
import { partnerPhotoTasks, photoTasks } from "./photos/worker.js";
import { runDigest } from "./scheduled/alerts-digest.js";
import { runContactMessageDigest } from "./scheduled/contact-messages-digest.js";
import { pruneMaintenance } from "./scheduled/maintenance.js";
import { runHoldReminders } from "./scheduled/hold-reminder.js";
import { runReportLifetime } from "./scheduled/report-lifetime.js";
import {
  ALERTS_DIGEST_CRONTAB,
  ALERTS_DIGEST_TASK,
  ALERTS_SWEEP_CRONTAB,
  ALERTS_SWEEP_TASK,
  alertsDigestTask,
  alertsSweepTask,
  CONTACT_MESSAGES_DIGEST_CRONTAB,
  CONTACT_MESSAGES_DIGEST_TASK,
  contactMessagesDigestTask,
  MAINTENANCE_CRONTAB,
  MAINTENANCE_PRUNE_TASK,
  maintenancePruneTask,
  REPORT_LIFETIME_CRONTAB,
  REPORT_LIFETIME_TASK,
  reportLifetimeTask,
  STRAY_HOLDS_REMIND_CRONTAB,
  STRAY_HOLDS_REMIND_TASK,
  strayHoldsRemindTask,
} from "./scheduled/task.js";

/**
 * Which tasks each job family runs, on a graphile-worker runner of its own
 * (a runner fetches only the tasks it knows): so a family never waits for
 * another's slots. Twenty pushes hanging on a slow endpoint hold push slots
 * only; a burst of fan-out batches or photo decodes holds only its own. A
 * process starts the families its settings name (startFamilies); the
 * notifier runs every one by default.
 */

export interface FamilyDeps {
  pool: Pool;
  logger: Logger;
  deliverers: Deliverers;
  metrics?: DeliveryMetrics;
  /** Wakes the relay after a job committed events (lib/bus.ts relayWaker); without it the relay's poll finds them. */
  wakeRelay?: () => void;
  /** The photos' object storage; without it the photo families cannot run. */
  storage?: ObjectStorage;
  partnerPhotoFetch?: SafeFetchOptions;
  /** The fan-out's options; `duty` under 1 rests each batch slot (NOTIFIER_FANOUT_DUTY). */
  fanout?: FanoutOptions & { duty?: number };
  reportTtlDays: number;
  outboxRetentionDays: number;
}

const deliveryTasks = (channel: Channel, deps: FamilyDeps) => ({
  [DELIVERY_TASKS[channel].one]: notificationDeliverTask(createDelivery(deps)),
  [DELIVERY_TASKS[channel].batch]: notificationDeliverBatchTask(createBatchDelivery(deps)),
});

/** A channel's delivery family; the email family also takes the rare in_app row left pending (jobs/delivery/task.ts). */
const deliveryFamily = (channel: DeliveryChannel) => (deps: FamilyDeps) =>
  channel === "email" ? { ...deliveryTasks("email", deps), ...deliveryTasks("in_app", deps) } : deliveryTasks(channel, deps);

function needStorage(deps: FamilyDeps): ObjectStorage {
  if (!deps.storage) throw new Error("the photo families need object storage");
  return deps.storage;
}

/** The scheduled family: every cron task, with its crontab lines. */
export function scheduledTasks(deps: FamilyDeps): TaskList {
  const { pool, fanout } = deps;
  return {
    [ALERTS_DIGEST_TASK]: alertsDigestTask(() => runDigest(pool, undefined, fanout?.dailyCap, fanout?.deliveryBatch)),
    [ALERTS_SWEEP_TASK]: alertsSweepTask(() => requeueStalledFanouts(pool)),
    [CONTACT_MESSAGES_DIGEST_TASK]: contactMessagesDigestTask(() => runContactMessageDigest(pool)),
    [MAINTENANCE_PRUNE_TASK]: maintenancePruneTask(() => pruneMaintenance(pool, deps.outboxRetentionDays)),
    [STRAY_HOLDS_REMIND_TASK]: strayHoldsRemindTask(() => runHoldReminders(pool)),
    [REPORT_LIFETIME_TASK]: reportLifetimeTask(async () => {
      const result = await runReportLifetime(pool, { ttlDays: deps.reportTtlDays });
      // Its expiry and reminder events are outbox rows: the relay publishes them now rather than at its next poll.
      if (result.expired + result.warned > 0) deps.wakeRelay?.();
      return result;
    }),
  };
}

/** Every alert task on one runner (tests): the fan-out's batches, the digest and the sweep. */
export function alertTasks(pool: Pool, fanout?: FanoutOptions): TaskList {
  return {
    ...fanoutTasks(pool, fanout),
    [ALERTS_DIGEST_TASK]: alertsDigestTask(() => runDigest(pool, undefined, fanout?.dailyCap, fanout?.deliveryBatch)),
    [ALERTS_SWEEP_TASK]: alertsSweepTask(() => requeueStalledFanouts(pool)),
  };
}

export const SCHEDULED_CRONTAB = [
  ALERTS_DIGEST_CRONTAB,
  ALERTS_SWEEP_CRONTAB,
  CONTACT_MESSAGES_DIGEST_CRONTAB,
  MAINTENANCE_CRONTAB,
  REPORT_LIFETIME_CRONTAB,
  STRAY_HOLDS_REMIND_CRONTAB,
].join("\n");

const FAMILY_TASKS = {
  "delivery-email": deliveryFamily("email"),
  "delivery-push": deliveryFamily("push"),
  "delivery-sms": deliveryFamily("sms"),
  fanout: (deps) => fanoutTasks(deps.pool, deps.fanout, deps.fanout?.duty),
  matching: (deps) => ({ [MATCH_SUBJECT_TASK]: matchSubjectTask(createMatcher(deps)) }),
  photos: (deps) => photoTasks({ ...deps, storage: needStorage(deps) }),
  "partner-photos": (deps) => partnerPhotoTasks({ ...deps, storage: needStorage(deps) }),
  scheduled: scheduledTasks,
} satisfies Record<JobFamily, (deps: FamilyDeps) => TaskList>;

/** The task list of one family. */
export function familyTasks(family: JobFamily, deps: FamilyDeps): TaskList {
  return FAMILY_TASKS[family](deps) as TaskList;
}

export interface RunningFamilies {
  readonly families: readonly JobFamily[];
  stop(): Promise<void>;
}

/**
 * One supervised runner per family named, each with its own slots
 * (`concurrency(family)`). Only the scheduled family has a crontab; cron runs
 * once per tick however many processes run it.
 */
export async function startFamilies(
  deps: FamilyDeps,
  families: readonly JobFamily[],
  concurrency: (family: JobFamily) => number,
  /**
   * A pool of the family's own, sized for its slots: a delivery holds its
   * connection (and the notification's advisory lock) while it waits on the
   * network, so on a shared pool twenty hanging pushes would leave the other
   * families no connection to fetch a job with. Without it, deps.pool (tests).
   */
  poolFor?: (family: JobFamily, size: number) => Pool,
): Promise<RunningFamilies> {
  const runners: SupervisedWorker[] = [];
  const pools: Pool[] = [];
  const stopAll = async () => {
    await Promise.all(runners.map((r) => r.stop()));
    await Promise.all(pools.map((p) => p.end()));
  };
  try {
    for (const family of families) {
      const slots = concurrency(family);
      // graphile-worker's own queries (fetching, completing) need a connection beside the slots'.
      const pool = poolFor ? poolFor(family, slots + 2) : deps.pool;
      if (pool !== deps.pool) pools.push(pool);
      const familyDeps = { ...deps, pool, logger: deps.logger.child({ family }) };
      runners.push(
        await startWorker({
          pool,
          logger: familyDeps.logger,
          taskList: familyTasks(family, familyDeps),
          crontab: family === "scheduled" ? SCHEDULED_CRONTAB : "",
          concurrency: slots,
          // Short jobs served from memory with batched completions; not for a fan-out batch, which is long.
          localQueueSize: family === "fanout" ? -1 : Math.max(2, slots),
        }),
      );
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  return { families, stop: stopAll };
}
