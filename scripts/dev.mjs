#!/usr/bin/env node
// `npm run dev`: creates the development database if it is missing, applies
// migrations (the same `api migrate up` step production runs), then runs the
// API, the relay and the notifier with development settings and readable logs.
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import pg from "pg";

const root = path.resolve(import.meta.dirname, "..");
const env = {
  API_ENV: "development",
  API_DEV_AUTH_BYPASS: "true",
  DATABASE_URL: "postgres://postgres@127.0.0.1:5432/animal_safety",
  NATS_URL: "nats://127.0.0.1:4222",
  LOG_PRETTY: "true",
  LOG_LEVEL: "info",
  ...process.env,
};

const target = new URL(env.DATABASE_URL);
const database = target.pathname.slice(1);
const maintenance = new URL(env.DATABASE_URL);
maintenance.pathname = "/postgres";
const admin = new pg.Client({ connectionString: maintenance.toString() });
await admin.connect();
const exists = await admin.query("select 1 from pg_database where datname = $1", [database]);
if (exists.rowCount === 0) {
  console.log(`dev: creating database ${database}`);
  await admin.query(`create database "${database.replaceAll('"', '""')}"`);
}
await admin.end();

// The admin console at /admin is a Vite bundle: build it once if it is missing.
if (!existsSync(path.join(root, "admin-ui/dist/index.html"))) {
  const build = spawnSync(process.execPath, [path.join(root, "node_modules/vite/bin/vite.js"), "build", "admin-ui"], {
    cwd: root,
    stdio: "inherit",
  });
  if (build.status !== 0) console.error("dev: the admin console bundle did not build; /admin will answer 404");
}

const migrate = spawnSync(process.execPath, [path.join(root, "bin/api"), "migrate", "up"], { env, stdio: "inherit" });
if (migrate.status !== 0) process.exit(migrate.status ?? 1);

const children = ["api", "relay", "notifier"].map((name) =>
  spawn(process.execPath, ["--import", "tsx", path.join(root, name, "main.ts")], { env, stdio: "inherit" }),
);
let stopping = false;
const stop = (signal) => {
  if (stopping) return;
  stopping = true;
  for (const child of children) child.kill(signal);
};
process.on("SIGINT", () => stop("SIGTERM"));
process.on("SIGTERM", () => stop("SIGTERM"));
for (const child of children) {
  child.on("exit", (code) => {
    if (!stopping) {
      console.error(`dev: a process exited with ${code}; stopping the others`);
      stop("SIGTERM");
      process.exitCode = code ?? 1;
    }
  });
}
