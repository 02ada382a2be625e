import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction, type Queryable } from "../../lib/db.js";
import { ALERTS_FANOUT_TASK } from "../../jobs/fanout/task.js";
import { MATCH_SUBJECT_TASK } from "../../jobs/matching/task.js";
import { PHOTO_PROCESS_TASK } from "../../jobs/photos/task.js";
import { enqueue, enqueueMany, jobKey, jobKeySql } from "../../jobs/queue.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

/**
 * jobs/queue.ts, the one way to queue a job: typed by the task's payload
 * schema at compile time and parsed with it at run time, in the caller's
 * transaction, one job per key.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/** The jobs with this key, as graphile-worker's public view and its payload hold them. */
const jobsWithKey = async (key: string) =>
  (
    await db.pool.query(
      `select j.task_identifier as task, p.payload, j.max_attempts as "maxAttempts"
       from graphile_worker.jobs j join graphile_worker._private_jobs p on p.id = j.id where j.key = $1`,
      [key],
    )
  ).rows;

/** A client that records what it is asked to run, and runs nothing. */
function recordingClient(): Queryable & { statements: unknown[] } {
  const statements: unknown[] = [];
  return {
    statements,
    query: async (statement: unknown) => {
      statements.push(statement);
      return { rows: [], rowCount: 0, command: "", oid: 0, fields: [] };
    },
  } as Queryable & { statements: unknown[] };
}

describe("enqueue", () => {
  it("refuses a payload of the wrong shape, at compile time and before anything is written", async () => {
    const client = recordingClient();
    // @ts-expect-error: photo__process takes a photoId
    await expect(enqueue(client, PHOTO_PROCESS_TASK, { notificationId: randomUUID() })).rejects.toThrow(/photoId/);
    await expect(enqueue(client, PHOTO_PROCESS_TASK, { photoId: "not-a-uuid" })).rejects.toThrow(/uuid/i);
    // @ts-expect-error: a fan-out batch's key names its report, which its payload does not hold
    await expect(enqueue(client, ALERTS_FANOUT_TASK, { fanoutId: randomUUID(), batch: 1 })).rejects.toThrow(/job key of alerts__fanout/);
    await expect(
      enqueueMany(client, [
        { task: MATCH_SUBJECT_TASK, payload: { kind: "lost", id: randomUUID() } },
        // @ts-expect-error: not a kind of match subject
        { task: MATCH_SUBJECT_TASK, payload: { kind: "animal", id: randomUUID() } },
      ]),
    ).rejects.toThrow(/kind/);
    expect(client.statements).toEqual([]);
  });

  it("queues in the caller's transaction: a job queued in a transaction that rolls back does not exist", async () => {
    const photoId = randomUUID();
    await expect(
      withTransaction(db.pool, async (client) => {
        await enqueue(client, PHOTO_PROCESS_TASK, { photoId });
        expect(await client.query(`select 1 from graphile_worker.jobs where key = $1`, [jobKey(PHOTO_PROCESS_TASK, { photoId })])).toMatchObject({
          rowCount: 1,
        });
        throw new Error("the write fails");
      }),
    ).rejects.toThrow("the write fails");
    expect(await jobsWithKey(jobKey(PHOTO_PROCESS_TASK, { photoId }))).toEqual([]);
  });

  it("leaves one job for two enqueues with one key, with the task's attempts", async () => {
    const photoId = randomUUID();
    await enqueue(db.pool, PHOTO_PROCESS_TASK, { photoId });
    await enqueue(db.pool, PHOTO_PROCESS_TASK, { photoId });
    expect(await jobsWithKey(`photo__process:${photoId}`)).toEqual([{ task: PHOTO_PROCESS_TASK, payload: { photoId }, maxAttempts: 5 }]);
  });
});

describe("enqueueMany", () => {
  it("takes two jobs with one key in one call (two events about one report arriving together): the last one wins", async () => {
    const [reportId, eventId, other] = [randomUUID(), randomUUID(), randomUUID()];
    await withTransaction(db.pool, (client) =>
      enqueueMany(client, [
        { task: ALERTS_FANOUT_TASK, payload: { fanoutId: eventId, batch: 1 }, options: { key: { reportId, eventId } } },
        { task: MATCH_SUBJECT_TASK, payload: { kind: "lost", id: other } },
        { task: ALERTS_FANOUT_TASK, payload: { fanoutId: eventId, batch: 2 }, options: { key: { reportId, eventId }, maxAttempts: 7 } },
      ]),
    );
    expect(await jobsWithKey(jobKey(ALERTS_FANOUT_TASK, { reportId, eventId }))).toEqual([
      { task: ALERTS_FANOUT_TASK, payload: { fanoutId: eventId, batch: 2 }, maxAttempts: 7 },
    ]);
    expect(await jobsWithKey(`match__subject:lost:${other}`)).toEqual([{ task: MATCH_SUBJECT_TASK, payload: { kind: "lost", id: other }, maxAttempts: 10 }]);
  });
});

describe("job keys", () => {
  it("are the same built in SQL as in TypeScript", async () => {
    const [reportId, eventId] = [randomUUID(), randomUUID()];
    const { rows } = await db.pool.query(`select ${jobKeySql(ALERTS_FANOUT_TASK, { reportId: "$1::uuid", eventId: "$2::uuid" })} as key`, [
      reportId,
      eventId,
    ]);
    expect(rows[0].key).toBe(jobKey(ALERTS_FANOUT_TASK, { reportId, eventId }));
    expect(jobKey(ALERTS_FANOUT_TASK, { reportId, eventId, start: true })).toBe(`alerts__fanout:${reportId}:${eventId}:start`);
  });
});
