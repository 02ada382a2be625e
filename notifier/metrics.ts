import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Queryable } from "../lib/db.js";
import { Gauge, Histogram, registerWorkerQueueDepth, type Registry } from "../lib/metrics.js";

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

/** Consumer lag and notifications by status are read at scrape time; delivery latency as it happens. */
export function createNotifierMetrics(registry: Registry, { db, nc, stream, consumer }: NotifierMetricsOptions): NotifierMetrics {
  new Gauge({
    name: "notifier_consumer_lag",
    help: "Messages the durable consumer has not yet had acknowledged (pending + awaiting ack)",
    labelNames: ["kind"],
    registers: [registry],
    async collect() {
      const info = await (await jetstreamManager(nc)).consumers.info(stream, consumer);
      this.set({ kind: "pending" }, info.num_pending);
      this.set({ kind: "ack_pending" }, info.num_ack_pending);
    },
  });
  new Gauge({
    name: "notifications",
    help: "Notifications by status and channel",
    labelNames: ["status", "channel"],
    registers: [registry],
    async collect() {
      this.reset();
      const { rows } = await db.query<{ status: string; channel: string; n: number }>(
        `select status, channel, count(*)::int as n from notification group by status, channel`,
      );
      for (const row of rows) this.set({ status: row.status, channel: row.channel }, row.n);
    },
  });
  registerWorkerQueueDepth(registry, db);
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
