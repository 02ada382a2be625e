// Finds or starts the Postgres (with PostGIS) and NATS (with JetStream) that
// `npm run dev` (scripts/dev.mjs) and `npm test` (tests/setup/global-setup.ts)
// need, in this order:
//   1. the URL given (DATABASE_URL / NATS_URL, or the default), if it answers;
//   2. else, with a Docker engine, `docker compose up -d --wait postgres nats`;
//   3. else, with the machine's binaries, a private cluster and nats-server
//      under the state directory (.data/…), stopped by stop();
//   4. else a ServicesError whose message is one line naming what to install.
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { findNatsServer, findPostgres, installedPostgresVersions, runCommand, startNats, startPostgres } from "./local-services.mjs";
import { probeNats, probePostgres, where } from "./probes.mjs";

export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";
export const defaultDatabaseUrl = (database) => `postgres://postgres@127.0.0.1:5432/${database}`;

const root = path.resolve(import.meta.dirname, "..");

/** Nothing to use and nothing to start: the message is the line to show. */
export class ServicesError extends Error {
  name = "ServicesError";
}

/** The URL with another host, port and credentials, keeping its database. */
function moved(url, { host, port, user = "postgres", password = "" }) {
  const next = new URL(url);
  next.hostname = host;
  next.port = String(port);
  next.username = user;
  next.password = password;
  return next.toString();
}

/** A running engine, not just the client: `docker info` answers, and compose is there. */
async function dockerCompose(env) {
  const docker = env.DOCKER_BIN ?? "docker";
  if ((await runCommand(docker, ["info"], { env })).code !== 0) return null;
  return (await runCommand(docker, ["compose", "version"], { env })).code === 0 ? docker : null;
}

/** Debian's PostGIS package for the installed server, else for the release's default server. */
function postgisPackage() {
  const [installed] = installedPostgresVersions();
  if (installed) return `postgresql-${installed}-postgis-3`;
  let codename = "";
  try {
    codename = /^VERSION_CODENAME=(.*)$/m.exec(readFileSync("/etc/os-release", "utf8"))?.[1] ?? "";
  } catch {
    // Not Debian-like: the metapackage name below is the best guess.
  }
  const defaults = { bullseye: 13, bookworm: 15, trixie: 17, jammy: 14, noble: 16 };
  return defaults[codename] ? `postgresql-${defaults[codename]}-postgis-3` : "postgresql-postgis";
}

function installLine(who, packages, what) {
  const list = packages.join(" and ");
  return (
    `${who}: no ${what.join(" and no ")} to use or start: install ${list} ` +
    `(apt-get install -y --no-install-recommends ${packages.join(" ")}) or start Docker`
  );
}

/**
 * @param {object} options
 * @param {string} options.who              log prefix: "dev" or "test"
 * @param {string} options.databaseUrl      the Postgres wanted (its database name is kept in every step)
 * @param {string | null} options.natsUrl   the NATS wanted, or null when none is needed
 * @param {string} options.stateDir         where a private cluster and nats-server keep their data
 * @param {boolean} options.keepState       keep that data after stop() (dev) or remove it (tests)
 * @param {(line: string) => void} options.log
 * @param {Record<string, string | undefined>} [options.env]  PG_BIN, NATS_SERVER_BIN, DOCKER_BIN, PATH
 */
export async function bringUp({ who, databaseUrl, natsUrl, stateDir, keepState, log, env = process.env }) {
  const pgProblem = await probePostgres(databaseUrl);
  const natsProblem = natsUrl === null ? null : await probeNats(natsUrl);
  if (pgProblem === null && natsProblem === null) {
    log(`${who}: using postgres at ${where(databaseUrl)}${natsUrl ? ` and nats at ${where(natsUrl)}` : ""}`);
    return { databaseUrl, natsUrl, how: "reachable", stop: async () => {} };
  }
  if (pgProblem !== null) log(`${who}: postgres at ${where(databaseUrl)} is not usable (${pgProblem})`);
  if (natsProblem !== null) log(`${who}: nats at ${where(natsUrl)} is not usable (${natsProblem})`);

  const docker = await dockerCompose(env);
  if (docker) {
    const services = [...(pgProblem !== null ? ["postgres"] : []), ...(natsProblem !== null ? ["nats"] : [])];
    log(`${who}: docker compose up -d --wait ${services.join(" ")}`);
    const up = await runCommand(docker, ["compose", "up", "-d", "--wait", ...services], { cwd: root, env });
    if (up.code !== 0) throw new Error(`docker compose up failed: ${up.output.trim()}`);
    log(`${who}: compose's ${services.join(" and ")} stay up; \`docker compose stop\` stops them`);
    return {
      // compose.yml's ports and its postgres password.
      databaseUrl: pgProblem === null ? databaseUrl : moved(databaseUrl, { host: "127.0.0.1", port: 5432, password: "postgres" }),
      natsUrl: natsProblem === null ? natsUrl : DEFAULT_NATS_URL,
      how: "compose",
      stop: async () => {},
    };
  }

  const pgBin = pgProblem === null ? null : await findPostgres(env);
  const natsBin = natsProblem === null ? null : findNatsServer(env);
  const missing = [];
  if (pgProblem !== null && !pgBin) missing.push([postgisPackage(), "Postgres with PostGIS"]);
  if (natsProblem !== null && !natsBin) missing.push(["nats-server", "NATS with JetStream"]);
  if (missing.length > 0) {
    throw new ServicesError(installLine(who, missing.map(([pkg]) => pkg), missing.map(([, what]) => what)));
  }

  const started = [];
  const stop = async () => {
    for (const service of started.reverse()) await service.stop();
    if (!keepState) rmSync(stateDir, { recursive: true, force: true });
  };
  const result = { databaseUrl, natsUrl, how: "local", stop };
  try {
    if (pgBin) {
      const cluster = await startPostgres({ bin: pgBin, dir: path.join(stateDir, "postgres"), keep: keepState, log: (l) => log(`${who}: ${l}`) });
      started.push(cluster);
      result.databaseUrl = moved(databaseUrl, { host: "127.0.0.1", port: cluster.port });
      log(`${who}: started postgres (${pgBin}) in ${cluster.dir} on 127.0.0.1:${cluster.port}`);
    }
    if (natsBin) {
      const nats = await startNats({ bin: natsBin, dir: path.join(stateDir, "nats"), keep: keepState });
      started.push(nats);
      result.natsUrl = `nats://127.0.0.1:${nats.port}`;
      log(`${who}: started ${natsBin} -js (pid ${nats.pid}) on 127.0.0.1:${nats.port}`);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return result;
}
