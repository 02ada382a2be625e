import type { ReportOutcome, Species } from "./animals.js";
import type { Queryable } from "./db.js";
import { EventType } from "./events.js";
import { recordEvent, type EventLog } from "./outbox.js";
import type { SqlValue } from "./sql.js";

/**
 * A report's lifecycle, written here and nowhere else: the `status`,
 * `resolved_at`, `closed_reason`, `expires_at` and `expiry_warned_for`
 * columns of safety_lost_report and safety_found_report. Each transition
 * writes its outbox event in the caller's transaction (the client comes
 * first), so the API's routes, the relay's report__lifetime job and the
 * operator task all change a report the same way.
 * tests/foundation/report-lifecycle-owner.test.ts fails when another module
 * writes these columns.
 *
 *   open --resolve--> reunited | closed      reporter (API)
 *   open --expire--> closed, closed_reason 'expired'      report__lifetime (relay)
 *   any but cancelled --cancel--> cancelled      operator (tasks/cancel-lost-report.ts)
 *   open --renew--> open with a new expires_at      reporter (API)
 *
 * A create is a row with the default status `open` and `expiryAfter` as its
 * expiry, written in the create's own single statement (api/safety/reports/store.ts).
 * The single-report transitions expect the caller to hold the row lock and
 * to have checked the status it moves from.
 */

export type ReportKind = "lost" | "found";
export type ReportStatus = "open" | "reunited" | "closed" | "cancelled";
export const reportTable: Record<ReportKind, string> = { lost: "safety_lost_report", found: "safety_found_report" };

/** A report's share page, under PUBLIC_BASE_URL (api/share/ serves it). */
export const sharePath = (kind: ReportKind, id: string) => `/${kind}/${id}`;
/** A report's short link (GET /s/{code}, 301 to its share page). */
export const shortPath = (code: string) => `/s/${code}`;

/** The report a transition names in its event. */
export interface ReportRef {
  id: string;
  reporterId: string;
}

/** SQL: the expiry of a report created or renewed now, `ttlDays` (an int) days on. */
export const expiryAfter = (ttlDays: SqlValue) => `now() + make_interval(days => ${ttlDays})`;

/**
 * Why a report was closed when its reporter did not simply close it:
 * `left_custody`, a partner's animal that left the shelter (DELETE
 * /partners/v2/animals/{id}). `expired` is expireBatch's.
 */
export const CLOSED_REASONS = ["expired", "left_custody"] as const;
export type ClosedReason = (typeof CLOSED_REASONS)[number];

/**
 * The reporter resolves an open report (reunited or closed): it leaves the
 * open-only alerts (and their partial GiST index) at once. Emits
 * lost_report_resolved or found_report_resolved. A partner's animal that
 * left its custody is closed here too, with closedReason `left_custody`.
 */
export async function resolveReport(
  client: Queryable,
  kind: ReportKind,
  report: ReportRef,
  outcome: ReportOutcome,
  log?: EventLog,
  closedReason: Exclude<ClosedReason, "expired"> | null = null,
): Promise<{ resolvedAt: string }> {
  const { rows } = await client.query<{ resolvedAt: Date }>(
    `update ${reportTable[kind]} set status = $2::text, closed_reason = $3::text, resolved_at = now(), updated_at = now()
     where id = $1::uuid
     returning resolved_at as "resolvedAt"`,
    [report.id, outcome, closedReason],
  );
  const resolvedAt = rows[0]!.resolvedAt.toISOString();
  const fields = { reporterId: report.reporterId, outcome, resolvedAt };
  if (kind === "lost") await recordEvent(client, EventType.LostReportResolved, { lostReportId: report.id, ...fields }, log);
  else await recordEvent(client, EventType.FoundReportResolved, { foundReportId: report.id, ...fields }, log);
  return { resolvedAt };
}

/** An operator cancels a lost report on confirmed abuse, from whatever status it had. Emits lost_report_cancelled. */
export async function cancelLostReport(client: Queryable, reportId: string, previousStatus: string): Promise<void> {
  await client.query(`update safety_lost_report set status = 'cancelled', resolved_at = now(), updated_at = now() where id = $1::uuid`, [
    reportId,
  ]);
  await recordEvent(client, EventType.LostReportCancelled, { reportId, previousStatus });
}

/**
 * The reporter renews an open report: a new expiry `ttlDays` from now, which
 * re-arms the report_expiring reminder (remindBatch). Emits report_renewed.
 */
