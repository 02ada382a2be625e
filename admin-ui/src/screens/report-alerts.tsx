import { useState } from "preact/hooks";
import type { Problem } from "../api";
import { ProblemNote, time, toProblem, useApi } from "../ui";

/** GET /v1/admin/lost-reports/{id}/alerts (api/admin/alerts/schemas.ts): counts and progress, no subscriber. */
interface ReportAlerts {
  subscriptionsInRange: number;
  subscribersInRange: number;
  recipients: { pending: number; notified: number; deferred: number; digested: number; skipped: number };
  fanouts: Array<{
    eventId: string;
    status: "running" | "done" | "stopped";
    stopReason: string | null;
    recipients: number | null;
    batchesDone: number;
    batchesPending: number | null;
    updatedAt: string;
    job: { state: string; batch: number; attempts: number; lastError: string | null } | null;
  }>;
}

/**
 * A lost report's neighbourhood alerts on the moderation screen: how many
 * subscribers it reaches and how far its fan-out got, loaded on demand, so a
 * moderator sees what a quarantine would still stop.
 */
export function ReportAlertsPanel({ reportId }: { reportId: string }) {
  const { request } = useApi();
  const [alerts, setAlerts] = useState<ReportAlerts | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const load = async () => {
    setBusy(true);
    try {
      setAlerts(await request<ReportAlerts>("GET", `/v1/admin/lost-reports/${reportId}/alerts`));
      setProblem(null);
    } catch (err) {
      setProblem(toProblem(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="report-alerts">
      <button type="button" disabled={busy} onClick={load}>
        {alerts ? "Refresh alerts" : "Alerts"}
      </button>
      {problem && <ProblemNote problem={problem} />}
      {alerts && (
        <div class="muted" data-testid="report-alerts">
          <div>
            {alerts.subscriptionsInRange} subscriptions in range · notified {alerts.recipients.notified} · deferred to digest{" "}
            {alerts.recipients.deferred + alerts.recipients.digested} · pending {alerts.recipients.pending}
          </div>
          {alerts.fanouts.map((f) => (
            <div key={f.eventId}>
              fan-out <span class={`badge ${f.status}`}>{f.status}</span> {f.stopReason ?? ""} · batches {f.batchesDone} done
              {f.batchesPending !== null ? `, ${f.batchesPending} pending` : ", collecting"}
              {f.job ? ` · job ${f.job.state} (batch ${f.job.batch}, attempt ${f.job.attempts})` : ""}
              {f.job?.lastError ? ` · ${f.job.lastError}` : ""} · {time(f.updatedAt)}
            </div>
          ))}
        </div>
      )}
    </div>
  );
}
