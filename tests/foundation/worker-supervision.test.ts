import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { MAINTENANCE_PRUNE_TASK } from "../../jobs/scheduled/task.js";
import { createPool } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { startWorker } from "../../lib/worker.js";
import { useTestStack } from "../helpers/harness.js";
import { eventually } from "../helpers/stream.js";

const h = useTestStack();

/**
 * Makes graphile-worker's job completion (a delete from its jobs table) fail,
 * as it does when Postgres stops while a job ends, but deterministically.
 */
async function refuseJobCompletion(): Promise<void> {
  await h.db.pool.query(`
    create or replace function public.refuse_job_completion() returns trigger
    language plpgsql as $$ begin raise exception 'job completion refused by the test'; end $$;
    create trigger refuse_job_completion before delete on graphile_worker._private_jobs
      for each row execute function public.refuse_job_completion();`);
}

async function allowJobCompletion(): Promise<void> {
  await h.db.pool.query(`drop trigger if exists refuse_job_completion on graphile_worker._private_jobs`);
}

/** Jobs of a task still in the queue: those whose payload has `payloadKey`, or those no worker holds. */
async function jobsLeft(task: string, which: { payloadKey: string } | { unlocked: true }): Promise<number> {
  const { rows } = await h.db.pool.query<{ n: number }>(
    `select count(*)::int as n from graphile_worker._private_jobs j
     join graphile_worker._private_tasks t on t.id = j.task_id
     where t.identifier = $1 and ($2::text is null or j.payload::jsonb ? $2::text) and (not $3::boolean or j.locked_at is null)`,
    [task, "payloadKey" in which ? which.payloadKey : null, "unlocked" in which],
  );
  return rows[0]!.n;
}

describe("a worker whose job completion fails goes on running jobs", () => {
  it("replaces the runner whose pool stopped on the refused completion, and the next job runs and completes", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const pool = createPool({ connectionString: h.db.url, applicationName: "supervision-test", logger });
    const ran: string[] = [];
    const worker = await startWorker({
      pool,
      logger,
      concurrency: 1,
      pollInterval: 100,
      taskList: { supervision_probe: async (payload) => void ran.push((payload as { step: string }).step) },
    });
    try {
      await refuseJobCompletion();
      await pool.query(`select graphile_worker.add_job('supervision_probe', '{"step": "refused", "refused": true}'::json)`);
      await eventually(async () => (worker.restarts >= 1 ? true : undefined), 20_000);
      expect(ran).toEqual(["refused"]);
      expect(lines.some((l) => l.msg === "worker: runner stopped without being asked; starting a new one")).toBe(true);

      await allowJobCompletion();
      await pool.query(`select graphile_worker.add_job('supervision_probe', '{"step": "after", "after": true}'::json)`);
      await eventually(async () => ((await jobsLeft("supervision_probe", { payloadKey: "after" })) === 0 ? true : undefined), 20_000);
      expect(ran).toEqual(["refused", "after"]);
    } finally {
      await allowJobCompletion();
      await worker.stop();
      await pool.end();
    }
    // stop() is final: no runner is started after it, whatever the last one did. Kept: a second
    // in which nothing may happen has no condition to wait on.
    const restartsAtStop = worker.restarts;
    await new Promise((r) => setTimeout(r, 1_000));
    expect(worker.restarts).toBe(restartsAtStop);
  });

  it("the notifier process survives it: same pid, its scheduled jobs run again once completions work, and every row is published", async () => {
    // A notifier that runs only the scheduled family, beside the relay that publishes.
    const relay = await h.stack.start("relay");
    const worker = await h.stack.start("notifier", { NOTIFIER_JOB_FAMILIES: "scheduled", NOTIFIER_CONSUME: "false" });
    await refuseJobCompletion();
    // One of the scheduled jobs, queued by hand rather than by its hourly cron. The rows below
    // announce themselves to nobody (no wake-up on the bus): the relay's poll publishes them.
    const queueRelayJob = () => h.db.pool.query(`select graphile_worker.add_job($1)`, [MAINTENANCE_PRUNE_TASK]);
    try {
      await h.db.pool.query(
        `insert into outbox_event (type, payload) select $1, jsonb_build_object('n', n) from generate_series(1, 50) n`,
        [EventType.AnimalLostReported],
      );
      await queueRelayJob();
      await worker.waitForLog((l) => l.msg === "worker: runner stopped without being asked; starting a new one", 20_000);
    } finally {
      await allowJobCompletion();
    }
    await worker.waitForLog((l) => l.msg === "worker: runner replaced", 30_000);
    await h.db.pool.query(
      `insert into outbox_event (type, payload) select $1, jsonb_build_object('n', n) from generate_series(51, 100) n`,
      [EventType.AnimalLostReported],
    );
    await queueRelayJob();
    await eventually(async () => {
      const { rows } = await h.db.pool.query<{ n: number }>(`select count(*)::int as n from outbox_event where published_at is null`);
      return rows[0]!.n === 0 ? true : undefined;
    }, 20_000);
    // The replaced runner takes new scheduled jobs and completes them (the refused one stays locked by
    // the stopped pool until graphile-worker's lock timeout).
    await eventually(async () => ((await jobsLeft(MAINTENANCE_PRUNE_TASK, { unlocked: true })) === 0 ? true : undefined), 20_000);
    expect(worker.child.exitCode).toBeNull();
    expect(relay.child.exitCode).toBeNull();
    expect([...worker.lines, ...relay.lines].filter((l) => (l.level as number) >= 60)).toEqual([]);
  });
});
