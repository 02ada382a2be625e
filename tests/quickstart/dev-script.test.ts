import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { freePort, probePort, TestNatsServer } from "../helpers/nats-server.js";
import { databaseUrlFor } from "../setup/global-setup.js";

const root = path.resolve(import.meta.dirname, "../..");
const committed = readdirSync(path.join(root, "migrations/committed"))
  .filter((f) => f.endsWith(".sql"))
  .map((f) => f.split(/[-.]/)[0]);

/** `npm run dev` (scripts/dev.mjs) with its output collected. */
class Dev {
  output = "";
  readonly exited: Promise<number | null>;
  constructor(readonly child: ChildProcess) {
    child.stdout!.on("data", (c) => (this.output += c));
    child.stderr!.on("data", (c) => (this.output += c));
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  }

  static start(env: Record<string, string>): Dev {
    const base = { PATH: process.env.PATH!, LOG_PRETTY: "false", DOCKER_BIN: "/nonexistent/docker" };
    return new Dev(spawn(process.execPath, [path.join(root, "scripts/dev.mjs")], { cwd: root, env: { ...base, ...env }, stdio: ["ignore", "pipe", "pipe"] }));
  }

  async waitFor(pattern: RegExp, timeoutMs = 90_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    let code: number | null | undefined;
    void this.exited.then((c) => (code = c));
    for (;;) {
      const match = this.output.match(pattern);
      if (match) return match;
      if (code !== undefined || Date.now() > deadline) throw new Error(`no ${pattern} (exit ${code}):\n${this.output.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

const running: Dev[] = [];
afterEach(async () => {
  for (const dev of running.splice(0)) {
    dev.child.kill("SIGTERM");
    await dev.exited;
  }
});

/** Free loopback ports for the three processes, so the test never meets another stack on 8080 (or 9464, the API's metrics). */
async function ports() {
  const [api, relay, notifier] = [await freePort(), await freePort(), await freePort()];
  return {
    api,
    env: {
      API_HTTP_ADDR: `127.0.0.1:${api}`,
      API_METRICS_ADDR: "127.0.0.1:0",
      RELAY_HEALTH_ADDR: `127.0.0.1:${relay}`,
      NOTIFIER_HEALTH_ADDR: `127.0.0.1:${notifier}`,
    },
  };
}

describe("npm run dev refuses a DATABASE_URL naming a database the server needs", () => {
  for (const database of ["postgres", "template0", "template1", ""]) {
    it(`refuses /${database} and exits 1 before touching anything`, async () => {
      const dev = Dev.start({ DATABASE_URL: databaseUrlFor(inject("adminDatabaseUrl"), database) });
      expect(await dev.exited).toBe(1);
      expect(dev.output).toMatch(/^dev: DATABASE_URL names .*, which npm run dev would migrate and fill with development data/);
      expect(dev.output).not.toMatch(/using postgres|creating database|migrate: (applied|up to date)/);
    });
  }
});

describe("npm run dev brings up what it needs", () => {
  const database = `ass_dev_${process.pid}`;
  let bus: TestNatsServer | undefined;
  afterAll(async () => {
    await bus?.dispose();
    const admin = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
    await admin.connect();
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
  });

  it("step 1: uses the exported DATABASE_URL and NATS_URL, creating the database, and serves on loopback", async () => {
    bus = await TestNatsServer.start();
    const { api, env } = await ports();
    const dev = Dev.start({ ...env, DATABASE_URL: databaseUrlFor(inject("adminDatabaseUrl"), database), NATS_URL: bus.url });
    running.push(dev);
    await dev.waitFor(new RegExp(`Server listening at http://127\\.0\\.0\\.1:${api}`));
    expect(dev.output).toMatch(/^dev: using postgres at 127\.0\.0\.1:\d+ and nats at 127\.0\.0\.1:\d+$/m);
    expect(dev.output).toContain(`dev: creating database ${database}`);
    expect(dev.output).toContain(`"msg":"migrate: applied ${committed.join(", ")}"`);
    expect((await fetch(`http://127.0.0.1:${api}/healthz`)).status).toBe(200);
    running.pop();
    dev.child.kill("SIGTERM");
    expect(await dev.exited).toBe(0);
    expect(dev.output).not.toContain("stopped the services");
  });

  it("step 3: with nothing reachable, starts a private Postgres and nats-server, migrates, and stops both on exit", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "ass-dev-"));
    // Reachable for the postgres user when the suite runs as root, like a checkout's .data/.
    chmodSync(dataDir, 0o755);
    try {
      const { api, env } = await ports();
      const dev = Dev.start({
        ...env,
        DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/animal_safety`,
        NATS_URL: `nats://127.0.0.1:${await freePort()}`,
        DEV_DATA_DIR: dataDir,
      });
      running.push(dev);
      const [, pgPort] = await dev.waitFor(/^dev: started postgres .* on 127\.0\.0\.1:(\d+)$/m);
      const [, natsPid, natsPort] = await dev.waitFor(/^dev: started .*nats-server -js \(pid (\d+)\) on 127\.0\.0\.1:(\d+)$/m);
      await dev.waitFor(new RegExp(`Server listening at http://127\\.0\\.0\\.1:${api}`));
      expect(dev.output).toContain(`"msg":"migrate: applied ${committed.join(", ")}"`);
      expect((await fetch(`http://127.0.0.1:${api}/healthz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${api}/readyz`)).status).toBe(200);
      running.pop();
      dev.child.kill("SIGTERM");
      expect(await dev.exited).toBe(0);
      expect(dev.output).toContain("dev: stopped the services it started");
      expect(await probePort(Number(pgPort))).toBe(false);
      expect(await probePort(Number(natsPort))).toBe(false);
      expect(() => process.kill(Number(natsPid), 0)).toThrow();
      // The development cluster is kept for the next run.
      expect(existsSync(path.join(dataDir, "postgres", "data", "PG_VERSION"))).toBe(true);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("step 4: with nothing reachable and nothing installed, one line says what to install, and it exits 1", async () => {
    const dev = Dev.start({
      DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/animal_safety`,
      NATS_URL: `nats://127.0.0.1:${await freePort()}`,
      PG_BIN: "/nonexistent/pg",
      NATS_SERVER_BIN: "/nonexistent/nats-server",
    });
    expect(await dev.exited).toBe(1);
    expect(dev.output.trim().split("\n").at(-1)).toMatch(
      /^dev: no Postgres with PostGIS and no NATS with JetStream to use or start: install postgresql-\d+-postgis-3 and nats-server \(apt-get install -y --no-install-recommends postgresql-\d+-postgis-3 nats-server\) or start Docker$/,
    );
  });
});
