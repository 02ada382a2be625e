import { jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import { connect, nanos, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ensureStream } from "../../lib/bus.js";
import { EventType } from "../../lib/events.js";
import { startTestBus, type TestBus } from "../helpers/nats.js";

const STREAM = "EVENTS";
const MIN_DUPLICATE_WINDOW = nanos(2 * 60_000);

let bus: TestBus;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  bus = await startTestBus();
  // The stream claims `events.>`, which a shared server's other streams overlap.
  if (!bus.server) throw new Error("this file needs its own nats-server");
  nc = await connect({ servers: bus.url });
  jsm = await jetstreamManager(nc);
});

afterEach(async () => {
  for await (const stream of jsm.streams.list()) await jsm.streams.delete(stream.config.name);
});

afterAll(async () => {
  await nc?.close();
  await bus?.dispose();
});

/** The settings the contract requires of the event stream. */
async function expectRequiredSettings(): Promise<void> {
  const { config } = await jsm.streams.info(STREAM);
  expect(config.subjects).toEqual(["events.>"]);
  expect(config.storage).toBe(StorageType.File);
  expect(config.duplicate_window).toBeGreaterThanOrEqual(MIN_DUPLICATE_WINDOW);
}

describe("the event stream takes events.> on file storage with a duplicate window of at least 2 minutes", () => {
  it("creates the stream with subjects events.>, file storage and a duplicate window >= 2 minutes", async () => {
    await ensureStream(nc, STREAM);
    await expectRequiredSettings();
  });
});

describe("ensureStream is idempotent and converges an existing stream to the required settings", () => {
  it("keeps the stream, its settings and its messages when run a second time", async () => {
    await ensureStream(nc, STREAM);
    const ack = await jetstream(nc).publish(EventType.AnimalLostReported, "{}", { msgID: "m-1" });
    const first = await jsm.streams.info(STREAM);

    await ensureStream(nc, STREAM);
    const second = await jsm.streams.info(STREAM);
    expect(second.created).toEqual(first.created);
    expect(second.config).toEqual(first.config);
    expect(second.state.messages).toBe(1);
    expect(second.state.last_seq).toBe(ack.seq);
    await expectRequiredSettings();
  });

  it("updates a stream created earlier with a shorter duplicate window and narrower subjects, keeping its messages", async () => {
    await jsm.streams.add({
      name: STREAM,
      subjects: ["events.animal.>"],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      duplicate_window: nanos(10_000),
    });
    await jetstream(nc).publish(EventType.AnimalLostReported, "{}", { msgID: "m-1" });
    const created = (await jsm.streams.info(STREAM)).created;

    await ensureStream(nc, STREAM);
    await expectRequiredSettings();
    const after = await jsm.streams.info(STREAM);
    expect(after.created).toEqual(created);
    expect(after.state.messages).toBe(1);

    // Converged once, a further run changes nothing.
    await ensureStream(nc, STREAM);
    expect((await jsm.streams.info(STREAM)).config).toEqual(after.config);
  });
});
