import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { machine, startBenchStack, type BenchStack } from "./stack.js";

/** A scenario's table rows: [scenario, figure, baseline from the same run, target, note]. */
export type ScenarioRow = [scenario: string, figure: string, baseline: string, target: string, note: string];
export type Scenario = (stack: BenchStack, options: { quick?: boolean }) => Promise<{ rows: ScenarioRow[]; results: Record<string, unknown> }>;

/** Whether the module at `moduleUrl` is the script node was started with (not imported by bench/run.ts). */
function isMainModule(moduleUrl: string): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

/**
 * Runs one scenario of `npm run bench` on its own stack when its file is
 * started directly (`npm run bench:share` and the like), printing its rows
 * as a Markdown table and its raw results as JSON, for bench/results/.
 * BENCH_QUICK=1 runs the short version.
 */
export async function runScenarioScript(moduleUrl: string, title: string, database: string, scenario: Scenario): Promise<void> {
  if (!isMainModule(moduleUrl)) return;
  const quick = process.env.BENCH_QUICK === "1";
  const stack = await startBenchStack(database);
  try {
    const { rows, results } = await scenario(stack, { quick });
    console.log(`${title}, ${new Date().toISOString()}, ${JSON.stringify(machine())}${quick ? ", BENCH_QUICK=1" : ""}`);
    for (const row of [["scenario", "figure", "baseline (same run)", "target", "note"], ...rows]) console.log(`| ${row.join(" | ")} |`);
    console.log(JSON.stringify(results, null, 2));
  } finally {
    await stack.stop();
  }
}
