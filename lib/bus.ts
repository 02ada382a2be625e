import { connect, nanos, type NatsConnection } from "@nats-io/transport-node";
import {
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type PubAck,
} from "@nats-io/jetstream";
import { STREAM_SUBJECTS } from "./events.js";
import type { Logger } from "./logger.js";
import { toEnvelope, type OutboxRow } from "./outbox.js";

export type { NatsConnection, JetStreamClient };

/** The duplicate window must cover the relay's retry of a crashed batch. */
export const DUPLICATE_WINDOW_MS = 5 * 60_000;

/**
 * Connects once. A failure here is fatal for the caller; after a successful
 * connect the client reconnects for ever, so a later outage is tolerated.
 */
export async function connectBus(url: string, name: string, logger: Logger): Promise<NatsConnection> {
  const nc = await connect({
    servers: url.split(","),
    name,
    timeout: 3_000,
    reconnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    waitOnFirstConnect: false,
  });
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect" || status.type === "reconnect") {
        logger.warn({ bus: status.type }, `bus: ${status.type}`);
      }
    }
  })();
  return nc;
}

/** Creates the stream, or updates it to the settings below; safe to run on every start. */
export async function ensureStream(nc: NatsConnection, name: string): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const config = {
    subjects: [...STREAM_SUBJECTS],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    max_age: nanos(7 * 24 * 3_600_000),
  };
  try {
    await jsm.streams.info(name);
    await jsm.streams.update(name, config);
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) {
      await jsm.streams.add({ name, ...config });
      return;
    }
    throw err;
  }
}

export function busClient(nc: NatsConnection): JetStreamClient {
  return jetstream(nc);
}

/**
 * Publishes one outbox row with Nats-Msg-Id = the outbox id, waiting for the
 * stream's ack. The relay and the admin requeue both publish through here.
 */
export function publishOutboxRow(js: JetStreamClient, row: OutboxRow, timeoutMs: number): Promise<PubAck> {
  return js.publish(row.type, JSON.stringify(toEnvelope(row)), { msgID: row.id, timeout: timeoutMs, retries: 0 });
}
