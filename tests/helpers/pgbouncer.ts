import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { freePort } from "./nats-server.js";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";

/** Debian's pgbouncer package (1.18 on bookworm); `.ci/run` installs it. */
export const PGBOUNCER = process.env.PGBOUNCER_BIN ?? "/usr/sbin/pgbouncer";

/** PgBouncer refuses to run as root; as root the helper has it switch to this user (`-u`). */
const RUN_AS = "postgres";

export interface PgBouncerOptions {
  /** The Postgres server every database name is passed on to. */
  upstream: { host: string; port: number };
  poolMode?: "transaction" | "session" | "statement";
  /** Server connections per database and user: bounded, since the test Postgres allows 100 in all. */
  poolSize?: number;
}

export interface PgBouncer {
  readonly host: string;
  readonly port: number;
  /** The pgbouncer process (it runs in the foreground: with `-u` it switches user, it does not fork). */
  readonly pid: number;
  /** `url` (a Postgres connection string) with its host and port replaced by this PgBouncer's. */
  through(url: string): string;
  /** A statement on the admin console (database `pgbouncer`), e.g. `SHOW STATS`; simple protocol only. */
  admin<R extends pg.QueryResultRow = Record<string, unknown>>(statement: string): Promise<R[]>;
  /** What it wrote to stderr: its log. */
  log(): string;
  stop(): Promise<void>;
}

function runsAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/** True when PGBOUNCER can be started here (installed, and, as root, a user to switch to). */
export function canStartPgBouncer(): boolean {
  if (spawnSync(PGBOUNCER, ["--version"]).status !== 0) return false;
  return !runsAsRoot() || spawnSync("id", ["-u", RUN_AS]).status === 0;
}

/**
 * A real pgbouncer as a child process, on a free port of 127.0.0.1, with its
 * own ini in a temp dir: every database name (`*`) goes to the upstream server
 * as the connecting user, no password asked (auth_type trust; the user must be
 * in auth_file). The admin console takes the user `postgres`.
 */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startOnce(options, await freePort());
    } catch (err) {
      // Another process may take the free port before pgbouncer binds it.
      if (attempt >= 3 || !/address already in use/i.test((err as Error).message)) throw err;
    }
  }
}

async function startOnce({ upstream, poolMode = "transaction", poolSize = 5 }: PgBouncerOptions, port: number): Promise<PgBouncer> {
  const dir = mkdtempSync(path.join(tmpdir(), "ass-pgbouncer-"));
  // Read by pgbouncer after it switched to RUN_AS.
  chmodSync(dir, 0o755);
  const ini = path.join(dir, "pgbouncer.ini");
  const users = path.join(dir, "userlist.txt");
  writeFileSync(users, `"postgres" ""\n`, { mode: 0o644 });
  writeFileSync(
    ini,
    [
      "[databases]",
      `* = host=${upstream.host} port=${upstream.port}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      // No unix socket: nothing of it is needed, and its default directory (/tmp) is shared.
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${users}`,
      "admin_users = postgres",
      "stats_users = postgres",
      `pool_mode = ${poolMode}`,
      `default_pool_size = ${poolSize}`,
      "max_client_conn = 500",
      // A test file's database is dropped at its end: its idle server connections go soon after.
      "server_idle_timeout = 10",
      "server_lifetime = 300",
      "",
    ].join("\n"),
    { mode: 0o644 },
  );
  const args = [...(runsAsRoot() ? ["-u", RUN_AS] : []), ini];
  const child: ChildProcess = spawn(PGBOUNCER, args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    // Bounded: a long run logs every connection.
    stderr = (stderr + chunk).slice(-200_000);
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let running = true;
  void exited.then(() => {
    running = false;
  });

  const host = "127.0.0.1";
  const adminUrl = `postgres://postgres@${host}:${port}/pgbouncer`;
  const admin = async <R extends pg.QueryResultRow>(statement: string): Promise<R[]> => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      return (await client.query<R>(statement)).rows;
    } finally {
      await client.end();
    }
  };
  const stop = async () => {
    if (running) {
      // SIGTERM: immediate shutdown, clients cut.
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 10_000;
  for (;;) {
    if (!running) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pgbouncer exited at start: ${stderr.trim().split("\n").slice(-5).join(" | ")}`);
    }
    try {
      await admin("SHOW VERSION");
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`pgbouncer did not answer on ${host}:${port} within 10 s: ${(err as Error).message}; log: ${stderr.slice(-2000)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  return {
    host,
    port,
    pid: child.pid!,
    through(url: string) {
      const parsed = new URL(url);
      parsed.hostname = host;
      parsed.port = String(port);
      return parsed.toString();
    },
    admin,
    log: () => stderr,
    stop,
  };
}
