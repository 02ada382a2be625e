import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Queryable } from "../lib/db.js";
import { Histogram, registerSourcedGauge, SCRAPE_READ_TIMEOUT_MS, type Registry } from "../lib/metrics.js";
import { registerWorkerJobMetrics } from "../jobs/metrics.js";
import { registerOriginPauseMetrics } from "../jobs/delivery/deliverers/origin-pause.js";

export interface NotifierMetrics {
  /** Duration of one deliverer call, by channel and outcome (sent, failed). */
  deliverySeconds: Histogram;
}

export interface NotifierMetricsOptions {
  db: Queryable;
  nc: NatsConnection;
  stream: string;
  consumer: string;
}

/**
 * Consumer lag and notifications by status are read at scrape time (kept at
 * their last values while NATS or Postgres is unreachable; see
 * registerSourcedGauge); delivery latency as it happens.
 */
export function createNotifierMetrics(registry: Registry, { db, nc, stream, consumer }: NotifierMetricsOptions): NotifierMetrics {
  // No account check per scrape; API requests time out with the scrape's read.
  let jsm: Promise<JetStreamManager> | undefined;
  registerSourcedGauge(registry, {
    name: "notifier_consumer_lag",
    help: "Messages the durable consumer has not yet had acknowledged (pending + awaiting ack)",
    labelNames: ["kind"],
    source: "nats",
    async read() {
      jsm ??= jetstreamManager(nc, { checkAPI: false, timeout: SCRAPE_READ_TIMEOUT_MS });
      const info = await (await jsm).consumers.info(stream, consumer);
      return [
        { labels: { kind: "pending" }, value: info.num_pending },
        { labels: { kind: "ack_pending" }, value: info.num_ack_pending },
      ];
    },
  });
  registerSourcedGauge(registry, {
    name: "notifications",
    help: "Notifications by status and channel",
    labelNames: ["status", "channel"],
    source: "postgres",
    async read() {
      const { rows } = await db.query<{ status: string; channel: string; n: number }>(
        `select status, channel, count(*)::int as n from notification group by status, channel`,
      );
      return rows.map((row) => ({ labels: { status: row.status, channel: row.channel }, value: row.n }));
    },
  });
  registerWorkerJobMetrics(registry, db);
  registerOriginPauseMetrics(registry, db);
  return {
    deliverySeconds: new Histogram({
      name: "notifier_delivery_seconds",
      help: "Time spent in one delivery attempt, by channel and outcome",
      labelNames: ["channel", "outcome"],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
  };
}
