import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MASK } from "../../api/admin/outbox/mask.js";
import { STALE_FACTOR, summaryReader } from "../../api/admin/jobs/store.js";
import { loadApiConfig } from "../../lib/config.js";
import { Registry } from "../../lib/metrics.js";
import { sampleValue } from "../helpers/exposition.js";
import { admin, as, buildTestApi, devEnv } from "../helpers/app.js";
import { withFailingAuditInsert } from "../helpers/db.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { eventually } from "../helpers/stream.js";
import { CRON_ITEM, HELD, LONG_ERROR, NOBODY, OK, startJobWorld, THROWS, type JobWorld } from "./jobs-world.js";
import { registerWorkerJobMetrics } from "../../jobs/metrics.js";

// Counted on every request: these tests change jobs through the worker and SQL and read at once (the kept summary has its own tests below).
let t: Harness;
beforeAll(async () => {
  t = await startHarness({ API_JOBS_SUMMARY_MAX_AGE_MS: "0" });
});
afterAll(async () => {
  await t?.close();
});
let world: JobWorld;

beforeAll(async () => {
  world = await startJobWorld(t.db.pool, t.db.url);
}, 60_000);

afterAll(async () => {
  await world?.stop();
});

// Each request from its own address: the file makes more than the per-address limiter's burst.
let calls = 0;
const from = () => `10.7.${(calls >> 8) & 255}.${calls++ & 255}`;
const get = (url: string, headers = admin()) => t.api.app.inject({ url, headers, remoteAddress: from() });
const act = (id: number | string, action: "retry" | "fail", payload: unknown = { reason: "checked with the on-call" }, headers = admin()) =>
  t.api.app.inject({ method: "POST", url: `/v1/admin/jobs/${id}/${action}`, headers, payload: payload as object, remoteAddress: from() });

async function auditsOf(action: string, id: number) {
  const { rows } = await t.db.pool.query(
    `select actor_id as "actorId", object_type as "objectType", metadata from audit_event where action = $1 and object_id = $2 order by occurred_at`,
    [action, String(id)],
  );
  return rows;
}

async function jobRow(id: number) {
  const { rows } = await t.db.pool.query(`select attempts, max_attempts, run_at <= now() as due, last_error from graphile_worker.jobs where id = $1`, [id]);
  return rows[0];
}

describe("GET /v1/admin/jobs/summary counts each task's jobs by state", () => {
  it("counts a failed, a running, a scheduled and a queued job, with the oldest queued job's wait", async () => {
    const res = await get("/v1/admin/jobs/summary");
    expect(res.statusCode).toBe(200);
    const tasks = res.json().tasks as Array<Record<string, unknown>>;
    const of = (task: string) => tasks.find((row) => row.task === task);
    expect(of(THROWS)).toEqual({ task: THROWS, queued: 0, scheduled: 0, running: 0, failed: 1, oldestQueuedSeconds: 0 });
    expect(of(HELD)).toEqual({ task: HELD, queued: 0, scheduled: 0, running: 1, failed: 0, oldestQueuedSeconds: 0 });
    expect(of(OK)).toEqual({ task: OK, queued: 0, scheduled: 1, running: 0, failed: 0, oldestQueuedSeconds: 0 });
    expect(of(NOBODY)).toMatchObject({ task: NOBODY, queued: 1, scheduled: 0, running: 0, failed: 0 });
    expect(of(NOBODY)!.oldestQueuedSeconds).toBeGreaterThanOrEqual(90);
    expect(of(NOBODY)!.oldestQueuedSeconds).toBeLessThan(600);
  });

  it("says when its counts were read", async () => {
    const before = Date.now();
    const asOf = Date.parse((await get("/v1/admin/jobs/summary")).json().asOf);
    expect(asOf).toBeGreaterThanOrEqual(before - 1000);
    expect(asOf).toBeLessThanOrEqual(Date.now());
  });

  it("lists the crontab items a worker registered, with their last run", async () => {
    const cron = (await get("/v1/admin/jobs/summary")).json().cron;
    expect(cron).toContainEqual({ identifier: CRON_ITEM, knownSince: expect.any(String), lastRun: null });
  });

  it("is for platform admins only", async () => {
    expect((await get("/v1/admin/jobs/summary", as("someone"))).statusCode).toBe(403);
    expect((await get("/v1/admin/jobs", as("someone"))).statusCode).toBe(403);
    expect((await act(world.ids.failed, "retry", { reason: "x" }, as("someone"))).statusCode).toBe(403);
  });
});

