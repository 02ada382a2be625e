import { afterAll, beforeAll } from "vitest";
import type { Env } from "../../lib/config.js";
import { buildTestApi, devEnv, type TestApi } from "./app.js";
import { createTestDatabase, type TestDatabase } from "./db.js";
import { startTestBus, type TestBus } from "./nats.js";
import { Stack } from "./stack.js";

export interface Harness {
  db: TestDatabase;
  bus: TestBus;
  api: TestApi;
}

/**
 * The file's own database, nats-server and API (development settings, debug
 * bypass), built before its tests and torn down after. Read the fields inside
 * tests and hooks: they are set once beforeAll has run.
 */
export function useTestApi(extra: Env = {}): Harness {
  const harness = {} as Harness;
  beforeAll(async () => {
    harness.db = await createTestDatabase();
    harness.bus = await startTestBus();
    harness.api = await buildTestApi(devEnv(harness.db.url, harness.bus.url, extra));
  });
  afterAll(async () => {
    await harness.api?.close();
    await harness.bus?.dispose();
    await harness.db?.drop();
  });
  return harness;
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
    harness.db = await createTestDatabase();
    harness.bus = await startTestBus();
    harness.stack = new Stack(harness.db.url, harness.bus.url, extra);
  });
  afterAll(async () => {
    await harness.stack?.stopAll();
    await harness.bus?.dispose();
    await harness.db?.drop();
  });
  return harness;
}
