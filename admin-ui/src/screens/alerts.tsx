import { useState } from "preact/hooks";
import { ProblemNote, ScreenLayout, submit } from "../ui";
import { ReportAlertsSummary, useReportAlerts } from "./report-alerts";

/** Any lost report's neighbourhood alerts by its id, reported or not (the moderation screen shows them for reported ones). */
export function Alerts() {
  const [reportId, setReportId] = useState("");
  const { alerts, problem, busy, load } = useReportAlerts();
  return (
    <ScreenLayout
      title="Alerts"
      description="A lost report's neighbourhood alerts: the subscriptions covering it, the subscribers it reached by state, and each fan-out's batches and queued job. Counts only: no subscriber and no subscription point."
    >
      <form class="filters" onSubmit={submit(() => load(reportId.trim()))}>
        <label>
          Lost report id
          <input value={reportId} required onInput={(e) => setReportId(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={busy}>
          {alerts ? "Refresh" : "Look up"}
        </button>
      </form>
      {problem && <ProblemNote problem={problem} />}
      {alerts && (
        <p>
          Report {alerts.reportStatus}
          {alerts.moderationState ? `, ${alerts.moderationState}` : ""}
        </p>
      )}
      {alerts && <ReportAlertsSummary alerts={alerts} />}
    </ScreenLayout>
  );
}
