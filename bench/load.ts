import { spawn } from "node:child_process";
import path from "node:path";
import { summarize, type Summary } from "./stats.js";

const root = path.resolve(import.meta.dirname, "..");
/** Distinguishes this run's actors and message ids from earlier runs'. */
export const runId = Date.now().toString(36);
let loads = 0;

export interface LoadResult {
  latency: Summary;
  statuses: Record<string, number>;
  sent: number;
  late: number;
  raw: { latenciesMs: number[]; statuses: number[] };
}

/** Runs bench/loadgen.ts in its own process with the given plan. */
export async function load(plan: Record<string, unknown>): Promise<LoadResult> {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(root, "bench/loadgen.ts"), JSON.stringify({ runId: `${runId}-${++loads}`, ...plan })], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  await new Promise((resolve) => child.once("exit", resolve));
  const raw = JSON.parse(out) as { latenciesMs: number[]; statuses: number[]; sent: number; late: number };
  const statuses: Record<string, number> = {};
  for (const s of raw.statuses) statuses[s] = (statuses[s] ?? 0) + 1;
  return { latency: summarize(raw.latenciesMs), statuses, sent: raw.sent, late: raw.late, raw };
}

