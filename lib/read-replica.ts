import type pg from "pg";
import { createPool, isDatabaseUnavailable, type Pool, type PoolClient, type PoolOptions, type Queryable } from "./db.js";
import type { Logger } from "./logger.js";
import { Counter, Gauge, type Registry } from "./metrics.js";

/** How often the primary's heartbeat row is set (contract: every second). */
export const HEARTBEAT_INTERVAL_MS = 1_000;
/** How often the replica's lag is read: the routing decision is this old at most, never made per request. */
export const LAG_CHECK_INTERVAL_MS = 500;
/** A lag check that takes longer counts as the replica being down. */
const CHECK_TIMEOUT_MS = 1_000;

export type ReadTarget = "replica" | "primary";

/**
 * The public reads (docs/scaling.md lists which): a Queryable that sends each
 * statement to the replica while it is up and within its lag bound, and to
 * the primary otherwise. Only plain statements: no transaction ever runs on it.
 */
export interface PublicReads extends Queryable {
  /**
   * A lookup by id that found nothing on the replica is asked again on the
   * primary: the row may have been written a moment ago (a report the caller
   * just created, a photo just processed). Only misses pay the second read.
   */
  lookup<T>(read: (db: Queryable) => Promise<T>, found?: (value: T) => boolean): Promise<T>;
  /** Where the next read goes; tests and the bench ask. */
  target(): ReadTarget;
  /** Stops the heartbeat and the lag checks and ends the replica's pool (never the primary's). */
  close(): Promise<void>;
}

/** DATABASE_REPLICA_URL names a server that is not a standby: refused at start. */
export class ReplicaNotInRecoveryError extends Error {
  constructor() {
    super(
      "DATABASE_REPLICA_URL points at a server that is not in recovery (pg_is_in_recovery() is false): a primary, " +
        "perhaps DATABASE_URL itself, not a streaming replica. Point it at a standby (pg_basebackup -R) or unset it.",
    );
    this.name = "ReplicaNotInRecoveryError";
  }
}

export interface PublicReadsOptions {
  primary: Pool;
  /** DATABASE_REPLICA_URL; none: every read goes to the primary and nothing else runs. */
  replicaUrl: string | undefined;
  /** DATABASE_REPLICA_MAX_LAG_MS. */
  maxLagMs: number;
  poolSize: number;
  logger: Logger;
  /** The API's registry: db_reads_total, db_replica_lag_seconds, db_replica_up, db_replica_serving. */
  registry: Registry;
  applicationName?: string;
  /** The primary pool's statement and session options (DATABASE_NAMED_STATEMENTS, DATABASE_SESSION_SETTINGS): a replica may sit behind a pooler too. */
  poolOptions?: Partial<Omit<PoolOptions, "connectionString" | "logger" | "applicationName" | "max">>;
}

const found = (value: unknown) => value !== null && value !== undefined;

/** No replica configured: the primary pool itself, at no cost. */
class PrimaryReads implements PublicReads {
  constructor(private readonly primary: Pool) {}
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  query<R extends pg.QueryResultRow = any>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
  query(text: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult> {
    return values === undefined ? this.primary.query(text as pg.QueryConfig) : this.primary.query(text as string, values);
  }
  lookup<T>(read: (db: Queryable) => Promise<T>): Promise<T> {
    return read(this.primary);
  }
  target(): ReadTarget {
    return "primary";
  }
  async close(): Promise<void> {}
}

/**
 * Errors after which a read is run again on the primary: the replica went
 * away, a recovery conflict cancelled the statement (40001, 40P01:
 * max_standby_streaming_delay), or it has not yet replayed a migration the
 * new code needs (42P01, 42703, 42883). Every other error is the query's own
 * and is thrown as it is.
 */
const RETRY_ON_PRIMARY = new Set(["40001", "40P01", "42P01", "42703", "42883"]);
function retryOnPrimary(err: unknown): boolean {
  return isDatabaseUnavailable(err) || RETRY_ON_PRIMARY.has((err as { code?: string })?.code ?? "");
}

interface ReplicaState {
  reachable: boolean;
  inRecovery: boolean;
  /** Age of the heartbeat as read on the replica; null when it has none (not yet replayed, or another primary's replica). */
  lagMs: number | null;
}

class ReplicaReads implements PublicReads {
  private serving = false;
  private last: ReplicaState | null = null;
  private checkTimer: NodeJS.Timeout | undefined;
  private beatTimer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private beating: Promise<void> | undefined;
  private beatFailing = false;
  private closed = false;
  private readonly reads: Counter<"target">;
  private readonly lag: Gauge;
  private readonly up: Gauge;
  private readonly servingGauge: Gauge;

