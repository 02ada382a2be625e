import { useState } from "preact/hooks";
import type { MatchReason, MatchStatus } from "../../../lib/matches";
import type { Page, Problem } from "../api";
import { Id, ProblemNote, toProblem, useApi } from "../ui";

/** A match as the report listings show it (GET /v1/safety/{lost,found}-reports/{id}/matches). */
interface ReportMatch {
  id: string;
  kind: string;
  targetId: string;
  score: number;
  reasons: MatchReason[];
  distanceKm: number;
  status: MatchStatus;
}

/**
 * A lost or found report's matches with their reasons, opened from its
 * moderation item: a moderator judging a report sees what the matcher made of it.
 */
export function ReportMatches(props: { targetType: "lost_report" | "found_report"; targetId: string }) {
  const { request } = useApi();
  const [matches, setMatches] = useState<ReportMatch[] | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const path = props.targetType === "lost_report" ? "lost-reports" : "found-reports";

  const load = async () => {
    setProblem(null);
    try {
      setMatches((await request<Page<ReportMatch>>("GET", `/v1/safety/${path}/${props.targetId}/matches?limit=20`)).items);
    } catch (err) {
      setProblem(toProblem(err));
    }
  };

  if (problem) return <ProblemNote problem={problem} />;
  if (!matches) {
    return (
      <button type="button" class="link" onClick={load}>
        Matches
      </button>
    );
  }
  if (matches.length === 0) return <div class="muted">no matches</div>;
  return (
    <table class="matches" aria-label="Matches">
      <tbody>
        {matches.map((m) => (
          <tr key={m.id} data-match={m.id}>
            <td>{Math.round(m.score * 100)} %</td>
            <td>
              {m.kind} <Id value={m.targetId} />
            </td>
            <td>{m.reasons.join(", ") || "—"}</td>
            <td>{m.distanceKm} km</td>
            <td>
              <span class={`badge ${m.status}`}>{m.status}</span>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
