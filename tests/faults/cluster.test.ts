import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { NatsCluster } from "../helpers/nats-cluster.js";
import { runClusterScenario } from "./cluster-scenario.js";

// The fast variant of cluster.fault.ts: a smaller load and only the NATS node kill.
let db: TestDatabase;
let cluster: NatsCluster;

beforeAll(async () => {
  db = await createTestDatabase();
  cluster = await NatsCluster.start(3);
});
afterAll(async () => {
  await cluster?.dispose();
  await db?.drop();
});

describe("fault: a NATS node of three is SIGKILLed under load, with two of each process", () => {
  it("keeps every acknowledged write, puts every outbox row on the R3 stream once, and notifies each contact message once", async () => {
    const counts = await runClusterScenario(db, cluster, {
      tag: "cluster-fast",
      rate: 15,
      reports: 12,
      faults: ["node"],
      tailSeconds: 1,
      outageSeconds: 2,
      // Messages in flight to a client on the killed node come back after the ack wait; 5 s instead of 30 keeps this case short.
      env: { NOTIFIER_ACK_WAIT_MS: "5000" },
      log: (line) => console.log(`[cluster-fast] ${line}`),
    });
    console.log(`[cluster-fast] counts ${JSON.stringify(counts)}`);
    expect(counts.acknowledged.creates).toBeGreaterThan(0);
    expect(counts.acknowledged.contactMessages).toBeGreaterThan(0);
    expect(counts.missingAcknowledged).toBe(0);
    expect(counts.stream).toEqual({
      messages: counts.outboxRows,
      distinctMsgIds: counts.outboxRows,
      distinctEventIds: counts.outboxRows,
      msgIdMismatches: 0,
      missingRows: 0,
    });
    expect(counts.notifications).toEqual({
      contactMessagesWithExactlyOne: counts.contactMessages,
      contactMessagesWithNone: 0,
      contactMessagesWithMore: 0,
      wrongRecipient: 0,
    });
    expect(counts.processes.exitedOnTheirOwn).toEqual([]);
    expect(counts.processes.notReady).toEqual([]);
  }, 90_000);
});
