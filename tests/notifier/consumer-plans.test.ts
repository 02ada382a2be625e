import { randomUUID } from "node:crypto";
import type { PoolClient } from "pg";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MATCH_SUBJECT_TASK } from "../../jobs/matching/task.js";
import { fanoutStartJob, uncoveredFanoutCheck } from "../../jobs/fanout/fanout.js";
import { createConsumerPool } from "../../notifier/consumer.js";
import { idleMatchCheck } from "../../jobs/matching/matcher.js";
import type { QueuedJob } from "../../jobs/queued-job.js";
import { withoutIdleReactions } from "../../jobs/reaction-checks.js";
import { EventType } from "../../lib/events.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

/**
 * The consumer's statement of reaction checks, run once per batch, is
 * planned once on the consumer's own connections, not at every execution
 * (replanning it costs about 0.4 ms of Postgres CPU a create, measured with
 * `npm run bench:cost`).
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/** A new lost report's two reaction jobs, as the consumer queues them. */
function lostReportJobs(): QueuedJob[] {
  const reportId = randomUUID();
  return [
    fanoutStartJob({ reportId, eventId: randomUUID(), eventType: EventType.AnimalLostReported }),
    { task: MATCH_SUBJECT_TASK, payload: { kind: "lost", id: reportId } },
  ];
}

/** Runs the checks `times` times on one session, and returns how that session planned them. */
async function planCounts(client: PoolClient, times: number): Promise<{ generic: number; custom: number }> {
  for (let i = 0; i < times; i++) await withoutIdleReactions(client, lostReportJobs(), [uncoveredFanoutCheck, idleMatchCheck]);
  const { rows } = await client.query<{ generic: number; custom: number }>(
    `select generic_plans::int as generic, custom_plans::int as custom from pg_prepared_statements where name like 'reaction-checks/%'`,
  );
  return rows[0]!;
}

describe("the consumer's reaction checks", () => {
  it("are planned once on the consumer's connections, where a default session plans them at every execution", async () => {
    const consumerPool = createConsumerPool({ connectionString: db.url, max: 1, logger: pino({ level: "silent" }) });
    const consumerClient = await consumerPool.connect();
    const defaultClient = await db.pool.connect();
    try {
      expect(await planCounts(consumerClient, 8)).toEqual({ generic: 8, custom: 0 });
      expect(await planCounts(defaultClient, 8)).toEqual({ generic: 0, custom: 8 });
    } finally {
      consumerClient.release();
      defaultClient.release();
      await consumerPool.end();
    }
  });

  it("read each report and its suggestions by key, so a plan made while the tables were small stays cheap as they grow", async () => {
    // A fresh database: every table is empty, as on a new deployment, and the plan is kept as long as the connection.
    const consumerPool = createConsumerPool({ connectionString: db.url, max: 1, logger: pino({ level: "silent" }) });
    const client = await consumerPool.connect();
    try {
      await withoutIdleReactions(client, lostReportJobs(), [uncoveredFanoutCheck, idleMatchCheck]);
      const { rows } = await client.query<{ name: string; parameters: number }>(
        `select name, cardinality(parameter_types) as parameters from pg_prepared_statements where name like 'reaction-checks/%'`,
      );
      const { name, parameters } = rows[0]!;
      const plan = await client.query<{ "QUERY PLAN": string }>(
        `explain execute "${name}"(${Array.from({ length: parameters }, () => "null").join(", ")})`,
      );
      const text = plan.rows.map((row) => row["QUERY PLAN"]).join("\n");
      expect(text).toContain("safety_lost_report_pkey");
      expect(text).not.toMatch(/Seq Scan on safety_lost_report|Seq Scan on safety_match/);
    } finally {
      client.release();
      await consumerPool.end();
    }
  });
});
