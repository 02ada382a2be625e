import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busServers, connectBus, ensureStream, type NatsConnection } from "../../lib/bus.js";
import { ConfigError, loadApiConfig, loadBusToolConfig, loadNotifierConfig, loadRelayConfig } from "../../lib/config.js";
import { EventType } from "../../lib/events.js";
import { ensureNotifierConsumer } from "../../notifier/consumer.js";
import { NatsCluster } from "../helpers/nats-cluster.js";
import { eventually } from "../helpers/stream.js";

// Settings the notifier needs outside development, so these cases are only about the bus.
const base = {
  DATABASE_URL: "postgres://x/y",
  NATS_URL: "nats://127.0.0.1:4222",
  OBJECT_STORAGE_ENDPOINT: "http://s3.example",
  OBJECT_STORAGE_BUCKET: "b",
  OBJECT_STORAGE_ACCESS_KEY_ID: "k",
  OBJECT_STORAGE_SECRET_ACCESS_KEY: "s",
  ALERT_UNSUBSCRIBE_SECRET: "a-secret-of-at-least-thirty-two-characters",
  VAPID_PUBLIC_KEY: "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg",
  VAPID_PRIVATE_KEY: "vOL8GdN3rkoVXeIdJK-ZzSYFACe7-mn6uU66MPNm3vo",
  VAPID_SUBJECT: "mailto:ops@example.org",
};

describe("NATS_URL takes several servers and NATS_REPLICAS the stream's replicas", () => {
  it("defaults NATS_REPLICAS to 1 in every process that ensures the stream, and takes 3", () => {
    expect(loadApiConfig({ ...base, API_ENV: "development" }).NATS_REPLICAS).toBe(1);
    expect(loadRelayConfig(base).NATS_REPLICAS).toBe(1);
    expect(loadNotifierConfig(base).NATS_REPLICAS).toBe(1);
    expect(loadRelayConfig({ ...base, NATS_REPLICAS: "3" }).NATS_REPLICAS).toBe(3);
    expect(loadBusToolConfig({ ...base, NATS_REPLICAS: "3" }).NATS_REPLICAS).toBe(3);
  });

  it("refuses replicas outside 1..5, naming NATS_REPLICAS", () => {
    for (const value of ["0", "6", "three", "1.5"]) {
      expect(() => loadRelayConfig({ ...base, NATS_REPLICAS: value })).toThrow(expect.objectContaining({ setting: "NATS_REPLICAS" }));
    }
  });

  it("accepts a comma-separated server list and refuses one with an empty entry", () => {
    const list = "nats://n1:4222, nats://n2:4222,nats://n3:4222";
    expect(loadNotifierConfig({ ...base, NATS_URL: list }).NATS_URL).toBe(list);
    expect(busServers(list)).toEqual(["nats://n1:4222", "nats://n2:4222", "nats://n3:4222"]);
    expect(() => loadRelayConfig({ ...base, NATS_URL: "nats://n1:4222,,nats://n3:4222" })).toThrow(ConfigError);
    expect(() => loadRelayConfig({ ...base, NATS_URL: "nats://n1:4222,,nats://n3:4222" })).toThrow(
      expect.objectContaining({ setting: "NATS_URL" }),
    );
  });
});

describe("on a three-node JetStream cluster", () => {
  let cluster: NatsCluster;
  let nc: NatsConnection;
  const logger = pino({ level: "silent" });

  beforeAll(async () => {
    cluster = await NatsCluster.start(3);
    nc = await connectBus(cluster.url, "stream-cluster-test", logger);
  });
  afterAll(async () => {
    await nc?.close();
    await cluster?.dispose();
  });

  it("ensureStream creates the stream with 3 replicas, one per node", async () => {
    await ensureStream(nc, "R3", { replicas: 3 });
    const info = await (await jetstreamManager(nc)).streams.info("R3");
    expect(info.config.num_replicas).toBe(3);
    const peers = [info.cluster!.leader, ...info.cluster!.replicas!.map((r) => r.name)].sort();
    expect(peers).toEqual(["n1", "n2", "n3"]);
    // Both streams here take events.>, which two streams may not share.
    await (await jetstreamManager(nc)).streams.delete("R3");
  });

  it("ensureStream scales an existing single-replica stream to 3, keeps its messages, and the durable consumer follows", async () => {
    const jsm = await jetstreamManager(nc);
    await ensureStream(nc, "EVENTS", { replicas: 1 });
    expect((await jsm.streams.info("EVENTS")).config.num_replicas).toBe(1);
    await jetstream(nc).publish(EventType.AnimalLostReported, "{}", { msgID: "scale-1" });
    await ensureNotifierConsumer(nc, "EVENTS", "notifier", { filter_subject: EventType.ContactMessageReceived });
    await ensureStream(nc, "EVENTS", { replicas: 3 });
    const info = await jsm.streams.info("EVENTS");
    expect(info.config.num_replicas).toBe(3);
    expect(info.state.messages).toBe(1);
    await cluster.waitForStreamCurrent("EVENTS", 3);
    // The consumer inherits the stream's replicas: its state survives a node too.
    const consumer = await eventually(async () => {
      const ci = await jsm.consumers.info("EVENTS", "notifier");
      return (ci.cluster?.replicas ?? []).length === 2 ? ci : undefined;
    }, 15_000);
    expect([consumer.cluster!.leader, ...consumer.cluster!.replicas!.map((r) => r.name)].sort()).toEqual(["n1", "n2", "n3"]);
  });

  it("the client moves to another node when its node is SIGKILLed, and publishes there", async () => {
    const before = nc.getServer();
    const node = cluster.nodes.find((n) => before.endsWith(`:${n.ports.client}`))!;
    await node.kill();
    try {
      const after = await eventually(async () => (nc.getServer() !== before && !nc.isClosed() ? nc.getServer() : undefined), 15_000);
      expect(after).not.toBe(before);
      // The R3 stream keeps a quorum of two: a publish succeeds once a leader is (re-)elected.
      const ack = await eventually(() => jetstream(nc).publish(EventType.AnimalLostReported, "{}", { msgID: "after-kill", timeout: 2_000 }), 30_000, 250);
      expect(ack.duplicate).toBe(false);
    } finally {
      await node.start();
    }
  });
});
