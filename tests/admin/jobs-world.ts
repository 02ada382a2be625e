import pg from "pg";
import { pino } from "pino";
import { createPool } from "../../lib/db.js";
import { startWorker, type SupervisedWorker } from "../../lib/worker.js";
import { eventually } from "../helpers/stream.js";

/** Test tasks, run by this file's own graphile-worker runner. */
export const THROWS = "jobs_test__throws";
export const HELD = "jobs_test__held";
export const OK = "jobs_test__ok";
/** No runner has this task: its jobs stay queued. */
export const NOBODY = "jobs_test__nobody";
export const CRON_ITEM = "jobs_test__yearly";

/** The error the failing task throws: longer than the listing shows. */
export const LONG_ERROR = `the upstream refused: ${"x".repeat(5000)}`;

/** A payload with every kind of detail the listing must mask. */
export const SENSITIVE_PAYLOAD = {
  reportId: "report-1",
  fromContact: "finder@example.com",
  message: "I have your dog, call me",
  location: { lat: 52.520008, lon: 13.404954 },
  lat: 52.520008,
  phone: "+49 30 1234567",
};

export interface JobWorld {
  ids: { failed: number; running: number; scheduled: number; queued: number };
  /** The job ids each test task completed. */
  completed: number[];
  /** Lets the held job finish. */
  release(): void;
  /** The throwing task succeeds from now on. */
  heal(): void;
  stop(): Promise<void>;
}

async function addJob(db: pg.Pool, task: string, payload: unknown, options: { maxAttempts?: number; runAtSeconds?: number } = {}): Promise<number> {
  const { rows } = await db.query<{ id: string }>(
    `select id from graphile_worker.add_job($1::text, $2::json, run_at => now() + make_interval(secs => $3::double precision), max_attempts => $4::int)`,
    [task, JSON.stringify(payload), options.runAtSeconds ?? 0, options.maxAttempts ?? 25],
  );
  return Number(rows[0]!.id);
}

async function stateOf(db: pg.Pool, id: number): Promise<{ locked: boolean; failed: boolean; attempts: number } | undefined> {
  const { rows } = await db.query<{ locked: boolean; failed: boolean; attempts: number }>(
    `select locked_at is not null as locked, attempts >= max_attempts as failed, attempts from graphile_worker.jobs where id = $1`,
    [id],
  );
  return rows[0];
}

/**
 * A real graphile-worker runner on `databaseUrl` and one job in each state:
 * failed (a task that throws until its 2 attempts are used up), running (a
 * task awaiting a promise the test releases), scheduled (due in an hour) and
 * queued (due 90 s ago, for a task no runner has). The runner also registers
 * a yearly crontab item.
 */
export async function startJobWorld(db: pg.Pool, databaseUrl: string, options: { error?: string } = {}): Promise<JobWorld> {
  const logger = pino({ level: "silent" });
  const pool = createPool({ connectionString: databaseUrl, applicationName: "jobs-test-worker", logger });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let healthy = false;
  const completed: number[] = [];
  const worker: SupervisedWorker = await startWorker({
    pool,
    logger,
    concurrency: 3,
    pollInterval: 100,
    crontab: `0 4 1 1 * ${OK} ?id=${CRON_ITEM}`,
    taskList: {
      [THROWS]: async (_payload, helpers) => {
        if (!healthy) throw new Error(options.error ?? LONG_ERROR);
        completed.push(Number(helpers.job.id));
      },
      [HELD]: async (_payload, helpers) => {
        await held;
        completed.push(Number(helpers.job.id));
      },
      [OK]: async (_payload, helpers) => void completed.push(Number(helpers.job.id)),
    },
  });
  const running = await addJob(db, HELD, { reportId: "report-2" });
  const scheduled = await addJob(db, OK, { reportId: "report-3" }, { runAtSeconds: 3600 });
  const queued = await addJob(db, NOBODY, SENSITIVE_PAYLOAD, { runAtSeconds: -90 });
  const failed = await addJob(db, THROWS, { reportId: "report-4" }, { maxAttempts: 2 });
  // The second attempt waits out graphile-worker's backoff (exp(1) ≈ 2.7 s): the test moves it to now.
  await eventually(async () => ((await stateOf(db, failed))?.attempts === 1 && !(await stateOf(db, failed))?.locked ? true : undefined), 20_000, 100);
  await db.query(`select from graphile_worker.reschedule_jobs(array[$1::bigint], run_at => now())`, [failed]);
  await eventually(async () => ((await stateOf(db, failed))?.failed && !(await stateOf(db, failed))?.locked ? true : undefined), 20_000, 100);
  await eventually(async () => ((await stateOf(db, running))?.locked ? true : undefined), 20_000, 100);
  return {
    ids: { failed, running, scheduled, queued },
    completed,
    release,
    heal: () => void (healthy = true),
    async stop() {
      release();
      await worker.stop();
      await pool.end();
    },
  };
}
