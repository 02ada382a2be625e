import { parseCrontab } from "graphile-worker";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findAlerts } from "../../api/safety/alerts/store.js";
import { REPORT_LIFETIME_CRONTAB, REPORT_LIFETIME_TASK, reportLifetimeTask } from "../../jobs/scheduled/task.js";
import { createPool } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { startWorker } from "../../lib/worker.js";
import { runReportLifetime } from "../../jobs/scheduled/report-lifetime.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { eventually } from "../helpers/stream.js";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const TTL = { ttlDays: 30 };
const PARIS = "SRID=4326;POINT(2.3522 48.8566)";

/** An open report expiring at `expiresIn` (a Postgres interval; null for none), written directly. */
async function report(kind: "lost" | "found", expiresIn: string | null, extra = ""): Promise<string> {
  const expires = expiresIn === null ? "null" : `now() + interval '${expiresIn}'`;
  const sql =
    kind === "lost"
      ? `insert into safety_lost_report (reporter_id, animal_name, species, last_seen_at, location, coarse_location, expires_at)
         values ('owner-${crypto.randomUUID()}', 'Rex', 'dog', now(), $1, $1, ${expires}) returning id`
      : `insert into safety_found_report (reporter_id, species, found_at, location, coarse_location, expires_at)
         values ('finder-${crypto.randomUUID()}', 'cat', now(), $1, $1, ${expires}) returning id`;
  const { rows } = await db.pool.query(sql, [PARIS]);
  if (extra) await db.pool.query(`update ${kind === "lost" ? "safety_lost_report" : "safety_found_report"} set ${extra} where id = $1`, [rows[0].id]);
  return rows[0].id;
}

/** `count` open lost reports that expired an hour ago, in one insert; their ids. */
async function expiredLostReports(count: number): Promise<string[]> {
  const { rows } = await db.pool.query(
    `insert into safety_lost_report (reporter_id, species, last_seen_at, location, coarse_location, expires_at)
     select 'bulk-' || i, 'dog', now(), $1, $1, now() - interval '1 hour' from generate_series(1, $2::int) i returning id`,
    [PARIS, count],
  );
  return rows.map((r) => r.id);
}

const eventsFor = async (type: string, reportId: string) =>
  (await db.pool.query(`select payload from outbox_event where type = $1 and payload->>'reportId' = $2`, [type, reportId])).rows.map((r) => r.payload);
const stateOf = async (table: string, id: string) =>
  (await db.pool.query(`select status, closed_reason, resolved_at is not null as resolved from ${table} where id = $1`, [id])).rows[0];
const alertIds = async () =>
  (await findAlerts(db.pool, { lat: 48.8566, lon: 2.3522, radiusKm: 5, kind: "all", limit: 200 }, null, 1000)).map((a) => a.id);

describe("open reports past their expiry close with closedReason expired", () => {
  it("closes lost and found reports past expires_at, emits report_expired once, and they leave alerts", async () => {
    const lost = await report("lost", "-1 minute");
    const found = await report("found", "-2 days");
    const alive = await report("lost", "10 days");
    expect(await alertIds()).toEqual(expect.arrayContaining([lost, found, alive]));

    const result = await runReportLifetime(db.pool, TTL);
    expect(result.expired).toBeGreaterThanOrEqual(2);
    expect(await stateOf("safety_lost_report", lost)).toEqual({ status: "closed", closed_reason: "expired", resolved: true });
    expect(await stateOf("safety_found_report", found)).toEqual({ status: "closed", closed_reason: "expired", resolved: true });
    expect(await stateOf("safety_lost_report", alive)).toEqual({ status: "open", closed_reason: null, resolved: false });
    expect(await eventsFor(EventType.ReportExpired, lost)).toEqual([
      { reportKind: "lost", reportId: lost, reporterId: expect.stringMatching(/^owner-/), expiredAt: expect.any(String) },
    ]);
    const alerts = await alertIds();
    expect(alerts).toContain(alive);
    expect(alerts).not.toContain(lost);
    expect(alerts).not.toContain(found);

    // Idempotent: a second run changes nothing and emits nothing.
    await runReportLifetime(db.pool, TTL);
    expect(await eventsFor(EventType.ReportExpired, lost)).toHaveLength(1);
  });

  it("never reopens or re-closes a report its reporter resolved", async () => {
    const resolved = await report("lost", "-1 day", "status = 'reunited', resolved_at = now() - interval '3 days'");
    await runReportLifetime(db.pool, TTL);
    expect(await stateOf("safety_lost_report", resolved)).toEqual({ status: "reunited", closed_reason: null, resolved: true });
    expect(await eventsFor(EventType.ReportExpired, resolved)).toEqual([]);
  });

  it("closes at most a batch's worth per transaction: a batch updates exactly the rows it locks", async () => {
    const ids = await expiredLostReports(300);
    await runReportLifetime(db.pool, { ...TTL, batchSize: 25 });
    // A batch's events share its transaction's time (expiredAt is its now()).
    const { rows: batches } = await db.pool.query(
      `select payload->>'expiredAt' as batch, count(*)::int as n from outbox_event
       where type = $1 and payload->>'reportId' = any($2::text[]) group by 1`,
      [EventType.ReportExpired, ids],
    );
    expect(batches.reduce((n, b) => n + b.n, 0)).toBe(300);
    expect(Math.max(...batches.map((b) => b.n))).toBe(25);
  });

  it("closes each report exactly once with several workers at once", async () => {
    const ids = await expiredLostReports(300);
    const runs = await Promise.all([1, 2, 3, 4].map(() => runReportLifetime(db.pool, { ...TTL, batchSize: 25 })));
    const { rows: counts } = await db.pool.query(
      `select count(*)::int as n, count(distinct payload->>'reportId')::int as distinct_reports
       from outbox_event where type = $1 and payload->>'reportId' = any($2::text[])`,
      [EventType.ReportExpired, ids],
    );
    expect(counts[0]).toEqual({ n: 300, distinct_reports: 300 });
    expect(runs.reduce((n, r) => n + r.expired, 0)).toBe(300);
    expect((await db.pool.query(`select count(*)::int as n from safety_lost_report where id = any($1) and status = 'open'`, [ids])).rows[0].n).toBe(0);
  });
});

