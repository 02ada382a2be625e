import type { Queryable } from "../lib/db.js";
import { Counter, Histogram, registerSourcedGauge, type Registry } from "../lib/metrics.js";
import { readPartitionHealth, type PartitionHealth } from "../jobs/scheduled/maintenance.js";
import { registerWorkerJobMetrics } from "../jobs/metrics.js";

export interface RelayMetrics {
  publishSeconds: Histogram;
  published: Counter;
  publishFailures: Counter;
}

/**
 * The outbox's backlog and its oldest row's age, in one statement that both
 * gauges of a scrape share: prom-client collects them at once, and read apart
 * (two pool connections, two snapshots) a scrape could show a backlog of 0
 * beside the age of a row the relay published between the two reads.
 */
function outboxStateReader(db: Queryable): () => Promise<{ n: number; age: number | null }> {
  let inFlight: Promise<{ n: number; age: number | null }> | undefined;
  return () =>
    (inFlight ??= db
      .query<{ n: number; age: number | null }>(
        `select count(*)::int as n, extract(epoch from now() - min(occurred_at))::float8 as age
         from outbox_event where published_at is null`,
      )
      .then(({ rows }) => rows[0]!)
      .finally(() => {
        inFlight = undefined;
      }));
}

/**
 * Backlog size and age are read from the outbox at scrape time (kept at their
 * last values while Postgres is unreachable; see registerSourcedGauge);
 * publish figures are counted as they happen.
 */
export function createRelayMetrics(registry: Registry, db: Queryable, outboxRetentionDays = 7): RelayMetrics {
  const outboxState = outboxStateReader(db);
  registerPartitionGauges(registry, db, outboxRetentionDays);
  registerSourcedGauge(registry, {
    name: "outbox_backlog",
    help: "Unpublished outbox rows",
    source: "postgres",
    read: async () => [{ value: (await outboxState()).n }],
  });
  registerSourcedGauge(registry, {
    name: "outbox_oldest_unpublished_age_seconds",
    help: "Age of the oldest unpublished outbox row (0 when none)",
    source: "postgres",
    read: async () => [{ value: (await outboxState()).age ?? 0 }],
  });
  registerWorkerJobMetrics(registry, db);
  return {
    publishSeconds: new Histogram({
      name: "relay_publish_seconds",
      help: "Time from publish to stream ack, per event",
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers: [registry],
    }),
    published: new Counter({ name: "relay_published_total", help: "Events acknowledged by the stream", registers: [registry] }),
    publishFailures: new Counter({
      name: "relay_publish_failures_total",
      help: "Publishes that failed or timed out (retried later)",
      registers: [registry],
    }),
  };
}

/**
 * The time partitions' health (jobs/scheduled/maintenance.ts), read at scrape time
 * from Postgres, so every relay exports it whichever ran the hourly job: an
 * outbox day past the retention that is still there (stuck on an unpublished
 * row, or the job is not running), and rows in a default partition (a
 * partition was missing at insert time; the next run splits them out).
 */
function registerPartitionGauges(registry: Registry, db: Queryable, retentionDays: number): void {
  let inFlight: Promise<PartitionHealth> | undefined;
  const health = () =>
    (inFlight ??= readPartitionHealth(db, retentionDays).finally(() => {
      inFlight = undefined;
    }));
  registerSourcedGauge(registry, {
    name: "outbox_partitions_past_retention",
    help: "Outbox day partitions older than OUTBOX_RETENTION_DAYS still present: held by an unpublished row, or maintenance is not running",
    source: "postgres",
    read: async () => [{ value: (await health()).outboxDaysPastRetention }],
  });
  registerSourcedGauge(registry, {
    name: "partition_default_rows",
    help: "Rows in a partitioned table's default partition (counted up to 100,000); the next maintenance run moves them into partitions of their own",
    labelNames: ["table"],
    source: "postgres",
    read: async () => Object.entries((await health()).defaultRows).map(([table, value]) => ({ labels: { table }, value })),
  });
}
