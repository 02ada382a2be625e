/**
 * Cancels a lost report on confirmed abuse (the spec's manual operator step).
 *
 *   tsx tasks/cancel-lost-report.ts --report <uuid> --ticket <incident id> --operator <your id> [--execute]
 *
 * Without --execute it only shows what would change. With it, one transaction
 * sets status `cancelled` and emits events.safety.lost_report_cancelled.v1
 * (cancelLostReport, lib/report-lifecycle.ts), and writes audit
 * `safety.report_cancelled_by_operator` with the ticket id.
 */
import { AuditAction, AuditObject, writeAuditEvent } from "../lib/audit.js";
import { cancelLostReport } from "../lib/report-lifecycle.js";
import { parseTaskArgs, print, required, withTaskClient } from "./lib.js";

const usage = "cancel-lost-report --report <uuid> --ticket <id> --operator <id> [--execute]";
const args = parseTaskArgs(usage, {
  report: { type: "string" },
  ticket: { type: "string" },
  operator: { type: "string" },
});
const reportId = required(args.report, "report", usage);
const ticket = required(args.ticket, "ticket", usage);
const operator = required(args.operator, "operator", usage);
if (!/^[0-9a-f-]{36}$/i.test(reportId)) {
  console.error("--report must be a uuid");
  process.exit(2);
}

const outcome = await withTaskClient(async (client) => {
  await client.query("begin");
  try {
    const { rows } = await client.query<{ status: string }>(
      `select status from safety_lost_report where id = $1::uuid for update`,
      [reportId],
    );
    const report = rows[0];
    if (!report) return { ok: false, error: "no lost report with that id" };
    if (report.status === "cancelled") return { ok: false, error: "the report is already cancelled" };
    if (!args.execute) {
      return { ok: true, dryRun: true, wouldChange: { reportId, from: report.status, to: "cancelled" }, ticket };
    }
    await cancelLostReport(client, reportId, report.status);
    await writeAuditEvent(client, {
      actorId: operator,
      action: AuditAction.ReportCancelledByOperator,
      objectType: AuditObject.LostReport,
      objectId: reportId,
      metadata: { ticketId: ticket, previousStatus: report.status },
    });
    await client.query("commit");
    return { ok: true, dryRun: false, changed: { reportId, from: report.status, to: "cancelled" }, ticket };
  } finally {
    await client.query("rollback");
  }
});
print(outcome);
process.exit(outcome.ok ? 0 : 1);
