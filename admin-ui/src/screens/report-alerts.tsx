import { useState } from "preact/hooks";
import type { Problem } from "../api";
import { ProblemNote, time, toProblem, useApi } from "../ui";

/** GET /v1/admin/lost-reports/{id}/alerts (api/admin/alerts/schemas.ts): counts and progress, no subscriber. */
interface ReportAlerts {
  reportStatus: string;
  moderationState: string | null;
  subscriptionsInRange: number;
  subscribersInRange: number;
  recipients: { pending: number; notified: number; deferred: number; digested: number; skipped: number };
  fanouts: Array<{
    eventId: string;
    status: "running" | "done" | "stopped";
    stopReason: string | null;
    recipients: number | null;
    notified: number;
    deferredToDigest: number;
    skipped: number;
    batchesDone: number;
    batchesPending: number | null;
    updatedAt: string;
    job: { state: string; batch: number; attempts: number; lastError: string | null } | null;
  }>;
}

/** A lost report's alerts, loaded on demand (a fan-out's progress changes while one looks). */
export function useReportAlerts() {
  const { request } = useApi();
  const [alerts, setAlerts] = useState<ReportAlerts | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const load = async (reportId: string) => {
    setBusy(true);
    try {
      setAlerts(await request<ReportAlerts>("GET", `/v1/admin/lost-reports/${encodeURIComponent(reportId)}/alerts`));
      setProblem(null);
    } catch (err) {
      setAlerts(null);
      setProblem(toProblem(err));
    } finally {
      setBusy(false);
    }
  };
  return { alerts, problem, busy, load };
}

/** How many subscribers the report reaches, and how far each of its fan-outs got. */
export function ReportAlertsSummary({ alerts }: { alerts: ReportAlerts }) {
  const { recipients } = alerts;
  return (
    <div class="muted" data-testid="report-alerts">
      <div>
        {alerts.subscriptionsInRange} subscriptions in range ({alerts.subscribersInRange} subscribers) · notified {recipients.notified} · deferred to
        digest {recipients.deferred + recipients.digested} · pending {recipients.pending} · skipped {recipients.skipped}
      </div>
      {alerts.fanouts.map((f) => (
        <div key={f.eventId}>
          fan-out <span class={`badge ${f.status}`}>{f.status}</span> {f.stopReason ?? ""}
          {f.recipients !== null ? ` · ${f.recipients} recipients: ${f.notified} notified, ${f.deferredToDigest} deferred, ${f.skipped} skipped` : ""} ·
          batches {f.batchesDone} done
          {f.batchesPending !== null ? `, ${f.batchesPending} pending` : ", collecting"}
          {f.job ? ` · job ${f.job.state} (batch ${f.job.batch}, attempt ${f.job.attempts})` : ""}
          {f.job?.lastError ? ` · ${f.job.lastError}` : ""} · {time(f.updatedAt)}
        </div>
      ))}
    </div>
  );
}

/**
 * A lost report's neighbourhood alerts on the moderation screen, loaded on
 * demand, so a moderator sees what a quarantine would still stop.
 */
export function ReportAlertsPanel({ reportId }: { reportId: string }) {
  const { alerts, problem, busy, load } = useReportAlerts();
  return (
    <div class="report-alerts">
      <button type="button" disabled={busy} onClick={() => load(reportId)}>
        {alerts ? "Refresh alerts" : "Alerts"}
      </button>
      {problem && <ProblemNote problem={problem} />}
      {alerts && <ReportAlertsSummary alerts={alerts} />}
    </div>
  );
}
