import { withTransaction, type Pool, type Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import type { Logger } from "../../lib/logger.js";
import { SUGGESTION_THRESHOLD, type MatchKind } from "../../lib/matches.js";
import { recordEventBatch } from "../../lib/outbox.js";
import { partnerIdOf, readFoundReportPartner } from "../../lib/partners.js";
import { MATCH_SUBJECT_TASK, type MatchSubjectRef } from "./task.js";
import type { QueuedJob } from "../queued-job.js";
import type { ReactionCheck } from "../reaction-checks.js";
import {
  alertsOwner, CANDIDATE_LOST_AFTER_MS, CANDIDATE_LOST_BEFORE_MS, CANDIDATE_RADIUS_KM, distanceKm, isSuggested, MICROCHIP_EQUAL_CONTRIBUTION, type MatchResult, scoreMatch,
} from "./score.js";
import {
  findCandidates, listedSuggestions, loadSide, lostReportsWithMatchWorkSql, upsertSuggestions, withdrawSuggestions, type MatchSide, type ScoredPair,
} from "./store.js";

const matchKindOf = (side: MatchSide): MatchKind => (side.ref.kind === "sighting" ? "sighting" : "found_report");

const CANDIDATE_WINDOW = { radiusM: CANDIDATE_RADIUS_KM * 1000, lostAfterMs: CANDIDATE_LOST_AFTER_MS, lostBeforeMs: CANDIDATE_LOST_BEFORE_MS };

/** The best score among a found report's or sighting's candidate lost reports. */
async function bestScoreOf(client: Queryable, foundSide: MatchSide): Promise<number> {
  const lostReports = await findCandidates(client, foundSide, CANDIDATE_WINDOW);
  return Math.max(0, ...lostReports.map((lost) => scoreMatch(lost, foundSide).score));
}

/** Equal chips, or one keystroke apart, when the microchip is among a pair's reasons. */
const chipOf = (result: MatchResult): "equal" | "near" | undefined =>
  !result.reasons.includes("microchip") ? undefined : result.contributions.microchip === MICROCHIP_EQUAL_CONTRIBUTION ? "equal" : "near";

/**
 * Matches one report or sighting against its candidates, in one transaction:
 * scores each pair (score.ts), keeps those from the threshold up that are
 * close to the best candidate of their found report or sighting, withdraws
 * this side's suggestions that fell below it, and records a match_suggested
 * event for each pair suggested for the first time. A re-run (replay, PATCH,
 * new photo) updates scores and suggests nothing twice; a side that is closed
 * or moderated suggests nothing. Each event says whether the lost report's owner
 * is alerted at once (alertsOwner) or hears of it in the daily "N possible
 * matches" (notifier/handlers.ts). After a commit that suggested something it
 * calls wakeRelay (lib/bus.ts relayWaker); without it, the relay's poll
 * publishes the events.
 */
export function createMatcher({ pool, logger, wakeRelay }: { pool: Pool; logger: Logger; wakeRelay?: () => void }) {
  return async (ref: MatchSubjectRef): Promise<void> => {
    const started = performance.now();
    const outcome = await withTransaction(pool, async (client) => {
      const side = await loadSide(client, ref);
      if (!side || !side.eligible) return { candidates: 0, suggested: 0 };
      const candidates = await findCandidates(client, side, CANDIDATE_WINDOW);
      const scored = candidates.map((candidate) => {
        const [lost, other] = side.ref.kind === "lost" ? [side, candidate] : [candidate, side];
        return { lost, other, result: scoreMatch(lost, other) };
      });
      // The best of the found side's candidates: here, unless this side is the lost report.
      const bestHere = side.ref.kind === "lost" ? null : Math.max(0, ...scored.map((s) => s.result.score));
      const pairs: Array<ScoredPair & { lost: MatchSide; other: MatchSide; rawScore: number; microchip: "equal" | "near" | undefined; gapHours: number }> = [];
      for (const { lost, other, result } of scored) {
        if (result.score < SUGGESTION_THRESHOLD) continue;
        if (!isSuggested(result.score, bestHere ?? (await bestScoreOf(client, other)))) continue;
        pairs.push({
          lost,
          other,
          lostReportId: lost.ref.id,
          kind: matchKindOf(other),
          targetId: other.ref.id,
          score: Math.round(result.score * 1000) / 1000,
          reasons: result.reasons,
          distanceM: Math.round(distanceKm(lost.point, other.point) * 1000),
          rawScore: result.score,
          microchip: chipOf(result),
          gapHours: Math.max(0, Math.round((other.at.getTime() - lost.at.getTime()) / 360_000) / 10),
        });
      }
      await withdrawSuggestions(client, ref, pairs);
      const inserted = await upsertSuggestions(client, pairs);
      // The owner is alerted at once only when a new suggestion stands clearly ahead of the
      // others in that lost report's listing: one indexed read for all of this run's new ones.
      const listed = await listedSuggestions(client, inserted.map((row) => row.lostReportId));
      const events = [];
      for (const row of inserted) {
        const pair = pairs.find((p) => p.lostReportId === row.lostReportId && p.targetId === row.targetId)!;
        // A shelter's animal: the owner is told where it is (only partners' found reports, so one read for those alone).
        const partner = row.kind === "found_report" && partnerIdOf(pair.other.reporterId) ? await readFoundReportPartner(client, row.targetId) : null;
        const bestOther = Math.max(0, ...listed.filter((l) => l.lostReportId === row.lostReportId && l.targetId !== row.targetId).map((l) => l.score));
        events.push({
          matchId: row.id,
          lostReportId: row.lostReportId,
          lostReporterId: pair.lost.reporterId,
          kind: row.kind,
          targetId: row.targetId,
          targetReporterId: pair.other.reporterId,
          score: pair.score,
          reasons: pair.reasons,
          distanceM: pair.distanceM,
          gapHours: pair.gapHours,
          ownerAlert: alertsOwner(pair.rawScore, bestOther, pair.microchip === "equal"),
          ...(pair.microchip ? { microchip: pair.microchip } : {}),
          ...(partner ? { partner } : {}),
        });
      }
      await recordEventBatch(client, EventType.MatchSuggested, events);
      return { candidates: candidates.length, suggested: inserted.length };
    });
    if (outcome.suggested > 0) wakeRelay?.();
    logger.info({ subject: ref, ...outcome, ms: Math.round(performance.now() - started) }, "matching: subject matched");
  };
}

type LostReportMatchJob = QueuedJob<typeof MATCH_SUBJECT_TASK> & { payload: { kind: "lost" } };

const isLostReportMatch = (job: QueuedJob): job is LostReportMatchJob => job.task === MATCH_SUBJECT_TASK && job.payload.kind === "lost";

/**
 * The consumer's check of new lost reports' matching jobs: dropped when they
 * would find nothing to do, no found report or sighting in the candidate
 * window and no suggestion to rescore or withdraw
 * (store.lostReportsWithMatchWorkSql). Most new lost reports have none near
 * them, and each such job cost the notifier a queue round trip, a
 * transaction and three statements: with it, 200–300 creates/s held on a
 * 2-core VM; without, 500 (`npm run bench:write-path`). Nothing is missed: a
 * found report or sighting recorded after this check is matched by its own
 * job, which runs after both commits and finds this lost report among its
 * candidates.
 */
export const idleMatchCheck: ReactionCheck<LostReportMatchJob> = {
  name: "idle-matches",
  applies: isLostReportMatch,
  keyOf: (job) => job.payload.id,
  sql: (jobs, param) => ({
    needed: lostReportsWithMatchWorkSql(param(jobs.map((job) => job.payload.id), "uuid[]"), {
      radiusM: param(CANDIDATE_WINDOW.radiusM, "double precision"),
      lostAfterS: param(CANDIDATE_WINDOW.lostAfterMs / 1000, "double precision"),
      lostBeforeS: param(CANDIDATE_WINDOW.lostBeforeMs / 1000, "double precision"),
    }),
  }),
};
