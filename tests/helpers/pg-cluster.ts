import { execFile } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { freePort } from "./nats-server.js";

const run = promisify(execFile);
const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";

/**
 * A Postgres cluster of the test's own (initdb in a temp dir, a free port),
 * so a fault test can stop and start Postgres without touching the
 * machine's server or the other test files. As root it runs as `postgres`.
 * It can stream to replicas of its own (createReplica): initdb's pg_hba.conf
 * already trusts replication connections from 127.0.0.1.
 */
export class TestPgCluster {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  static async create(): Promise<TestPgCluster> {
    const dir = await TestPgCluster.ownDir();
    const cluster = new TestPgCluster(dir, await freePort());
    await cluster.pg("initdb", ["-D", path.join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync"]);
    await cluster.start();
    return cluster;
  }

  /**
   * A hot standby streaming from this cluster: `pg_basebackup -R` (which
   * writes primary_conninfo and standby.signal) into a temp dir, started on
   * a free port. Stop, start and dispose it as any cluster.
   */
  async createReplica(): Promise<TestPgCluster> {
    const dir = await TestPgCluster.ownDir();
    const replica = new TestPgCluster(dir, await freePort());
    await replica.pg("pg_basebackup", [
      "-D", path.join(dir, "data"),
      "-h", "127.0.0.1", "-p", String(this.port), "-U", "postgres",
      "-R", "-X", "stream", "--checkpoint=fast", "--no-sync",
    ]);
    await replica.start();
    return replica;
  }

  private static async ownDir(): Promise<string> {
    const dir = mkdtempSync(path.join(tmpdir(), "ass-pg-"));
    if (userInfo().uid === 0) chownSync(dir, Number(await idOf("-u")), Number(await idOf("-g")));
    return dir;
  }

  url(database = "postgres"): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    await this.pg("pg_ctl", [
      "-D", path.join(this.dir, "data"),
      "-l", path.join(this.dir, "log"),
      // wal_level, max_wal_senders and hot_standby are Postgres 15's defaults, named because replicas rely on them.
      "-o", `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100 -c wal_level=replica -c max_wal_senders=10 -c hot_standby=on`,
      "-w", "start",
    ]);
  }

  async stop(mode: "fast" | "immediate" = "fast"): Promise<void> {
    await this.pg("pg_ctl", ["-D", path.join(this.dir, "data"), "-m", mode, "-w", "stop"]);
  }

  async dispose(): Promise<void> {
    await this.stop("immediate").catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async pg(binary: string, args: string[]): Promise<void> {
    const file = path.join(PG_BIN, binary);
    if (userInfo().uid === 0) await run("runuser", ["-u", "postgres", "--", file, ...args], { cwd: this.dir });
    else await run(file, args, { cwd: this.dir });
  }
}

async function idOf(flag: "-u" | "-g"): Promise<string> {
  const { stdout } = await run("id", [flag, "postgres"]);
  return stdout.trim();
}
