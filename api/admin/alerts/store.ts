import type { Queryable } from "../../../lib/db.js";
import { ALERTS_FANOUT_TASK } from "../../../jobs/fanout/task.js";
import { jobsByKey } from "../../../jobs/job-state.js";
import { jobKey } from "../../../jobs/queue.js";
import type { ReportAlerts } from "./schemas.js";

/**
 * A lost report's alert reach for the console: counts and progress only,
 * never a subscriber or a subscription's point.
 */
export async function reportAlerts(client: Queryable, reportId: string): Promise<ReportAlerts | null> {
  const { rows: reports } = await client.query<{ status: string; moderationState: string | null; subscriptions: number; subscribers: number }>(
    `select r.status, m.state as "moderationState",
       (select count(*)::int from alert_subscription s
        where s.area && r.coarse_location::geometry and st_dwithin(s.location, r.coarse_location, s.radius_m)
          and (s.species is null or r.species = any(s.species)) and s.actor_id <> r.reporter_id) as subscriptions,
       (select count(distinct s.actor_id)::int from alert_subscription s
        where s.area && r.coarse_location::geometry and st_dwithin(s.location, r.coarse_location, s.radius_m)
          and (s.species is null or r.species = any(s.species)) and s.actor_id <> r.reporter_id) as subscribers
     from safety_lost_report r
     left join moderation_content_state m on m.target_type = 'lost_report' and m.target_id = r.id
     where r.id = $1::uuid`,
    [reportId],
  );
  const report = reports[0];
  if (!report) return null;

  const { rows: fanouts } = await client.query(
    `select f.event_id as "eventId", f.report_id as "reportId", f.event_type as "eventType", f.status, f.stop_reason as "stopReason", f.recipients,
       f.batch_size as "batchSize", f.notified, f.deferred, f.skipped, f.batches_done as "batchesDone", f.created_at as "startedAt",
       f.deferrals_listed as "deferralsListed",
       f.updated_at as "updatedAt", f.finished_at as "finishedAt"
     from alert_fanout f
     where f.report_id = $1::uuid
     order by f.created_at desc`,
    [reportId],
  );
  // Each fan-out's batch job, if one is queued: the batches share the fan-out's key.
  const keyOf = (f: { reportId: string; eventId: string }) => jobKey(ALERTS_FANOUT_TASK, { reportId: f.reportId, eventId: f.eventId });
  const jobs = await jobsByKey(client, ALERTS_FANOUT_TASK, fanouts.map(keyOf));
  // The ledger holds the notified, and the deferred once the morning digest has written them (until then, the fan-out counts them).
  const { rows: states } = await client.query<{ fanoutEventId: string; status: string; n: number }>(
    `select fanout_event_id as "fanoutEventId", status, count(*)::int as n from alert_ledger where report_id = $1::uuid group by 1, 2`,
    [reportId],
  );
  const ledger = (status: string, eventId?: string) =>
    states.filter((s) => s.status === status && (eventId === undefined || s.fanoutEventId === eventId)).reduce((n, s) => n + s.n, 0);
  const pendingOf = (f: (typeof fanouts)[number]): number =>
    f.status === "running" && f.recipients !== null ? f.recipients - f.notified - f.deferred - f.skipped : 0;
  const recipients = {
    pending: fanouts.reduce((n, f) => n + pendingOf(f), 0),
    notified: ledger("notified"),
    deferred: fanouts.reduce((n, f) => n + (f.deferralsListed ? ledger("deferred", f.eventId) : Math.max(f.deferred, ledger("deferred", f.eventId))), 0),
    digested: ledger("digested"),
    skipped: fanouts.reduce((n, f) => n + f.skipped, 0) + ledger("skipped"),
  };
  return {
    lostReportId: reportId,
    reportStatus: report.status,
    moderationState: report.moderationState,
    subscriptionsInRange: report.subscriptions,
    subscribersInRange: report.subscribers,
    recipients,
    fanouts: fanouts.map((f) => {
      const pending = pendingOf(f);
      const job = jobs.get(keyOf(f));
      return {
        eventId: f.eventId,
        eventType: f.eventType,
        status: f.status,
        stopReason: f.stopReason,
        recipients: f.recipients,
        notified: f.notified,
        deferredToDigest: f.deferred,
        skipped: f.skipped,
        batchesDone: f.batchesDone,
        batchesPending: f.recipients === null ? null : f.status === "running" ? Math.ceil(pending / f.batchSize) : 0,
        startedAt: f.startedAt.toISOString(),
        updatedAt: f.updatedAt.toISOString(),
        finishedAt: f.finishedAt?.toISOString() ?? null,
        job: job
          ? {
              state: job.lockedAt ? "running" : job.lastError ? "retrying" : "waiting",
              batch: job.payload?.batch ?? 0,
              attempts: job.attempts,
              maxAttempts: job.maxAttempts,
              lastError: job.lastError,
              runAt: job.runAt.toISOString(),
            }
          : null,
      };
    }),
  };
}
