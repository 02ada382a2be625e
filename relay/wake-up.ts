import pg from "pg";
import type { Logger } from "../lib/logger.js";
import { Counter, Gauge, type Registry } from "../lib/metrics.js";

export interface WakeUpListenerOptions {
  connectionString: string;
  /** The channel the outbox trigger notifies (lib/outbox.ts OUTBOX_WAKE_CHANNEL). */
  channel: string;
  /** Called on every notification, and once each time listening (re)starts. */
  onWake: () => void;
  logger: Logger;
  /** First delay before reconnecting after the connection is lost; doubles up to 30 s. */
  reconnectDelayMs?: number;
  /** Where `relay_wake_up_listening` and `relay_wake_up_connections_lost_total` are exposed. */
  registry?: Registry;
}

export interface WakeUpListener {
  stop(): Promise<void>;
}

const MAX_RECONNECT_DELAY_MS = 30_000;

/**
 * Keeps one connection LISTENing on the outbox's channel, so a commit wakes
 * the relay within milliseconds. A notification only says "look again": it is
 * not stored, so whatever was committed while the connection was down is
 * caught by the wake-up each (re)connect ends with, and by the relay's 1 s
 * poll. A connection lost (Postgres restart, terminated backend) is replaced
 * with backoff; starting never throws, so the relay runs on its poll while
 * Postgres is away. Written here rather than taken from pg-listen, whose last
 * release (1.7.0) dates from 2020; graphile-worker keeps its own LISTEN loop
 * the same way.
 */
export function listenForWakeUps({ connectionString, channel, onWake, logger, reconnectDelayMs = 500, registry }: WakeUpListenerOptions): WakeUpListener {
  // While it is 0 the relay still publishes, on its 1 s poll: commits wait up to a second.
  const listening = new Gauge({
    name: "relay_wake_up_listening",
    help: "1 while the relay listens for the outbox's commit notifications, else 0",
    registers: registry ? [registry] : [],
  });
  const lost = new Counter({
    name: "relay_wake_up_connections_lost_total",
    help: "Listening connections lost or refused, each retried with backoff",
    registers: registry ? [registry] : [],
  });
  let stopped = false;
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | null = null;
  let delay = reconnectDelayMs;

  const scheduleReconnect = (err?: Error) => {
    if (stopped || retry) return;
    listening.set(0);
    lost.inc();
    logger.warn({ err: err ? { message: err.message } : undefined, retryInMs: delay }, "relay: wake-up listener lost its connection; reconnecting");
    retry = setTimeout(() => {
      retry = null;
      void connect();
    }, delay);
    delay = Math.min(MAX_RECONNECT_DELAY_MS, delay * 2);
  };

  const connect = async () => {
    const next = new pg.Client({ connectionString, application_name: "relay-wake-up", keepAlive: true, connectionTimeoutMillis: 2_000 });
    client = next;
    // Registered before connecting: an error event without a listener would crash the process.
    next.on("error", (err) => {
      if (client === next) scheduleReconnect(err);
    });
    next.on("end", () => {
      if (client === next) scheduleReconnect();
    });
    next.on("notification", () => onWake());
    try {
      await next.connect();
      await next.query(`listen ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      if (client === next) scheduleReconnect(err as Error);
      await next.end().catch(() => undefined);
      return;
    }
    if (client !== next) {
      // stop() came while connecting.
      await next.end().catch(() => undefined);
      return;
    }
    delay = reconnectDelayMs;
    listening.set(1);
    logger.info({ channel }, "relay: listening for outbox wake-ups");
    onWake();
  };

  void connect();
  return {
    async stop() {
      stopped = true;
      if (retry) clearTimeout(retry);
      const last = client;
      client = null;
      await last?.end().catch(() => undefined);
    },
  };
}
