import pg from "pg";
import type { Logger } from "./logger.js";

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/**
 * Anything that can run a query: a pool, or a client inside a transaction.
 * Hot-path queries pass `{ name, text, values }`: a named statement is
 * parsed and planned once per connection instead of on every call.
 */
export interface Queryable {
  query<R extends pg.QueryResultRow = any>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  query<R extends pg.QueryResultRow = any>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
}

// Timestamps and bigint counts come back as strings, parsed where they are used.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

/**
 * A select-list expression giving a timestamp column as exact UTC text
 * (microseconds), for keyset cursors: a JavaScript Date keeps milliseconds only.
 */
export const exactTime = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export interface PoolOptions {
  connectionString: string;
  max?: number;
  applicationName: string;
  logger: Logger;
  /** Connection settings (`-c name=value`) besides jit=off, e.g. notifier/consumer.ts CONSUMER_SESSION_SETTINGS. */
  settings?: Readonly<Record<string, string>>;
  /**
   * DATABASE_NAMED_STATEMENTS. False drops every query's `name`, so each runs
   * as an unnamed statement: PgBouncer 1.18 in transaction pooling hands a
   * client a different server connection per transaction, where the named
   * statement was never prepared.
   */
  namedStatements?: boolean;
  /**
   * DATABASE_SESSION_SETTINGS. "startup" sends statement_timeout, jit=off and
   * `settings` as startup parameters; "role" sends none, since PgBouncer refuses
   * unknown startup parameters: the role's defaults (ROLE_SETTINGS) give them,
   * which checkRoleSettings verifies.
   */
  sessionSettings?: SessionSettingsSource;
}

export type SessionSettingsSource = "startup" | "role";

/** The API's statement_timeout: a request waits no longer for one statement. */
export const STATEMENT_TIMEOUT_MS = 10_000;

/**
 * What the startup parameters set, as role defaults for a pooler's server
 * connections: `alter role <api role> set statement_timeout = '10s'` and
 * `set jit = off` (docs/operations.md). A server connection reads them at
 * login, so they cost no round trip, and cover single statements as well as
 * transactions, which `set local` in each transaction would not.
 */
export const ROLE_SETTINGS: Readonly<Record<string, string>> = { statement_timeout: `${STATEMENT_TIMEOUT_MS / 1000}s`, jit: "off" };

/** The statements that give `role` (in `database` only, when named) ROLE_SETTINGS. */
export function roleSettingsStatements(role: string, database?: string): string[] {
  const target = `${pg.escapeIdentifier(role)}${database === undefined ? "" : ` in database ${pg.escapeIdentifier(database)}`}`;
  return Object.entries(ROLE_SETTINGS).map(([name, value]) => `alter role ${target} set ${name} = ${pg.escapeLiteral(value)}`);
}

/** The role's settings behind a pooler differ from ROLE_SETTINGS: refused at start. */
export class RoleSettingsError extends Error {
  constructor(role: string, differences: string[]) {
    super(
      `DATABASE_SESSION_SETTINGS=role: the role ${role} has ${differences.join(", ")}; ` +
        `behind PgBouncer these come from the role's defaults: ${roleSettingsStatements(role).join("; ")}`,
    );
    this.name = "RoleSettingsError";
  }
}

/**
 * For DATABASE_SESSION_SETTINGS=role: one statement through the pool, which
 * throws RoleSettingsError unless its connection has ROLE_SETTINGS. Every
 * server connection of a PgBouncer pool logs in as the same role to the same
 * database, so one stands for all. A database that cannot be reached is
 * logged, not thrown: the API starts without Postgres, as it does with
 * startup parameters.
 */
export async function checkRoleSettings(pool: Pool, logger: Logger): Promise<void> {
  let rows: { role: string; statement_timeout: string; jit: string }[];
  try {
    ({ rows } = await pool.query(
      `select current_user as role, current_setting('statement_timeout') as statement_timeout, current_setting('jit') as jit`,
    ));
  } catch (err) {
    if (!isDatabaseUnavailable(err)) throw err;
    logger.warn({ err: { message: (err as Error).message } }, "db: role settings not checked: the database is unreachable");
    return;
  }
  const row = rows[0]!;
  const expected = { statement_timeout: ROLE_SETTINGS.statement_timeout!, jit: ROLE_SETTINGS.jit! };
  const differences = (["statement_timeout", "jit"] as const)
    .filter((name) => row[name] !== expected[name])
    .map((name) => `${name}=${row[name]} (not ${expected[name]})`);
  if (differences.length > 0) throw new RoleSettingsError(row.role, differences);
}

