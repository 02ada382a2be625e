/**
 * `npx tsx bench/trigger-probe.ts`: the outbox trigger's cost on its own.
 * The two-insert transaction, 10 clients, 5 s a round, interleaved so drift
 * in the machine falls on every variant alike: trigger-less copies; the
 * project's tables with the relay stopped (the trigger finds a waiting job
 * and skips add_job); and with the relay running (the relay locks its job
 * while it drains, so writers call add_job on the keyed row).
 */
import { createRawTables, rawWriteThroughput } from "./baselines.js";
import { log, startBenchStack } from "./stack.js";
import { round } from "./stats.js";

const rounds = Number(process.env.ROUNDS ?? 3);
const stack = await startBenchStack("ass_bench_trigger");
await createRawTables(stack.pool);
const figures: Record<string, number[]> = { raw: [], triggeredRelayIdle: [], triggeredRelayRunning: [], triggerOffRelayRunning: [] };
for (let r = 0; r < rounds; r++) {
  await stack.stopRelay();
  figures.raw!.push(round(await rawWriteThroughput(stack.pool, { clients: 10, seconds: 5 }), 0));
  figures.triggeredRelayIdle!.push(round(await rawWriteThroughput(stack.pool, { clients: 10, seconds: 5, triggered: true }), 0));
  await stack.restartRelay();
  figures.triggeredRelayRunning!.push(round(await rawWriteThroughput(stack.pool, { clients: 10, seconds: 5, triggered: true }), 0));
  // The relay still drains, woken by its 1 s heartbeat instead: what is left is the relay's own work.
  await stack.pool.query("alter table outbox_event disable trigger _500_queue_relay");
  figures.triggerOffRelayRunning!.push(round(await rawWriteThroughput(stack.pool, { clients: 10, seconds: 5, triggered: true }), 0));
  await stack.pool.query("alter table outbox_event enable trigger _500_queue_relay");
  log(`round ${r + 1}: ${JSON.stringify(figures)}`);
}
await stack.pool.query(`delete from outbox_event where payload ? 'rawBaseline'`);
console.log(JSON.stringify(figures));
await stack.stop();