describe("GET /v1/admin/jobs lists jobs of a state and/or task", () => {
  it("lists the failed job with its attempts and its last error cut at 2,000 characters", async () => {
    const res = await get(`/v1/admin/jobs?state=failed&task=${THROWS}`);
    expect(res.statusCode).toBe(200);
    const { items, nextCursor } = res.json();
    expect(nextCursor).toBeNull();
    expect(items).toEqual([
      {
        id: world.ids.failed,
        task: THROWS,
        state: "failed",
        attempts: 2,
        maxAttempts: 2,
        runAt: expect.any(String),
        lockedAt: null,
        lockedBy: null,
        lastError: expect.any(String),
        createdAt: expect.any(String),
        payload: { reportId: "report-4" },
      },
    ]);
    expect(items[0].lastError).toHaveLength(2000);
    expect(items[0].lastError).toBe(LONG_ERROR.slice(0, 2000));
  });

  it("lists the running job with the worker that holds it", async () => {
    const items = (await get("/v1/admin/jobs?state=running")).json().items;
    expect(items.map((i: { id: number }) => i.id)).toEqual([world.ids.running]);
    expect(items[0]).toMatchObject({ task: HELD, state: "running", attempts: 1, lockedAt: expect.any(String), lockedBy: expect.any(String) });
  });

  it("lists the scheduled job, and the queued one with its payload masked: no coordinates, contacts or message texts", async () => {
    expect((await get("/v1/admin/jobs?state=scheduled")).json().items.map((i: { id: number }) => i.id)).toEqual([world.ids.scheduled]);
    const [queued] = (await get("/v1/admin/jobs?state=queued")).json().items;
    expect(queued).toMatchObject({ id: world.ids.queued, task: NOBODY, state: "queued", attempts: 0, maxAttempts: 25 });
    expect(queued.payload).toEqual({ reportId: "report-1", fromContact: MASK, message: MASK, location: MASK, lat: MASK, phone: MASK });
    expect(JSON.stringify(queued)).not.toMatch(/finder@example|52\.52|13\.40|call me|1234567/);
  });

  it("shows one job with its last error", async () => {
    const res = await get(`/v1/admin/jobs/${world.ids.failed}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: world.ids.failed, state: "failed", lastError: LONG_ERROR.slice(0, 2000) });
    expect((await get("/v1/admin/jobs/999999999")).statusCode).toBe(404);
  });

  it("pages by id with a cursor that works only with the filter it was issued for", async () => {
    const first = await get("/v1/admin/jobs?limit=2");
    expect(first.statusCode).toBe(200);
    const { items, nextCursor } = first.json();
    expect(items).toHaveLength(2);
    expect(nextCursor).toEqual(expect.any(String));
    const second = (await get(`/v1/admin/jobs?limit=2&cursor=${nextCursor}`)).json();
    const all = [...items, ...second.items].map((i: { id: number }) => i.id);
    expect(all).toEqual([...all].sort((a, b) => a - b));
    expect(new Set(all).size).toBe(4);

    const other = await get(`/v1/admin/jobs?limit=2&state=queued&cursor=${nextCursor}`);
    expect(other.statusCode).toBe(400);
    expect(other.json()).toMatchObject({ type: expect.stringContaining("validation-failed"), errors: [{ path: "query.cursor" }] });
    expect((await get(`/v1/admin/jobs?task=${OK}&cursor=${nextCursor}`)).statusCode).toBe(400);
    expect((await get("/v1/admin/jobs?cursor=not-a-cursor")).statusCode).toBe(400);
  });

  it("refuses an unknown state or task with 400 naming the accepted values", async () => {
    const badState = await get("/v1/admin/jobs?state=stuck");
    expect(badState.statusCode).toBe(400);
    expect(badState.body).toMatch(/queued.*scheduled.*running.*failed/);

    const badTask = await get("/v1/admin/jobs?task=no_such__task");
    expect(badTask.statusCode).toBe(400);
    const detail = badTask.json().errors[0];
    expect(detail.path).toBe("query.task");
    // The queued tasks, the crontab items and any task with a job now.
    for (const task of ["notification__deliver", "photo__process", CRON_ITEM, THROWS, NOBODY]) expect(detail.message).toContain(task);
  });
});

describe("POST /v1/admin/jobs/{id}/retry and /fail", () => {
  it("refuses bad input with 400 and changes nothing: a malformed id, a missing or blank reason", async () => {
    for (const id of ["abc", "0", "-1", "1.5", "12345678901234567890"]) {
      expect((await act(id, "retry")).statusCode, id).toBe(400);
      expect((await get(`/v1/admin/jobs/${id}`)).statusCode, id).toBe(400);
    }
    for (const body of [{}, { reason: "" }, { reason: "   " }]) {
      expect((await act(world.ids.failed, "retry", body)).statusCode).toBe(400);
      expect((await act(world.ids.queued, "fail", body)).statusCode).toBe(400);
    }
    const noBody = await t.api.app.inject({ method: "POST", url: `/v1/admin/jobs/${world.ids.failed}/retry`, headers: admin(), remoteAddress: from() });
    expect(noBody.statusCode).toBe(400);
    expect(await jobRow(world.ids.failed)).toMatchObject({ attempts: 2, max_attempts: 2 });
    expect(await auditsOf("admin.job.retried", world.ids.failed)).toEqual([]);
  });

  it("answers 404 for an unknown job and 409 for a running one, for both actions", async () => {
    expect((await act(999999999, "retry")).statusCode).toBe(404);
    expect((await act(999999999, "fail")).statusCode).toBe(404);
    for (const action of ["retry", "fail"] as const) {
      const res = await act(world.ids.running, action);
      expect(res.statusCode).toBe(409);
      expect(res.json().detail).toContain("running");
    }
    // The wrong state for the action: a queued job is not retried, a failed one not failed again.
    expect((await act(world.ids.queued, "retry")).statusCode).toBe(409);
    expect((await act(world.ids.failed, "fail")).statusCode).toBe(409);
    expect(await auditsOf("admin.job.retried", world.ids.running)).toEqual([]);
  });

  it("changes nothing when the audit event cannot be written: the action and its audit commit together", async () => {
    const { rows } = await t.db.pool.query(`select id from graphile_worker.add_job($1, '{}'::json, run_at => now() + interval '1 hour')`, [NOBODY]);
    const id = Number(rows[0].id);
    const before = await jobRow(id);
    for (const action of ["retry", "fail"] as const) {
      const res = await withFailingAuditInsert(t.db.pool, () => act(id, action));
      expect(res.statusCode, res.body).toBe(500);
      expect(await jobRow(id)).toEqual(before);
    }
    await t.db.pool.query(`select graphile_worker.complete_jobs(array[$1::bigint])`, [id]);
  });

  it("fails a queued job for good, audited with the reason in the same transaction", async () => {
    const res = await act(world.ids.queued, "fail", { reason: "poison payload, see incident 12" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: world.ids.queued, state: "failed", attempts: 25, maxAttempts: 25, lastError: "failed by an operator: poison payload, see incident 12" });
    expect(await auditsOf("admin.job.failed", world.ids.queued)).toEqual([
      { actorId: "admin-1", objectType: "worker_job", metadata: { task: NOBODY, fromState: "queued", attempts: 0, reason: "poison payload, see incident 12" } },
    ]);
    const summary = (await get("/v1/admin/jobs/summary")).json().tasks.find((row: { task: string }) => row.task === NOBODY);
    expect(summary).toMatchObject({ queued: 0, failed: 1, oldestQueuedSeconds: 0 });
  });

  it("retries the failed job: attempts reset, due now; it then runs and completes", async () => {
    world.heal();
    const res = await act(world.ids.failed, "retry", { reason: "upstream fixed" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: world.ids.failed, attempts: 0, maxAttempts: 2 });
    expect(["queued", "running"]).toContain(res.json().state);
    expect(await auditsOf("admin.job.retried", world.ids.failed)).toEqual([
      { actorId: "admin-1", objectType: "worker_job", metadata: { task: THROWS, fromState: "failed", attempts: 2, reason: "upstream fixed" } },
    ]);
    await eventually(async () => (world.completed.includes(world.ids.failed) ? true : undefined), 20_000);
    await eventually(async () => ((await jobRow(world.ids.failed)) === undefined ? true : undefined), 20_000);
  });

  it("retries a scheduled job now, and it completes", async () => {
    const res = await act(world.ids.scheduled, "retry", { reason: "no need to wait" });
    expect(res.statusCode).toBe(200);
    expect(await auditsOf("admin.job.retried", world.ids.scheduled)).toHaveLength(1);
    await eventually(async () => (world.completed.includes(world.ids.scheduled) ? true : undefined), 20_000);
  });

  it("leaves the running job alone until its task ends, which completes it", async () => {
    expect(await jobRow(world.ids.running)).toBeDefined();
    world.release();
    await eventually(async () => ((await jobRow(world.ids.running)) === undefined ? true : undefined), 20_000);
    expect(world.completed).toContain(world.ids.running);
  });
});

describe("the worker processes' gauges: worker_jobs{task,state} and worker_job_oldest_queued_seconds{task}", () => {
  it("exports the same counts as the summary, every state of a task included, and the oldest queued job's wait", async () => {
    const registry = new Registry();
    registerWorkerJobMetrics(registry, t.db.pool);
    await t.db.pool.query(`select graphile_worker.add_job($1, '{}'::json, run_at => now() - interval '400 seconds')`, [NOBODY]);
    await t.db.pool.query(`select graphile_worker.add_job($1, '{}'::json, run_at => now() + interval '1 hour')`, [OK]);
    const text = await registry.metrics();
    const summary = (await get("/v1/admin/jobs/summary")).json().tasks as Array<Record<string, number | string>>;
    for (const row of summary) {
      for (const state of ["queued", "scheduled", "running", "failed"]) {
        expect(sampleValue(text, "worker_jobs", { task: String(row.task), state }), `${row.task} ${state}`).toBe(row[state]);
      }
    }
    expect(sampleValue(text, "worker_jobs", { task: NOBODY, state: "queued" })).toBe(1);
    expect(sampleValue(text, "worker_job_oldest_queued_seconds", { task: NOBODY })).toBeGreaterThanOrEqual(400);
    expect(sampleValue(text, "worker_jobs", { task: OK, state: "scheduled" })).toBe(1);
    expect(sampleValue(text, "worker_job_oldest_queued_seconds", { task: OK })).toBe(0);
  });
});

describe("the summary is counted at most once per API_JOBS_SUMMARY_MAX_AGE_MS and shared", () => {
  const PROBE = "summary_cache__probe";
  const probes = (summary: { tasks: Array<{ task: string; scheduled: number }> }) => summary.tasks.find((row) => row.task === PROBE)?.scheduled ?? 0;
  const addProbe = (key: string) =>
    t.db.pool.query(`select graphile_worker.add_job($1, '{}'::json, run_at => now() + interval '1 hour', job_key => $2)`, [PROBE, key]);

  afterAll(async () => {
    await t.db.pool.query(`select graphile_worker.remove_job(k) from unnest(array['probe-1', 'probe-2', 'probe-3']) k`);
  });

  it("keeps 2 s unless set", () => {
    const { API_JOBS_SUMMARY_MAX_AGE_MS: _set, ...unset } = devEnv(t.db.url, t.bus.url);
    expect(loadApiConfig(unset).API_JOBS_SUMMARY_MAX_AGE_MS).toBe(2_000);
  });

  it("answers the kept counts and their asOf until they are older than the setting, and counts once for concurrent requests", async () => {
    let clock = 1_800_000_000_000;
    const reader = summaryReader(t.db.pool, 5_000, () => clock);
    const [first, second, third] = await Promise.all([reader.read(), reader.read(), reader.read()]);
    expect(second).toBe(first);
    expect(third).toBe(first);
    expect(first.asOf).toBe(new Date(clock).toISOString());
    await addProbe("probe-1");
    clock += 4_999;
    expect(await reader.read()).toBe(first);
    expect(probes(first)).toBe(0);
  });

  it("answers counts older than the setting while it counts again, then the new ones; much older, it waits for the new count", async () => {
    let clock = 1_800_000_000_000;
    const reader = summaryReader(t.db.pool, 5_000, () => clock);
    const first = await reader.read();
    await addProbe("probe-2");
    clock += 5_000;
    expect(await reader.read()).toBe(first);
    const recounted = await eventually(async () => {
      const summary = await reader.read();
      return summary === first ? undefined : summary;
    }, 10_000);
    expect(recounted.asOf).toBe(new Date(clock).toISOString());
    expect(probes(recounted)).toBe(probes(first) + 1);
    await addProbe("probe-3");
    clock += STALE_FACTOR * 5_000;
    const waited = await reader.read();
    expect(probes(waited)).toBe(probes(recounted) + 1);
    expect(waited.asOf).toBe(new Date(clock).toISOString());
  });

  it("counts again after invalidate (a retry or fail), whatever the kept counts' age", async () => {
    const reader = summaryReader(t.db.pool, 60_000);
    const kept = await reader.read();
    reader.invalidate();
    const fresh = await reader.read();
    expect(fresh).not.toBe(kept);
    expect(Date.parse(fresh.asOf)).toBeGreaterThanOrEqual(Date.parse(kept.asOf));
  });

  it("shows a retry through the API at once, with counts kept for a minute", async () => {
    const api = await buildTestApi(devEnv(t.db.url, t.bus.url, { API_JOBS_SUMMARY_MAX_AGE_MS: "60000" }));
    try {
      const summary = async () => (await api.app.inject({ url: "/v1/admin/jobs/summary", headers: admin(), remoteAddress: from() })).json();
      const { rows } = await t.db.pool.query<{ id: string }>(
        `select (graphile_worker.add_job($1, '{}'::json, run_at => now() + interval '1 hour', job_key => 'probe-1')).id::text as id`,
        [PROBE],
      );
      const before = await summary();
      expect(await summary()).toEqual(before);
      const res = await api.app.inject({ method: "POST", url: `/v1/admin/jobs/${rows[0]!.id}/fail`, headers: admin(), payload: { reason: "probe" }, remoteAddress: from() });
      expect(res.statusCode, res.body).toBe(200);
      const after = await summary();
      expect(Date.parse(after.asOf)).toBeGreaterThan(Date.parse(before.asOf));
      expect(after.tasks.find((row: { task: string }) => row.task === PROBE)).toMatchObject({ failed: 1 });
    } finally {
      await api.close();
    }
  });
});
