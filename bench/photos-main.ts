/**
 * The photo scenario alone, on a stack of its own (database `ass_bench_photos`):
 * `npx tsx bench/photos-main.ts`, BENCH_QUICK=1 for the short run. Prints the
 * rows as bench/run.ts's table does, then the results as JSON.
 */
import { photoScenario } from "./photos.js";
import { machine, startBenchStack } from "./stack.js";

const quick = process.env.BENCH_QUICK === "1";
const stack = await startBenchStack("ass_bench_photos");
try {
  const { rows, results } = await photoScenario(stack, { quick });
  for (const row of [["scenario", "figure", "target", "note"], ...rows]) console.log(`| ${row.join(" | ")} |`);
  console.log(JSON.stringify({ machine: machine(), quick, ...results }, null, 2));
} finally {
  await stack.stop();
}
