import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction } from "../../lib/db.js";
import { queueJobs } from "../../notifier/store.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

/** The consumer queues the jobs of a whole micro-batch of events in one add_jobs call. */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe("queueJobs", () => {
  it("takes two jobs with one key in one call (two events about one report arriving together): the last one wins", async () => {
    await withTransaction(db.pool, (client) =>
      queueJobs(client, [
        { task: "probe_task", payload: { n: 1 }, jobKey: "probe:one" },
        { task: "probe_task", payload: { n: 2 }, jobKey: "probe:other" },
        { task: "probe_task", payload: { n: 3 }, jobKey: "probe:one", maxAttempts: 7 },
      ]),
    );
    const { rows } = await db.pool.query(
      `select key, payload, max_attempts from graphile_worker._private_jobs where key like 'probe:%' order by key`,
    );
    expect(rows).toEqual([
      { key: "probe:one", payload: { n: 3 }, max_attempts: 7 },
      { key: "probe:other", payload: { n: 2 }, max_attempts: 25 },
    ]);
  });
});
