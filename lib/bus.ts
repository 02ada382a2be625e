import { connect, errors, nanos, type NatsConnection } from "@nats-io/transport-node";
import {
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type PubAck,
} from "@nats-io/jetstream";
import { STREAM_SUBJECTS } from "./events.js";
import type { Logger } from "./logger.js";
import { OUTBOX_WAKE_QUEUE, OUTBOX_WAKE_SUBJECT, type PublishableOutboxRow } from "./outbox.js";

export type { NatsConnection, JetStreamClient };

/** The duplicate window must cover the relay's retry of a crashed batch. */
export const DUPLICATE_WINDOW_MS = 5 * 60_000;

/** NATS_URL: one server, or the nodes of a cluster, comma-separated. */
export function busServers(url: string): string[] {
  return url
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * Connects once. A failure here is fatal for the caller; after a successful
 * connect the client reconnects for ever, so a later outage is tolerated.
 * With several servers the client starts on a random one (so instances spread
 * over the nodes) and moves to another when its node goes; servers the cluster
 * gossips are added to the list. A node that vanishes without closing the
 * socket (power loss, partition) is noticed after two missed pings (~10 s).
 */
export async function connectBus(url: string, name: string, logger: Logger): Promise<NatsConnection> {
  const nc = await connect({
    servers: busServers(url),
    name,
    timeout: 3_000,
    reconnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    reconnectJitter: 250,
    noRandomize: false,
    pingInterval: 5_000,
    maxPingOut: 2,
    waitOnFirstConnect: false,
    // Without this, every request (a JetStream publish is one) builds two Error
    // objects up front, stack traces and all, in case it fails later: 38 % of
    // the relay's CPU while it drained a backlog (a CPU profile of the relay, `npm run bench -- --profile`).
    // Failures still carry their message; the relay and notifier log only that.
    noAsyncTraces: true,
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

export interface EnsureStreamOptions {
  /** NATS_REPLICAS: 1 on one server, 3 on a three-node cluster. */
  replicas?: number;
  /** How long a cluster that is electing a leader (503, no responders, timeouts) is waited for. */
  unavailableForMs?: number;
}

/** JetStream's error code for an add whose name another process took first. */
const STREAM_NAME_IN_USE = 10058;

/**
 * A cluster between leaders answers 503, or no one answers (which nats.js
 * reports as "jetstream is not enabled"); anything else is a real refusal.
 */
function isTransient(err: unknown): boolean {
  if (err instanceof JetStreamApiError) return err.status === 503;
  return (
    err instanceof errors.TimeoutError ||
    err instanceof errors.NoRespondersError ||
    err instanceof errors.RequestError ||
    (err instanceof Error && err.name === "JetStreamNotEnabled")
  );
}

/**
 * Creates the stream, or updates it to the settings below (replicas
 * included); safe to run on every start, from every process. A cluster that
 * has just lost a node may be electing a leader: that is waited for, up to
 * `unavailableForMs`, rather than failing the start.
 */
export async function ensureStream(nc: NatsConnection, name: string, options: EnsureStreamOptions = {}): Promise<void> {
  const { replicas = 1, unavailableForMs = 20_000 } = options;
  const config = {
    subjects: [...STREAM_SUBJECTS],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    max_age: nanos(7 * 24 * 3_600_000),
    num_replicas: replicas,
  };
  const deadline = Date.now() + unavailableForMs;
  for (;;) {
    try {
      const jsm = await jetstreamManager(nc);
      try {
        await jsm.streams.info(name);
        await jsm.streams.update(name, config);
      } catch (err) {
        if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
        try {
          await jsm.streams.add({ name, ...config });
        } catch (addErr) {
          // Another process created it between our info and add: go round and update it.
          if (addErr instanceof JetStreamApiError && addErr.code === STREAM_NAME_IN_USE) continue;
          throw addErr;
        }
        await untilTheMetaLayerKnows(jsm, name, deadline);
      }
      return;
    } catch (err) {
      if (!isTransient(err) || Date.now() >= deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/**
 * On a cluster the new stream's leader can answer the add before the meta
 * layer has applied it, so an info or a consumer create right after it gets
 * "stream not found" (nats-server#8410, #4600; 2.9 has neither fix). Callers
 * of ensureStream go on to create consumers, so it returns only once the
 * stream can be found.
 */
async function untilTheMetaLayerKnows(jsm: JetStreamManager, name: string, deadline: number): Promise<void> {
  for (;;) {
    try {
      await jsm.streams.info(name);
      return;
    } catch (err) {
      const notYet = err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
      if (!notYet || Date.now() >= deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

export function busClient(nc: NatsConnection): JetStreamClient {
  return jetstream(nc);
}

/**
 * Wakes a relay after a commit that wrote outbox rows: the one way a writer
 * wakes it (the API after a write, the notifier after a job that recorded
 * events). Call it after the commit, never inside the transaction: a relay
 * woken before the commit finds nothing. A core message, fire and forget:
 * nats.js buffers it while reconnecting, and one lost (no relay subscribed, a
 * closed connection, a writer that died after its commit) is found by the
 * relay's poll (RELAY_POLL_INTERVAL_MS, 1 s).
 */
export function relayWaker(nc: NatsConnection): () => void {
  return () => {
    try {
      nc.publish(OUTBOX_WAKE_SUBJECT);
    } catch {
      // Closed or draining: the poll finds the row.
    }
  };
}

/** Calls onWake for each wake-up a writer publishes; nats.js re-subscribes after a reconnect. */
export function onRelayWakeUps(nc: NatsConnection, onWake: () => void): { unsubscribe(): void } {
  return nc.subscribe(OUTBOX_WAKE_SUBJECT, {
    queue: OUTBOX_WAKE_QUEUE,
    callback: (err) => {
      if (!err) onWake();
    },
  });
}

/**
 * Publishes one outbox row's envelope (lib/outbox.ts envelopeSql) with
 * Nats-Msg-Id = the outbox id, waiting for the stream's ack. The relay, the
 * admin requeue and the republish task all publish through here.
 */
export function publishOutboxRow(js: JetStreamClient, row: PublishableOutboxRow, timeoutMs: number): Promise<PubAck> {
  return js.publish(row.type, row.envelope, { msgID: row.id, timeout: timeoutMs, retries: 0 });
}