  constructor(
    private readonly primary: Pool,
    private readonly replica: Pool,
    private readonly maxLagMs: number,
    private readonly logger: Logger,
    registry: Registry,
  ) {
    this.reads = new Counter({
      name: "db_reads_total",
      help: "Statements of the public reads (alerts search, public report views, share pages and flyers, sightings lists, photo variants) by the server that answered them",
      labelNames: ["target"],
      registers: [registry],
    });
    // Both series from the start, so rate() sees the first increment of either.
    this.reads.inc({ target: "replica" }, 0);
    this.reads.inc({ target: "primary" }, 0);
    this.lag = new Gauge({
      name: "db_replica_lag_seconds",
      help: "Age of the primary's heartbeat row as read on the read replica (DATABASE_REPLICA_URL), at the last check; NaN while unknown",
      registers: [registry],
    });
    this.lag.set(Number.NaN);
    this.up = new Gauge({
      name: "db_replica_up",
      help: "1 when the last check reached the read replica and found it in recovery, 0 when it was unreachable, timed out or not a standby",
      registers: [registry],
    });
    this.servingGauge = new Gauge({
      name: "db_replica_serving",
      help: "1 while the public reads go to the read replica, 0 while they go to the primary (replica down, or past DATABASE_REPLICA_MAX_LAG_MS)",
      registers: [registry],
    });
  }

  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  query<R extends pg.QueryResultRow = any>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
  async query(text: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult> {
    if (this.serving) {
      try {
        const result = await run(this.replica, text, values);
        this.reads.inc({ target: "replica" });
        return result;
      } catch (err) {
        if (!retryOnPrimary(err)) throw err;
        // Gone between two checks: stop sending reads there now rather than at the next check.
        if (isDatabaseUnavailable(err)) this.setServing(false, "the replica failed a read", { err: { message: (err as Error).message } });
      }
    }
    const result = await run(this.primary, text, values);
    this.reads.inc({ target: "primary" });
    return result;
  }

  async lookup<T>(read: (db: Queryable) => Promise<T>, isFound: (value: T) => boolean = found): Promise<T> {
    if (!this.serving) return read(this);
    const value = await read(this);
    return isFound(value) ? value : read(this.onPrimary);
  }

  /** The primary, counted as a public read: a lookup's second try. */
  private readonly onPrimary: Queryable = {
    query: (async (text: string | pg.QueryConfig, values?: unknown[]) => {
      const result = await run(this.primary, text, values);
      this.reads.inc({ target: "primary" });
      return result;
    }) as Queryable["query"],
  };

  target(): ReadTarget {
    return this.serving ? "replica" : "primary";
  }

  /** The first check and heartbeat, then both on their timers. */
  async start(): Promise<void> {
    await this.beat();
    await this.check();
    this.checkTimer = setInterval(() => void this.check(), LAG_CHECK_INTERVAL_MS).unref();
    this.beatTimer = setInterval(() => void this.beat(), HEARTBEAT_INTERVAL_MS).unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.checkTimer);
    clearInterval(this.beatTimer);
    await Promise.all([this.checking, this.beating]);
    this.serving = false;
    await this.replica.end();
  }

  /**
   * Sets the heartbeat on the primary. Every API instance does, each second:
   * one HOT update of one row (fillfactor 50), and the `where` keeps an
   * instance with a slower clock from moving it back.
   */
  private beat(): Promise<void> {
    if (this.beating || this.closed) return this.beating ?? Promise.resolve();
    this.beating = this.primary
      .query({
        name: "replica_heartbeat",
        text: `insert into replica_heartbeat (id, beat_at) values (true, now())
               on conflict (id) do update set beat_at = excluded.beat_at where replica_heartbeat.beat_at < excluded.beat_at`,
      })
      .then(
        () => {
          if (this.beatFailing) this.logger.info("read replica: heartbeat written again");
          this.beatFailing = false;
        },
        (err: Error) => {
          // The replica's lag then grows, and the reads go to the primary: the same outage either way.
          if (!this.beatFailing) this.logger.warn({ err: { message: err.message } }, "read replica: heartbeat not written");
          this.beatFailing = true;
        },
      )
      .finally(() => {
        this.beating = undefined;
      });
    return this.beating;
  }

  /** Reads the replica's state and decides where the reads go until the next check. */
  check(): Promise<void> {
    if (this.checking || this.closed) return this.checking ?? Promise.resolve();
    this.checking = readState(this.replica, CHECK_TIMEOUT_MS)
      .catch((err: Error): ReplicaState & { error?: string } => ({ reachable: false, inRecovery: false, lagMs: null, error: err.message }))
      .then((state) => this.apply(state))
      .finally(() => {
        this.checking = undefined;
      });
    return this.checking;
  }