describe("the reporter is reminded three days before", () => {
  it("reminds once per expiry, not earlier than three days before, and again after a renewal", async () => {
    const soon = await report("lost", "2 days");
    const later = await report("found", "4 days");
    await runReportLifetime(db.pool, TTL);
    await runReportLifetime(db.pool, TTL);
    const [reminder, ...more] = await eventsFor(EventType.ReportExpiring, soon);
    expect(more).toEqual([]);
    expect(reminder).toMatchObject({ reportKind: "lost", reportId: soon, species: "dog", animalName: "Rex" });
    expect(await eventsFor(EventType.ReportExpiring, later)).toEqual([]);

    // Renewed, then three weeks on: its new expiry is reminded once more.
    await db.pool.query(`update safety_lost_report set expires_at = now() + interval '30 days' where id = $1`, [soon]);
    await runReportLifetime(db.pool, TTL);
    expect(await eventsFor(EventType.ReportExpiring, soon)).toHaveLength(1);
    await db.pool.query(`update safety_lost_report set expires_at = now() + interval '1 day' where id = $1`, [soon]);
    await runReportLifetime(db.pool, TTL);
    expect(await eventsFor(EventType.ReportExpiring, soon)).toHaveLength(2);
  });
});

describe("open reports from before lifetimes get one from REPORT_TTL_DAYS", () => {
  it("dates them from creation, but never sooner than a reminder period away", async () => {
    const old = await report("lost", null, "created_at = now() - interval '60 days'");
    const recent = await report("found", null, "created_at = now() - interval '1 day'");
    const closed = await report("lost", null, "status = 'closed', resolved_at = now()");
    await runReportLifetime(db.pool, { ttlDays: 10 });
    const { rows } = await db.pool.query(
      `select id, extract(epoch from expires_at - now()) / 86400 as days from (
         select id, expires_at from safety_lost_report union all select id, expires_at from safety_found_report) r
       where id = any($1::uuid[])`,
      [[old, recent, closed]],
    );
    const days = Object.fromEntries(rows.map((r) => [r.id, r.days === null ? null : Number(r.days)]));
    expect(days[old]).toBeGreaterThan(3);
    expect(days[old]).toBeLessThan(3.1);
    expect(days[recent]).toBeCloseTo(9, 1);
    expect(days[closed]).toBeNull();
    expect(await stateOf("safety_lost_report", old)).toMatchObject({ status: "open" });
  });
});

describe("the relay's worker runs the job", () => {
  it("has a valid crontab line and a task that runs the lifetime job", async () => {
    expect(parseCrontab(REPORT_LIFETIME_CRONTAB)).toEqual([expect.objectContaining({ task: REPORT_LIFETIME_TASK })]);
    const due = await report("lost", "-5 minutes");
    const logger = pino({ level: "silent" });
    const pool = createPool({ connectionString: db.url, max: 3, applicationName: "lifetime-test", logger });
    const worker = await startWorker({
      pool,
      logger,
      taskList: { [REPORT_LIFETIME_TASK]: reportLifetimeTask(() => runReportLifetime(pool, TTL)) },
      concurrency: 1,
    });
    try {
      await db.pool.query(`select graphile_worker.add_job($1)`, [REPORT_LIFETIME_TASK]);
      await eventually(async () => ((await stateOf("safety_lost_report", due)).status === "closed" ? true : undefined), 15_000);
    } finally {
      await worker.stop();
      await pool.end();
    }
  });
});
