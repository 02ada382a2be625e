/**
 * Refits the scorer's weights from owners' decisions: each confirmed match is a true pair,
 * each dismissed one a false pair. It reports how the current and the refitted weights do
 * on a held-out quarter of the decisions and prints the refitted weights; it changes nothing.
 * Adopting them is a code change to DEFAULT_WEIGHTS (jobs/matching/score.ts), reviewed
 * with these figures. docs/operations.md says when to run it.
 *
 *   DATABASE_URL=… npm run matching:refit [-- --lambda 1 --min 200]
 *
 * It refuses with fewer than MIN_DECISIONS decisions: below that, the held-out quarter is
 * about 50 pairs and a precision measured on it moves by ±0.1 from chance alone.
 */
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { createPool, type Queryable } from "../../lib/db.js";
import { DEFAULT_WEIGHTS, matchEvidence, type MatchSubject, type MatchWeights, SUGGESTION_THRESHOLD, weighEvidence } from "../../jobs/matching/score.js";
import { loadSide } from "../../jobs/matching/store.js";
import { fitWeights } from "./fit.js";

export const MIN_DECISIONS = 200;
/** One decision in this many is held out; which ones is fixed by the match id, so a re-run splits alike. */
const HELD_OUT_EVERY = 4;

export interface Decision {
  /** The match's id: it decides the held-out split. */
  id: string;
  lost: MatchSubject;
  other: MatchSubject;
  confirmed: boolean;
}

export class TooFewDecisions extends Error {
  constructor(readonly decisions: number, readonly needed: number) {
    super(`refusing to refit: ${decisions} owner decisions (confirmed or dismissed matches), at least ${needed} are needed`);
  }
}

export interface HeldOutFigures {
  /** Confirmed pairs these weights still suggest (score from the threshold up), of all confirmed. */
  recall: number;
  /** Confirmed pairs among those they suggest. */
  precision: number;
}

export interface RefitReport {
  decisions: number;
  confirmed: number;
  fitted: number;
  heldOut: number;
  weights: MatchWeights;
  current: HeldOutFigures;
  refitted: HeldOutFigures;
}

/** A stable split: the last hex digit of the id. */
const isHeldOut = (id: string) => Number.parseInt(id.replace(/[^0-9a-f]/gi, "").slice(-1) || "0", 16) % HELD_OUT_EVERY === 0;

function figures(decisions: Decision[], weights: MatchWeights): HeldOutFigures {
  let suggested = 0;
  let hits = 0;
  const confirmed = decisions.filter((d) => d.confirmed).length;
  for (const d of decisions) {
    if (weighEvidence(matchEvidence(d.lost, d.other), weights).score < SUGGESTION_THRESHOLD) continue;
    suggested++;
    if (d.confirmed) hits++;
  }
  return { recall: confirmed === 0 ? 0 : hits / confirmed, precision: suggested === 0 ? 0 : hits / suggested };
}

/** Fits on three quarters of the decisions and measures both weight sets on the rest. */
export function refit(decisions: Decision[], { lambda = 1, minDecisions = MIN_DECISIONS }: { lambda?: number; minDecisions?: number } = {}): RefitReport {
  if (decisions.length < minDecisions) throw new TooFewDecisions(decisions.length, minDecisions);
  const heldOut = decisions.filter((d) => isHeldOut(d.id));
  const fitted = decisions.filter((d) => !isHeldOut(d.id));
  const weights = fitWeights(fitted.map((d) => ({ evidence: matchEvidence(d.lost, d.other), isTrue: d.confirmed })), lambda);
  return {
    decisions: decisions.length,
    confirmed: decisions.filter((d) => d.confirmed).length,
    fitted: fitted.length,
    heldOut: heldOut.length,
    weights,
    current: figures(heldOut, DEFAULT_WEIGHTS),
    refitted: figures(heldOut, weights),
  };
}

/** Every confirmed or dismissed match whose two sides still exist, read as the matcher reads them. */
export async function loadDecisions(client: Queryable): Promise<Decision[]> {
  const { rows } = await client.query<{ id: string; status: string; lostReportId: string; kind: string; targetId: string }>(
    `select id, status, lost_report_id as "lostReportId", kind, target_id as "targetId"
       from safety_match where status in ('confirmed', 'dismissed') order by id`,
  );
  const decisions: Decision[] = [];
  for (const row of rows) {
    const lost = await loadSide(client, { kind: "lost", id: row.lostReportId });
    const other = await loadSide(client, { kind: row.kind === "sighting" ? "sighting" : "found", id: row.targetId });
    if (lost && other) decisions.push({ id: row.id, lost, other, confirmed: row.status === "confirmed" });
  }
  return decisions;
}

export function formatRefit(r: RefitReport): string {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const line = (f: HeldOutFigures) => `recall ${pct(f.recall)}, precision ${pct(f.precision)}`;
  return [
    `${r.decisions} decisions (${r.confirmed} confirmed); fitted on ${r.fitted}, measured on ${r.heldOut} held out`,
    `  current weights (DEFAULT_WEIGHTS): ${line(r.current)}`,
    `  refitted weights:                  ${line(r.refitted)}`,
    "Nothing was changed. To adopt them, put these in DEFAULT_WEIGHTS (jobs/matching/score.ts) with the figures above:",
    JSON.stringify(r.weights).replace(/"(\w+)":/g, "$1: ").replace(/,/g, ", "),
  ].join("\n");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { lambda: { type: "string", default: "1" }, min: { type: "string", default: String(MIN_DECISIONS) } } });
  const url = process.env.DATABASE_URL;
  if (!url) {
    console.error("DATABASE_URL is required");
    process.exit(2);
  }
  const pool = createPool({ connectionString: url, max: 1, applicationName: "matching-refit", logger: pino({ level: "warn" }) });
  try {
    const decisions = await loadDecisions(pool);
    console.log(formatRefit(refit(decisions, { lambda: Number(values.lambda), minDecisions: Math.max(MIN_DECISIONS, Number(values.min)) })));
  } catch (error) {
    if (!(error instanceof TooFewDecisions)) throw error;
    console.error(error.message);
    process.exitCode = 1;
  } finally {
    await pool.end();
  }
}
