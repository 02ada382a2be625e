#!/usr/bin/env node
// `npm run dev`: finds or starts Postgres and NATS (scripts/services.mjs), creates
// the development database if it is missing, applies migrations (the same
// `api migrate up` step production runs), then runs the API, the relay and the
// notifier with development settings and readable logs. On exit it stops the
// processes, then whatever it started for them.
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { bringUp, DEFAULT_NATS_URL, defaultDatabaseUrl, ServicesError } from "./services.mjs";

const root = path.resolve(import.meta.dirname, "..");
const env = {
  API_ENV: "development",
  API_DEV_AUTH_BYPASS: "true",
  DATABASE_URL: defaultDatabaseUrl("animal_safety"),
  NATS_URL: DEFAULT_NATS_URL,
  LOG_PRETTY: "true",
  LOG_LEVEL: "info",
  // The relay and the notifier share this machine with the API: they yield the cores to it (README, "Performance").
  RELAY_NICE: "10",
  NOTIFIER_NICE: "10",
  ...process.env,
};

// An exported DATABASE_URL is honoured, but never one naming a database the
// server itself needs: dev would migrate it and fill it with development rows.
const database = decodeURIComponent(new URL(env.DATABASE_URL).pathname.slice(1));
if (["", "postgres", "template0", "template1"].includes(database)) {
  const named = database === "" ? "no database" : `the server's own "${database}" database`;
  console.error(
    `dev: DATABASE_URL names ${named}, which npm run dev would migrate and fill with development data: name a database of its own, or unset DATABASE_URL to use ${defaultDatabaseUrl("animal_safety")}`,
  );
  process.exit(1);
}

let services;
try {
  services = await bringUp({
    who: "dev",
    databaseUrl: env.DATABASE_URL,
    natsUrl: env.NATS_URL,
    // DEV_DATA_DIR moves the private cluster elsewhere (the tests of this script do).
    stateDir: env.DEV_DATA_DIR ?? path.join(root, ".data", "dev"),
    keepState: true,
    log: (line) => console.log(line),
  });
} catch (err) {
  console.error(err instanceof ServicesError ? err.message : `dev: ${err.message}`);
  process.exit(1);
}
env.DATABASE_URL = services.databaseUrl;
env.NATS_URL = services.natsUrl;

async function exit(code) {
  try {
    await services.stop();
    if (services.how === "local") console.log("dev: stopped the services it started");
  } catch (err) {
    console.error(`dev: stopping services: ${err.message}`);
  }
  process.exit(code);
}

try {
  const maintenance = new URL(env.DATABASE_URL);
  maintenance.pathname = "/postgres";
  const admin = new pg.Client({ connectionString: maintenance.toString() });
  await admin.connect();
  try {
    const exists = await admin.query("select 1 from pg_database where datname = $1", [database]);
    if (exists.rowCount === 0) {
      console.log(`dev: creating database ${database}`);
      await admin.query(`create database "${database.replaceAll('"', '""')}"`);
    }
  } finally {
    await admin.end();
  }
} catch (err) {
  console.error(`dev: could not prepare database ${database}: ${err.message}`);
  await exit(1);
}

// The admin console at /admin and the app at /app are Vite bundles: each is built once if it is missing.
for (const [folder, mount] of [["admin-ui", "/admin"], ["app-ui", "/app"]]) {
  if (existsSync(path.join(root, folder, "dist/index.html"))) continue;
  const build = spawnSync(process.execPath, [path.join(root, "node_modules/vite/bin/vite.js"), "build", folder], { cwd: root, stdio: "inherit" });
  if (build.status !== 0) console.error(`dev: the ${folder} bundle did not build; ${mount} will answer 404`);
}

const migrate = spawnSync(process.execPath, [path.join(root, "bin/api"), "migrate", "up"], { env, stdio: "inherit" });
if (migrate.status !== 0) await exit(migrate.status ?? 1);

// Each in its own process group: a Ctrl-C reaches only this script, which
// sends one SIGTERM, so each process shuts down gracefully rather than taking
// the terminal's signal and ours as a second, "exit now" one.
const children = ["api", "relay", "notifier"].map((name) =>
  spawn(process.execPath, ["--import", "tsx", path.join(root, name, "main.ts")], { env, stdio: "inherit", detached: true }),
);
let stopping = false;
let exitCode = 0;
const stop = (signal) => {
  if (stopping) return;
  stopping = true;
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
process.on("SIGINT", () => stop("SIGTERM"));
process.on("SIGTERM", () => stop("SIGTERM"));
let running = children.length;
for (const child of children) {
  child.on("exit", (code) => {
    if (!stopping) {
      console.error(`dev: a process exited with ${code}; stopping the others`);
      exitCode = code || 1;
      stop("SIGTERM");
    }
    // The services go last, once nothing uses them.
    if (--running === 0) void exit(exitCode);
  });
}
