import { afterAll, beforeAll } from "vitest";
import type { Env } from "../../lib/config.js";
import { buildTestApi, devEnv, type TestApi, type TestApiOptions } from "./app.js";
import { createTestDatabase, type TestDatabase } from "./db.js";
import { startTestBus, type TestBus } from "./nats.js";
import { Stack } from "./stack.js";

/** A test file's own database, nats-server and API. */
export interface Harness {
  db: TestDatabase;
  bus: TestBus;
  /** Built with buildTestApi: the privacy checker sees every public response. */
  api: TestApi;
  close(): Promise<void>;
}

/**
 * The file's own database (a clone of the migrated template), nats-server and
 * API with development settings and the debug bypass, `extra` on top. Start it
 * in beforeAll (after any server whose address `extra` names) and close it in
 * afterAll; more apps on the same database and bus: buildTestApi(devEnv(h.db.url, h.bus.url, …)).
 */
export async function startHarness(extra: Env = {}, options: TestApiOptions = {}): Promise<Harness> {
  const { db, bus } = await databaseAndBus();
  let api: TestApi;
  try {
    api = await buildTestApi(devEnv(db.url, bus.url, extra), options);
  } catch (err) {
    await Promise.all([bus.dispose(), db.drop()]);
    throw err;
  }
  return {
    db,
    bus,
    api,
    async close() {
      await api.close();
      await Promise.all([bus.dispose(), db.drop()]);
    },
  };
}

/** The two do not depend on each other, so they are made side by side; a failure leaves neither behind. */
async function databaseAndBus(): Promise<{ db: TestDatabase; bus: TestBus }> {
  const [db, bus] = await Promise.allSettled([createTestDatabase(), startTestBus()]);
  if (db.status === "fulfilled" && bus.status === "fulfilled") return { db: db.value, bus: bus.value };
  await Promise.all([db.status === "fulfilled" && db.value.drop(), bus.status === "fulfilled" && bus.value.dispose()]);
  throw db.status === "rejected" ? db.reason : (bus as PromiseRejectedResult).reason;
}

export interface StackHarness {
  db: TestDatabase;
  bus: TestBus;
  /** Real api/relay/notifier processes on this file's database and bus; started by the tests. */
  stack: Stack;
}

/** The file's own database and nats-server, and a Stack of real processes stopped after its tests. */
export function useTestStack(extra: Env = {}): StackHarness {
  const harness = {} as StackHarness;
  beforeAll(async () => {
    ({ db: harness.db, bus: harness.bus } = await databaseAndBus());
    harness.stack = new Stack(harness.db.url, harness.bus.url, extra);
  });
  afterAll(async () => {
    await harness.stack?.stopAll();
    await harness.bus?.dispose();
    await harness.db?.drop();
  });
  return harness;
}
