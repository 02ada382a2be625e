import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { NatsCluster } from "../helpers/nats-cluster.js";
import { runClusterScenario } from "./cluster-scenario.js";

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

describe("fault: a three-node cluster, two of each process, under a mixed load of creates and contact messages", () => {
  it("loses and doubles nothing when a NATS node, then the stream leader, then one api, relay and notifier are SIGKILLed", async () => {
    const counts = await runClusterScenario(db, cluster, {
      tag: "cluster-full",
      rate: 30,
      reports: 80,
      faults: ["node", "leader", "processes"],
      tailSeconds: 5,
      outageSeconds: 5,
      log: (line) => console.log(`[cluster] ${line}`),
    });
    console.log(`[cluster] counts ${JSON.stringify(counts, null, 2)}`);
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
    expect(counts.contactMessages).toBeGreaterThanOrEqual(counts.acknowledged.contactMessages);
    expect(counts.processes.killed).toHaveLength(3);
    expect(counts.processes.restarted).toBe(3);
    expect(counts.processes.exitedOnTheirOwn).toEqual([]);
    expect(counts.processes.notReady).toEqual([]);
  }, 360_000);
});
