import type { Queryable } from "../../../lib/db.js";
import { DEFAULT_PUSH_ORIGIN_PAUSE_MS, PUSH_ORIGIN_TIMEOUTS_TO_PAUSE } from "../../../lib/deadline.js";
import { registerSourcedGauge, type Registry } from "../../../lib/metrics.js";

/**
 * Paused push origins (contract part 4, "Nothing stalls the service"): an
 * origin (scheme, host and port) whose requests timed out
 * PUSH_ORIGIN_TIMEOUTS_TO_PAUSE times in a row is paused for PUSH_ORIGIN_PAUSE_MS,
 * and its deliveries are put back until the pause ends, so a push service
 * that stalls holds no job slot. The state is the table push_origin_health
 * (migration 000024), so every notifier process keeps the same pause
 * (docs/decisions/0091).
 *
 * - Written only when something changes: a timeout (counted, and the third in
 *   a row, or any later one, sets the pause), and the first answer in time
 *   from an origin that has a row (the row is deleted). A healthy origin has
 *   no row and costs no statement.
 * - Read as a whole at most every REFRESH_MS per process, on the caller's
 *   client: the table holds only origins that timed out since their last
 *   answer. A process sees another's pause within that time.
 * - A pause's end is the database's time (the put-back job's run_at is
 *   compared with the database's clock); this process compares it with its
 *   own clock through the time left, read with it, so clock skew does not matter.
 */

const REFRESH_MS = 1_000;

interface OriginState {
  timeouts: number;
  /** The pause's end as the database wrote it, or null. */
  pausedUntil: Date | null;
  /** The same end on this process's clock (Date.now()). */
  pausedUntilLocal: number;
}

interface HealthRow {
  origin: string;
  timeouts: number;
  pausedUntil: Date | null;
  remainingMs: number;
}

export interface OriginPauses {
  /** When the origin's pause ends (the database's time), or null when it is not paused; refreshes the cache when stale. */
  pausedUntil(client: Queryable, origin: string): Promise<Date | null>;
  /** The pause's time left by the cache alone (ms), or 0: for a send about to start. */
  pausedForMs(origin: string): number;
  /** A request to the origin was cut at its deadline. */
  recordTimeout(client: Queryable, origin: string): Promise<void>;
  /** The origin answered in time (any status): its streak of timeouts ends. */
  recordAnswer(client: Queryable, origin: string): Promise<void>;
}

/** The origin of an endpoint URL (`https://push.example.net:8443`), or null when it is no URL. */
export function originOf(endpoint: string): string | null {
  try {
    return new URL(endpoint).origin;
  } catch {
    return null;
  }
}

export function createOriginPauses({ pauseMs = DEFAULT_PUSH_ORIGIN_PAUSE_MS }: { pauseMs?: number } = {}): OriginPauses {
  let known = new Map<string, OriginState>();
  let readAt = -Infinity;
  let reading: Promise<void> | null = null;
  // When this process last wrote each origin's row: a read that began before a write must not undo what it learnt.
  const wroteAt = new Map<string, number>();

  const stateOf = (row: HealthRow): OriginState => ({
    timeouts: row.timeouts,
    pausedUntil: row.remainingMs > 0 ? row.pausedUntil : null,
    pausedUntilLocal: row.remainingMs > 0 ? Date.now() + row.remainingMs : 0,
  });

  const selectState = `consecutive_timeouts as timeouts, paused_until as "pausedUntil",
    coalesce(greatest(0, extract(epoch from paused_until - now()) * 1000), 0)::float8 as "remainingMs"`;

  async function refresh(client: Queryable): Promise<void> {
    if (Date.now() - readAt < REFRESH_MS) return;
    reading ??= (async () => {
      const began = performance.now();
      try {
        const { rows } = await client.query<HealthRow>(`select origin, ${selectState} from push_origin_health`);
        const read = new Map(rows.map((row) => [row.origin, stateOf(row)]));
        for (const [origin, at] of wroteAt) {
          if (at < began) {
            wroteAt.delete(origin);
            continue;
          }
          const mine = known.get(origin);
          if (mine) read.set(origin, mine);
          else read.delete(origin);
        }
        known = read;
        readAt = Date.now();
      } finally {
        reading = null;
      }
    })();
    await reading;
  }

  const pausedForMs = (origin: string): number => Math.max(0, (known.get(origin)?.pausedUntilLocal ?? 0) - Date.now());

  return {
    async pausedUntil(client, origin) {
      await refresh(client);
      return pausedForMs(origin) > 0 ? known.get(origin)!.pausedUntil : null;
    },
    pausedForMs,
    async recordTimeout(client, origin) {
      const { rows } = await client.query<HealthRow>(
        `insert into push_origin_health as h (origin, consecutive_timeouts, paused_until)
         values ($1::text, 1, case when 1 >= $2::int then now() + $3::int * interval '1 millisecond' end)
         on conflict (origin) do update
           set consecutive_timeouts = h.consecutive_timeouts + 1,
               paused_until = case when h.consecutive_timeouts + 1 >= $2::int then now() + $3::int * interval '1 millisecond'
                                   else h.paused_until end,
               updated_at = now()
         returning origin, ${selectState}`,
        [origin, PUSH_ORIGIN_TIMEOUTS_TO_PAUSE, pauseMs],
      );
      known.set(origin, stateOf(rows[0]!));
      wroteAt.set(origin, performance.now());
    },
    async recordAnswer(client, origin) {
      // Only an origin known to have a row: a healthy one costs nothing. One whose row another process wrote
      // since the last read is reset at the next answer after that read.
      if (!known.has(origin)) return;
      known.delete(origin);
      wroteAt.set(origin, performance.now());
      await client.query(`delete from push_origin_health where origin = $1::text`, [origin]);
      // And again: a read that began while the delete ran may still have seen the row.
      known.delete(origin);
      wroteAt.set(origin, performance.now());
    },
  };
}

/** push_origin_paused: origins paused now, read at scrape time. No origin label: anyone can subscribe an endpoint on a host of their own. */
export function registerOriginPauseMetrics(registry: Registry, db: Queryable): void {
  registerSourcedGauge(registry, {
    name: "push_origin_paused",
    help: `Push origins paused now, after timing out ${PUSH_ORIGIN_TIMEOUTS_TO_PAUSE} times in a row; their deliveries wait for the pause's end`,
    source: "postgres",
    async read() {
      const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from push_origin_health where paused_until > now()`);
      return [{ value: rows[0]!.n }];
    },
  });
}