export async function renewReport(client: Queryable, kind: ReportKind, report: ReportRef, ttlDays: number, log?: EventLog): Promise<string> {
  const { rows } = await client.query<{ expiresAt: Date }>(
    `update ${reportTable[kind]} set expires_at = ${expiryAfter("$2::int")}, updated_at = now()
     where id = $1::uuid
     returning expires_at as "expiresAt"`,
    [report.id, ttlDays],
  );
  const expiresAt = rows[0]!.expiresAt.toISOString();
  await recordEvent(client, EventType.ReportRenewed, { reportKind: kind, reportId: report.id, reporterId: report.reporterId, expiresAt }, log);
  return expiresAt;
}

/*
 * The report__lifetime job's batches (jobs/scheduled/report-lifetime.ts runs them
 * until one finds nothing). Each locks its rows in a materialized CTE, run
 * once, and updates exactly those: the job's drain relies on every row a
 * batch locks being updated. The shorter `update … where id in (select …
 * limit n for update skip locked)` does not do that: on a fresh table it is
 * planned as a nested-loop semi join that runs the locking subquery again for
 * every open row. Each run skips the rows the statement has already updated
 * (LockRows ignores a row its own command updated), so its limit reaches
 * further and locks rows the outer scan has passed: a batch of 25 closed 44
 * and held 69 locks. Another worker, finding only locked rows, stops, and
 * reports are left open: 13 of 300 with four workers at once, the case
 * tests/relay/report-lifetime.test.ts runs (docs/decisions/0031).
 */

const animalName: Record<ReportKind, string> = { lost: "animal_name", found: "null::text" };

/**
 * Open reports without an expiry (made before reports had one) get
 * created_at + `ttlDays`, but never less than `warningDays` and an hour from
 * now: no old report closes without its reminder. One statement; returns the
 * rows dated.
 */
export async function dateBatch(
  client: Queryable,
  kind: ReportKind,
  { ttlDays, warningDays, batchSize }: { ttlDays: number; warningDays: number; batchSize: number },
): Promise<number> {
  const { rowCount } = await client.query(
    `with batch as materialized (
       select id from ${reportTable[kind]} where status = 'open' and expires_at is null limit $3::int for update skip locked
     )
     update ${reportTable[kind]} r set expires_at = greatest(r.created_at + make_interval(days => $1::int),
                                                      now() + make_interval(days => $2::int, hours => 1))
     from batch where r.id = batch.id`,
    [ttlDays, warningDays, batchSize],
  );
  return rowCount ?? 0;
}

/**
 * Closes up to `batchSize` open reports past their expiry (closed_reason
 * 'expired': they leave alerts and matching, which read open reports only),
 * each with its report_expired, in the caller's transaction. Returns the
 * rows closed.
 */
export async function expireBatch(client: Queryable, kind: ReportKind, batchSize: number): Promise<number> {
  const { rows } = await client.query<{ id: string; reporterId: string; expiredAt: Date }>(
    `with batch as materialized (
       select id from ${reportTable[kind]} where status = 'open' and expires_at <= now()
       order by expires_at limit $1::int for update skip locked
     )
     update ${reportTable[kind]} r set status = 'closed', closed_reason = 'expired', resolved_at = now(), updated_at = now()
     from batch where r.id = batch.id and r.status = 'open'
     returning r.id, r.reporter_id as "reporterId", r.resolved_at as "expiredAt"`,
    [batchSize],
  );
  for (const row of rows) {
    await recordEvent(client, EventType.ReportExpired, {
      reportKind: kind,
      reportId: row.id,
      reporterId: row.reporterId,
      expiredAt: row.expiredAt.toISOString(),
    });
  }
  return rows.length;
}

/**
 * Reminds the reporters of up to `batchSize` open reports expiring within
 * `warningDays` (report_expiring), in the caller's transaction. Each
 * reminder is marked with the expiry it was for: a renewal moves expires_at,
 * which re-arms it. Returns the reports reminded.
 */
export async function remindBatch(client: Queryable, kind: ReportKind, warningDays: number, batchSize: number): Promise<number> {
  const { rows } = await client.query<{ id: string; reporterId: string; species: Species; animalName: string | null; expiresAt: Date }>(
    `with batch as materialized (
       select id from ${reportTable[kind]}
       where status = 'open' and expires_at > now()
         and expires_at <= now() + make_interval(days => $1::int)
         and expiry_warned_for is distinct from expires_at
       order by expires_at limit $2::int for update skip locked
     )
     update ${reportTable[kind]} r set expiry_warned_for = r.expires_at
     from batch where r.id = batch.id
     returning r.id, r.reporter_id as "reporterId", r.species, ${animalName[kind]} as "animalName", r.expires_at as "expiresAt"`,
    [warningDays, batchSize],
  );
  for (const row of rows) {
    await recordEvent(client, EventType.ReportExpiring, {
      reportKind: kind,
      reportId: row.id,
      reporterId: row.reporterId,
      species: row.species,
      animalName: row.animalName,
      expiresAt: row.expiresAt.toISOString(),
    });
  }
  return rows.length;
}