/**
 * A connection's `options`: jit=off and the given settings. Every query here
 * is short OLTP work. JIT compiles any plan whose estimate passes
 * jit_above_cost, and the alerts query's nearest-first pass is estimated high
 * though it reads a page: measured over 1,000,000 reports, JIT added 42 ms to
 * a 4 ms query.
 */
export function connectionOptions(settings: Readonly<Record<string, string>> = {}): string {
  return Object.entries({ jit: "off", ...settings })
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(" ");
}

export function createPool({
  connectionString,
  max = 10,
  applicationName,
  logger,
  settings = {},
  namedStatements = true,
  sessionSettings = "startup",
}: PoolOptions): Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    // PgBouncer passes application_name on (it tracks it per client), so it stays a startup parameter either way.
    application_name: applicationName,
    // A request must fail fast while Postgres is down, not queue for ever.
    connectionTimeoutMillis: 2_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    ...(sessionSettings === "startup" ? { statement_timeout: STATEMENT_TIMEOUT_MS, options: connectionOptions(settings) } : {}),
  });
  // An idle client losing its connection (Postgres restart) must not crash the process.
  pool.on("error", (err) => logger.warn({ err: { message: err.message } }, "db: idle client error"));
  // A checked-out client's connection can die too; its query rejects, and
  // without a listener the client's "error" event would crash the process.
  pool.on("connect", (client) => {
    client.on("error", (err) => logger.warn({ err: { message: err.message } }, "db: client error"));
    if (!namedStatements) dropStatementNames(client);
  });
  return pool;
}

/**
 * Makes the client send each `{ name, text, values }` without its name, in
 * one place rather than at every call site. pg-pool emits "connect" before a
 * new client runs its first query, pool.query's included.
 */
function dropStatementNames(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => query(withoutName(config), ...rest);
}

function withoutName(config: unknown): unknown {
  if (typeof config !== "object" || config === null || !("name" in config)) return config;
  // A Submittable (pg.Query, a cursor) keeps its own state: passed on as it is.
  if (typeof (config as { submit?: unknown }).submit === "function") return config;
  const { name: _name, ...unnamed } = config as pg.QueryConfig;
  return unnamed;
}

/** Runs fn in one transaction on one client; commits, or rolls back and rethrows. */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  return withOwnTransaction(pool, async (client) => {
    await client.query("begin");
    const result = await fn(client);
    await client.query("commit");
    return result;
  });
}

/**
 * A client for a transaction `fn` begins and commits itself: when it folds
 * `begin` and `commit` into its first and last statements to save round trips
 * (the relay's batch), or begins only once it knows it has something to write
 * (the notifier's recordEvents). On an error it is rolled back, and a
 * connection that cannot roll back is dropped rather than returned to the pool.
 */
export async function withOwnTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    return await fn(client);
  } catch (err) {
    try {
      await client.query("rollback");
    } catch {
      broken = true;
    }
    throw err;
  } finally {
    client.release(broken);
  }
}

/**
 * `select 1` under one deadline covering both taking a connection and the
 * query, so a server that accepts TCP and then never answers (a hung or
 * partitioned Postgres) still gives `false` on time. A ping that misses the
 * deadline destroys its connection: repeated probes against a hung server
 * never pin pool clients.
 */
export async function pingDatabase(pool: Pool, timeoutMs: number): Promise<boolean> {
  let client: PoolClient | null = null;
  let finished = false;
  const release = (destroy: boolean) => {
    const held = client;
    client = null;
    held?.release(destroy);
  };
  const ping = (async () => {
    const connected = await pool.connect();
    if (finished) {
      // Connected after the deadline: a healthy connection, so back to the pool.
      connected.release();
      return false;
    }
    client = connected;
    await connected.query("select 1");
    release(false);
    return true;
  })().catch(() => {
    release(true);
    return false;
  });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<boolean>((resolve) => {
    timer = setTimeout(resolve, timeoutMs, false);
  });
  try {
    return await Promise.race([ping, deadline]);
  } finally {
    finished = true;
    clearTimeout(timer);
    release(true);
  }
}

const connectionErrorCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "08000",
  "08003",
  "08006",
  "08001",
  "08004",
]);

/** True when err means Postgres could not be reached, not that the query was wrong. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: string }).code;
  if (code && connectionErrorCodes.has(code)) return true;
  return /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED|Client has encountered a connection error/i.test(
    err.message,
  );
}

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === "23505" && (constraint === undefined || e.constraint === constraint);
}
