import { useEffect, useState } from "preact/hooks";
import type { MyReport, Page, ReportKind } from "../api";
import { ProblemNote, useProblem } from "../forms";
import { fill, useI18n } from "../i18n";
import { useSession } from "../session";

type Listed = MyReport & { kind: ReportKind };

/** The person's own lost and found reports, newest first, with what they can do to each. */
export function MyReports() {
  const { m, date } = useI18n();
  const session = useSession()!;
  const [reports, setReports] = useState<Listed[] | null>(null);
  const list = useProblem();
  const action = useProblem();

  const load = () =>
    list.run(async () => {
      const [lost, found] = await Promise.all([
        session.request<Page<MyReport>>("GET", "/v1/me/lost-reports?limit=100"),
        session.request<Page<MyReport>>("GET", "/v1/me/found-reports?limit=100"),
      ]);
      const all = [...lost.items.map((r) => ({ ...r, kind: "lost" as const })), ...found.items.map((r) => ({ ...r, kind: "found" as const }))];
      setReports(all.sort((a, b) => b.createdAt.localeCompare(a.createdAt)));
    });
  useEffect(() => void load(), []);

  const renew = (report: Listed) =>
    action.run(async () => {
      const { expiresAt } = await session.request<{ expiresAt: string }>("POST", `/v1/safety/${report.kind}-reports/${report.id}/renew`);
      setReports((all) => all?.map((r) => (r.id === report.id ? { ...r, expiresAt } : r)) ?? null);
    });

  const resolve = (report: Listed, outcome: "reunited" | "closed") =>
    action.run(async () => {
      if (outcome === "closed" && !confirm(m.reports.closeConfirm)) return;
      await session.request("POST", `/v1/safety/${report.kind}-reports/${report.id}/resolve`, { outcome });
      await load();
    });

  return (
    <section aria-labelledby="reports-heading">
      <h1 id="reports-heading">{m.reports.heading}</h1>
      <a class="button" href="#/file">
        {m.reports.fileOne}
      </a>
      {list.problem && <ProblemNote problem={list.problem} />}
      {action.problem && <ProblemNote problem={action.problem} />}
      {reports === null ? (
        !list.problem && <p role="status">{m.common.loading}</p>
      ) : reports.length === 0 ? (
        <p>{m.reports.none}</p>
      ) : (
        <ul class="cards">
          {reports.map((report) => (
            <li key={report.id} class="card report" data-id={report.id}>
              <h2>
                <span class={`badge ${report.kind}`}>{m.kind[report.kind]}</span> {m.species[report.animal.species]}
                {report.animal.name && <> · {report.animal.name}</>}
              </h2>
              <p>
                <span class={`status ${report.status}`}>{m.status[report.status] ?? report.status}</span>
                {report.status === "open" && report.expiresAt && <> · {fill(m.reports.expires, { date: date(report.expiresAt) })}</>}
                {report.moderationState && <> · {m.reports.moderated}</>}
              </p>
              <p class="muted">{date(report.kind === "lost" ? report.lastSeenAt! : report.foundAt!)}</p>
              <p class="links">
                <a href={`#/reports/${report.kind}/${report.id}`}>{m.reports.open}</a>
                <a href={report.shareUrl} target="_blank" rel="noopener">
                  {m.reports.share}
                </a>
                <a href={report.flyerUrl} target="_blank" rel="noopener">
                  {m.reports.flyer}
                </a>
                <a href={report.shortUrl}>{m.reports.shortLink}</a>
              </p>
              {report.status === "open" && (
                <div class="actions">
                  <button type="button" onClick={() => renew(report)} disabled={action.busy}>
                    {m.reports.renew}
                  </button>
                  {report.kind === "lost" && (
                    <button type="button" class="secondary" onClick={() => resolve(report, "reunited")} disabled={action.busy}>
                      {m.reports.reunited}
                    </button>
                  )}
                  <button type="button" class="secondary" onClick={() => resolve(report, "closed")} disabled={action.busy}>
                    {m.reports.close}
                  </button>
                </div>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