  private apply(state: ReplicaState & { error?: string }): void {
    if (this.closed) return;
    const previous = this.last;
    this.last = state;
    this.up.set(state.reachable && state.inRecovery ? 1 : 0);
    this.lag.set(state.reachable && state.inRecovery && state.lagMs !== null ? state.lagMs / 1000 : Number.NaN);
    if (!state.reachable) {
      this.setServing(false, "the replica is unreachable", { err: { message: state.error } });
    } else if (!state.inRecovery) {
      // Promoted while this process runs (a failover), or repointed: it is no replica of ours any more.
      if (previous?.inRecovery !== false) this.logger.error("read replica: DATABASE_REPLICA_URL is no longer in recovery; public reads go to the primary");
      this.setServing(false, "the replica is not in recovery");
    } else if (state.lagMs === null) {
      this.setServing(false, "the replica has no heartbeat row yet");
    } else if (state.lagMs > this.maxLagMs) {
      this.setServing(false, "the replica's lag passed DATABASE_REPLICA_MAX_LAG_MS", { lagMs: Math.round(state.lagMs), maxLagMs: this.maxLagMs });
    } else {
      this.setServing(true, "the replica is within its lag bound", { lagMs: Math.round(state.lagMs) });
    }
  }

  private setServing(serving: boolean, why: string, details: Record<string, unknown> = {}): void {
    this.servingGauge.set(serving ? 1 : 0);
    if (serving === this.serving) return;
    this.serving = serving;
    if (serving) this.logger.info(details, `read replica: public reads go to the replica (${why})`);
    else this.logger.warn(details, `read replica: public reads go to the primary (${why})`);
  }
}

function run(pool: Pool, text: string | pg.QueryConfig, values: unknown[] | undefined): Promise<pg.QueryResult> {
  return values === undefined ? pool.query(text as pg.QueryConfig) : pool.query(text as string, values);
}

/**
 * Whether the replica is in recovery, and its lag: now() on the replica minus
 * the heartbeat as replayed there. Not now() - pg_last_xact_replay_timestamp(),
 * which grows while the primary is idle though nothing is behind. The replica's
 * and primary's clocks must agree (NTP): a skew adds to the lag.
 * Under one deadline for taking a connection and the query; a connection that
 * misses it is destroyed, so a hung replica pins no client.
 */
async function readState(replica: Pool, timeoutMs: number): Promise<ReplicaState> {
  let release: ((destroy: boolean) => void) | undefined;
  let timedOut = false;
  const work = (async (): Promise<ReplicaState> => {
    const client: PoolClient = await replica.connect();
    let released = false;
    release = (destroy) => {
      if (released) return;
      released = true;
      client.release(destroy);
    };
    if (timedOut) {
      release(false);
      throw new Error("timed out");
    }
    try {
      const { rows } = await client.query<{ in_recovery: boolean; lag_ms: number | null }>({
        name: "replica_lag",
        text: `select pg_is_in_recovery() as in_recovery,
                      (select extract(epoch from now() - beat_at) * 1000 from replica_heartbeat)::float8 as lag_ms`,
      });
      const row = rows[0]!;
      release(false);
      return { reachable: true, inRecovery: row.in_recovery, lagMs: row.lag_ms === null ? null : Math.max(0, row.lag_ms) };
    } catch (err) {
      // No heartbeat table (the replica has not replayed its migration, or DATABASE_REPLICA_URL names an unmigrated server): lag unknown.
      if ((err as { code?: string }).code !== "42P01") throw err;
      const { rows } = await client.query<{ in_recovery: boolean }>("select pg_is_in_recovery() as in_recovery");
      release(false);
      return { reachable: true, inRecovery: rows[0]!.in_recovery, lagMs: null };
    } finally {
      release(true);
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      // A hung replica: destroy the connection rather than leave it pinned.
      release?.(true);
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  work.catch(() => undefined);
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The public reads for the API. Without DATABASE_REPLICA_URL, the primary
 * pool. With it: a second pool, checked once at start, where a server that is
 * not in recovery is refused (ReplicaNotInRecoveryError) and one that cannot
 * be reached is a warning (the API starts, reads from the primary, and
 * db_replica_up is 0 until the replica answers); then the heartbeat and the
 * lag check on their timers.
 */
export async function startPublicReads(options: PublicReadsOptions): Promise<PublicReads> {
  const { primary, replicaUrl, maxLagMs, poolSize, logger, registry, applicationName = "api", poolOptions = {} } = options;
  if (!replicaUrl) return new PrimaryReads(primary);
  const replica = createPool({ ...poolOptions, connectionString: replicaUrl, max: poolSize, applicationName: `${applicationName}-replica-reads`, logger });
  let state: ReplicaState | undefined;
  try {
    state = await readState(replica, 2 * CHECK_TIMEOUT_MS);
  } catch (err) {
    logger.warn(
      { err: { message: (err as Error).message } },
      "read replica: DATABASE_REPLICA_URL cannot be reached at start; public reads go to the primary until it answers",
    );
  }
  if (state && !state.inRecovery) {
    await replica.end();
    throw new ReplicaNotInRecoveryError();
  }
  const reads = new ReplicaReads(primary, replica, maxLagMs, logger, registry);
  await reads.start();
  return reads;
}
