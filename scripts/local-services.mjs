// Step 3 of scripts/services.mjs: a private Postgres cluster (with PostGIS) and a
// `nats-server -js` from the machine's own binaries, on free loopback ports, with
// their data under a directory of ours. Only what this module started is stopped.
import { spawn } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import path from "node:path";
import { probeNats } from "./probes.mjs";

const isRoot = () => userInfo().uid === 0;

/**
 * Runs a command to its end in its own process group, so a Ctrl-C meant for
 * `npm run dev` does not reach the postmaster pg_ctl starts: the servers stop
 * when we stop them, after the processes that use them.
 * @returns {Promise<{ code: number | null, output: string }>}
 */
export function runCommand(file, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(file, args, { ...options, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("error", (err) => resolve({ code: null, output: `${output}${err.message}` }));
    child.on("close", (code) => resolve({ code, output }));
  });
}

/** initdb and postgres refuse to run as root: as root, Postgres' commands run as the `postgres` user. */
function runPg(bin, command, args) {
  const file = path.join(bin, command);
  return isRoot() ? runCommand("runuser", ["-u", "postgres", "--", file, ...args]) : runCommand(file, args);
}

async function mustRunPg(bin, command, args) {
  const { code, output } = await runPg(bin, command, args);
  if (code !== 0) throw new Error(`${command} failed (${code}): ${output.trim().split("\n").slice(-3).join(" | ")}`);
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The Postgres major versions whose server is installed (Debian layout), newest first. */
export function installedPostgresVersions() {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, "bin", "postgres")))
    .sort((a, b) => Number(b) - Number(a));
}

/**
 * Server binaries with PostGIS available to them: the directory in PG_BIN, else
 * the newest /usr/lib/postgresql/N/bin that has it. Null when there is none.
 */
export async function findPostgres(env) {
  const dirs = env.PG_BIN ? [env.PG_BIN] : installedPostgresVersions().map((v) => `/usr/lib/postgresql/${v}/bin`);
  for (const bin of dirs) {
    if (!["initdb", "pg_ctl", "postgres"].every((f) => existsSync(path.join(bin, f)))) continue;
    const sharedir = await runCommand(path.join(bin, "pg_config"), ["--sharedir"]);
    const share = sharedir.code === 0 ? sharedir.output.trim() : `/usr/share/postgresql/${path.basename(path.dirname(bin))}`;
    if (existsSync(path.join(share, "extension", "postgis.control"))) return bin;
  }
  return null;
}

/** nats-server: NATS_SERVER_BIN, else the first on PATH, /usr/sbin or /usr/local/bin. Null when there is none. */
export function findNatsServer(env) {
  if (env.NATS_SERVER_BIN) return existsSync(env.NATS_SERVER_BIN) ? env.NATS_SERVER_BIN : null;
  const dirs = [...(env.PATH ?? "").split(path.delimiter), "/usr/sbin", "/usr/local/bin"].filter(Boolean);
  return dirs.map((d) => path.join(d, "nats-server")).find((f) => existsSync(f)) ?? null;
}

/**
 * The directory the cluster lives in, owned by the user Postgres runs as. As
 * root, a directory `postgres` cannot reach (a checkout under /root) is replaced
 * by a temporary one.
 */
async function clusterDir(wanted, log) {
  mkdirSync(wanted, { recursive: true });
  if (!isRoot()) return wanted;
  const uid = Number((await runCommand("id", ["-u", "postgres"])).output.trim());
  const gid = Number((await runCommand("id", ["-g", "postgres"])).output.trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error("running as root, Postgres needs a `postgres` user");
  chownSync(wanted, uid, gid);
  if ((await runCommand("runuser", ["-u", "postgres", "--", "test", "-w", wanted])).code === 0) return wanted;
  const fallback = mkdtempSync(path.join(tmpdir(), "ass-postgres-"));
  chownSync(fallback, uid, gid);
  log(`the postgres user cannot reach ${wanted}; the cluster lives in ${fallback} for this run`);
  return fallback;
}

/**
 * Starts (after initdb, the first time) a cluster in `<dir>/data`, listening on
 * 127.0.0.1 only, on a free port, with trust authentication for user postgres.
 * A cluster of ours that is already running is used as it is and not stopped.
 * @returns {Promise<{ port: number, dir: string, stop: () => Promise<void> }>}
 */
export async function startPostgres({ bin, dir: wanted, keep, log }) {
  const dir = await clusterDir(wanted, log);
  // A temporary stand-in for the wanted directory is not kept: the next run makes a new one.
  const remove = !keep || dir !== wanted;
  const data = path.join(dir, "data");
  if (!existsSync(path.join(data, "PG_VERSION"))) {
    // UTF8 whatever the machine's locale: a bare environment would give SQL_ASCII.
    await mustRunPg(bin, "initdb", ["-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"]);
  }
  if ((await runPg(bin, "pg_ctl", ["-D", data, "status"])).code === 0) {
    // postmaster.pid's fourth line is the port.
    const port = Number(readFileSync(path.join(data, "postmaster.pid"), "utf8").split("\n")[3]);
    log(`postgres in ${dir} is already running on port ${port}; using it, leaving it running`);
    return { port, dir, stop: async () => {} };
  }
  const port = await freePort();
  // No Unix socket: a deep checkout path would exceed the socket path limit.
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=100${remove ? " -c fsync=off" : ""}`;
  await mustRunPg(bin, "pg_ctl", ["-D", data, "-l", path.join(dir, "log"), "-o", options, "-w", "-t", "60", "start"]);
  return {
    port,
    dir,
    stop: async () => {
      await runPg(bin, "pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]);
      if (remove) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts `nats-server -js` on a free loopback port with its store in `<dir>`,
 * and waits until it answers with JetStream on.
 * @returns {Promise<{ port: number, pid: number, stop: () => Promise<void> }>}
 */
export async function startNats({ bin, dir, keep }) {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const child = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], {
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
    if (!keep) rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 15_000;
  while ((await probeNats(`nats://127.0.0.1:${port}`)) !== null) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`nats-server did not start: ${stderr.trim().split("\n").slice(-2).join(" | ") || "no output"}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port, pid: child.pid, stop };
}
