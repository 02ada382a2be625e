import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

const exec = promisify(execFile);
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

async function runTask(script: string, args: string[]): Promise<{ code: number; out: Record<string, any> }> {
  try {
    const { stdout } = await exec(process.execPath, ["--import", "tsx", `tasks/${script}`, ...args], {
      env: { ...process.env, DATABASE_URL: db.url },
    });
    return { code: 0, out: JSON.parse(stdout) };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, out: e.stdout ? JSON.parse(e.stdout) : {} };
  }
}

async function seedReport(): Promise<string> {
  const { rows } = await db.pool.query(
    `insert into safety_lost_report (reporter_id, species, last_seen_at, location, coarse_location)
     values ('owner-1', 'cat', now(), 'SRID=4326;POINT(2.35 48.85)', 'SRID=4326;POINT(2.35 48.85)') returning id`,
  );
  return rows[0].id;
}

describe("cancel-lost-report is a dry run unless --execute is given", () => {
  it("shows the change and writes nothing without --execute", async () => {
    const id = await seedReport();
    const { code, out } = await runTask("cancel-lost-report.ts", ["--report", id, "--ticket", "INC-1", "--operator", "op-1"]);
    expect(code).toBe(0);
    expect(out).toMatchObject({ dryRun: true, wouldChange: { reportId: id, from: "open", to: "cancelled" } });
    const { rows } = await db.pool.query(`select status from safety_lost_report where id = $1`, [id]);
    expect(rows[0].status).toBe("open");
    const audit = await db.pool.query(`select count(*)::int as n from audit_event where object_id = $1`, [id]);
    expect(audit.rows[0].n).toBe(0);
  });
});

describe("cancel-lost-report --execute cancels, audits with the ticket id and emits an event in one transaction", () => {
  it("sets status cancelled and writes safety.report_cancelled_by_operator with the ticket in metadata", async () => {
    const id = await seedReport();
    const { code, out } = await runTask("cancel-lost-report.ts", ["--report", id, "--ticket", "INC-42", "--operator", "op-7", "--execute"]);
    expect(code).toBe(0);
    expect(out).toMatchObject({ dryRun: false, changed: { to: "cancelled" } });
    const report = await db.pool.query(`select status from safety_lost_report where id = $1`, [id]);
    expect(report.rows[0].status).toBe("cancelled");
    const audit = await db.pool.query(`select actor_id, action, object_type, metadata from audit_event where object_id = $1`, [id]);
    expect(audit.rows).toEqual([
      {
        actor_id: "op-7",
        action: "safety.report_cancelled_by_operator",
        object_type: "lost_report",
        metadata: { ticketId: "INC-42", previousStatus: "open" },
      },
    ]);
    const outbox = await db.pool.query(`select type from outbox_event where payload->>'reportId' = $1`, [id]);
    expect(outbox.rows).toEqual([{ type: "events.safety.lost_report_cancelled.v1" }]);
  });

  it("refuses an unknown report and a report already cancelled, exiting 1", async () => {
    const unknown = await runTask("cancel-lost-report.ts", [
      "--report", "00000000-0000-4000-8000-000000000000", "--ticket", "T", "--operator", "op", "--execute",
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.out.error).toMatch(/no lost report/);
    const id = await seedReport();
    await runTask("cancel-lost-report.ts", ["--report", id, "--ticket", "T", "--operator", "op", "--execute"]);
    const again = await runTask("cancel-lost-report.ts", ["--report", id, "--ticket", "T", "--operator", "op", "--execute"]);
    expect(again.code).toBe(1);
    const audit = await db.pool.query(`select count(*)::int as n from audit_event where object_id = $1`, [id]);
    expect(audit.rows[0].n).toBe(1);
  });

  it("exits 2 with usage when the ticket is missing", async () => {
    const id = await seedReport();
    const { code } = await runTask("cancel-lost-report.ts", ["--report", id, "--operator", "op"]);
    expect(code).toBe(2);
  });
});

describe("clean-worker-jobs lists permanently failed jobs and deletes them only with --execute, audited", () => {
  it("lists without deleting, then deletes and writes operator.worker_jobs_cleaned", async () => {
    await db.pool.query(`delete from graphile_worker._private_jobs`);
    const failed = await db.pool.query(`select id from graphile_worker.add_job('notification__deliver', '{}'::json, max_attempts := 1)`);
    await db.pool.query(`select graphile_worker.add_job('notification__deliver', '{}'::json, max_attempts := 3)`);
    await db.pool.query(
      `update graphile_worker._private_jobs set attempts = max_attempts, last_error = 'boom', updated_at = now() - interval '2 days'
       where id = $1`,
      [failed.rows[0].id],
    );
    const dry = await runTask("clean-worker-jobs.ts", ["--operator", "op-1"]);
    expect(dry.out).toMatchObject({ dryRun: true, finishedJobs: 1, byTask: { notification__deliver: 1 } });
    const stillThere = await db.pool.query(`select count(*)::int as n from graphile_worker.jobs`);
    expect(stillThere.rows[0].n).toBe(2);

    const done = await runTask("clean-worker-jobs.ts", ["--operator", "op-1", "--execute"]);
    expect(done.out).toMatchObject({ dryRun: false, deleted: 1 });
    const left = await db.pool.query(`select max_attempts from graphile_worker.jobs`);
    expect(left.rows).toEqual([{ max_attempts: 3 }]);
    const audit = await db.pool.query(`select actor_id, metadata from audit_event where action = 'operator.worker_jobs_cleaned'`);
    expect(audit.rows).toEqual([{ actor_id: "op-1", metadata: { deleted: 1, byTask: { notification__deliver: 1 }, olderThanHours: 24 } }]);
  });
});
