import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateUp } from "../../lib/migrate.js";
import { LocalObjectStorage } from "../../lib/storage/index.js";
import { admin, as, buildTestApi, devEnv, TEST_PHOTO_DIR, type TestApi } from "../helpers/app.js";
import { sampleValue, scrape, scrapeApi } from "../helpers/exposition.js";
import { freePort, startTestBus, waitForPort, type TestBus } from "../helpers/nats.js";
import { TestPgCluster } from "../helpers/pg-cluster.js";
import { ServiceProcess } from "../helpers/processes.js";
import { eventually } from "../helpers/stream.js";
import { photoJobsNow, smallJpeg, upload } from "../photos/support.js";
import { call, createFoundReport, createLostReport, freshActor } from "../safety/helpers.js";

/**
 * The public reads on a real streaming replica: a private primary, a hot
 * standby made from it with pg_basebackup -R, and the real app on both.
 * Two apps share them: `steady` with a lag bound no pause here reaches (60 s),
 * so a paused replay shows the replica's stale answers; `bounded` with the
 * default 2 s, so a paused replay sends its reads back to the primary.
 */
const DB = "animal_safety";
let primary: TestPgCluster;
let replica: TestPgCluster;
let bus: TestBus;
let steady: TestApi;
let bounded: TestApi;
let onPrimary: pg.Pool;
let onReplica: pg.Pool;
const storage = new LocalObjectStorage(TEST_PHOTO_DIR);
const { process: processPhotoNow } = photoJobsNow(() => steady.pool, storage);

const replicaEnv = (maxLagMs: string, extra: Record<string, string> = {}) =>
  devEnv(primary.url(DB), bus.url, { DATABASE_REPLICA_URL: replica.url(DB), DATABASE_REPLICA_MAX_LAG_MS: maxLagMs, ...extra });

beforeAll(async () => {
  primary = await TestPgCluster.create();
  const root = new pg.Client({ connectionString: primary.url() });
  await root.connect();
  await root.query(`create database ${DB}`);
  await root.end();
  await migrateUp(primary.url(DB));
  replica = await primary.createReplica();
  bus = await startTestBus();
  onPrimary = new pg.Pool({ connectionString: primary.url(DB), max: 2 });
  onReplica = new pg.Pool({ connectionString: replica.url(DB), max: 2 });
  // The replica is stopped in a test below; its idle clients' errors are expected.
  onReplica.on("error", () => undefined);
  steady = await buildTestApi(replicaEnv("60000"));
  bounded = await buildTestApi(replicaEnv("2000"));
  await untilServing(steady, 1);
  await untilServing(bounded, 1);
}, 120_000);

afterAll(async () => {
  await steady?.close();
  await bounded?.close();
  await onPrimary?.end();
  await onReplica?.end().catch(() => undefined);
  await bus?.dispose();
  await replica?.dispose();
  await primary?.dispose();
});

async function metric(api: TestApi, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  return sampleValue((await scrapeApi(api)).body, name, labels);
}
const readsOn = async (api: TestApi, target: "replica" | "primary") => (await metric(api, "db_reads_total", { target }))!;

/** Until the app sends its public reads to the replica (1) or to the primary (0). */
const untilServing = (api: TestApi, value: 0 | 1, timeoutMs = 30_000) =>
  eventually(async () => ((await metric(api, "db_replica_serving")) === value ? true : undefined), timeoutMs, 100);

async function pauseReplay(): Promise<void> {
  await onReplica.query("select pg_wal_replay_pause()");
  // A pause is requested, then taken at the next record; the heartbeat writes one every second.
  await eventually(async () => {
    const { rows } = await onReplica.query<{ state: string }>("select pg_get_wal_replay_pause_state() as state");
    return rows[0]!.state === "paused" ? true : undefined;
  }, 15_000, 50);
}
const resumeReplay = () => onReplica.query("select pg_wal_replay_resume()");

/** Until a row the primary committed is on the replica. */
const untilReplayed = (sql: string, params: unknown[]) =>
  eventually(async () => ((await onReplica.query(sql, params)).rowCount! > 0 ? true : undefined), 20_000, 50);

const POINT = { lat: 45.764, lon: 4.8357 };
const alertIds = async (api: TestApi, point = POINT) => {
  const res = await call(api, { url: `/v1/safety/alerts?lat=${point.lat}&lon=${point.lon}&radiusKm=5&limit=100` });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().items as { id: string }[]).map((item) => item.id);
};

describe("the alerts search on the replica", () => {
  it("shows a report made on the primary once the replica has replayed it, and not before", async () => {
    const point = { lat: 43.2965, lon: 5.3698 };
    await pauseReplay();
    try {
      const id = await createLostReport(steady, freshActor("replayed"), { location: point });
      const before = await readsOn(steady, "replica");
      // Answered by the replica, which has not replayed the insert yet.
      expect(await alertIds(steady, point)).not.toContain(id);
      expect(await readsOn(steady, "replica")).toBeGreaterThan(before);
      expect(await metric(steady, "db_replica_serving")).toBe(1);
      // A lookup the replica misses is asked again on the primary: the reporter's own new report is there at once.
      const view = await call(steady, { url: `/v1/safety/lost-reports/${id}` });
      expect(view.statusCode, view.body).toBe(200);
      await resumeReplay();
      await eventually(async () => ((await alertIds(steady, point)).includes(id) ? true : undefined), 20_000, 100);
      expect(await metric(steady, "db_replica_serving")).toBe(1);
    } finally {
      await resumeReplay();
    }
  });
});

describe("past DATABASE_REPLICA_MAX_LAG_MS", () => {
  it("with replay paused, reads go to the primary once the heartbeat's age passes the bound, and come back after", async () => {
    const point = { lat: 44.8378, lon: -0.5792 };
    await pauseReplay();
    try {
      await untilServing(bounded, 0);
      expect(await metric(bounded, "db_replica_up")).toBe(1);
      expect(await metric(bounded, "db_replica_lag_seconds")).toBeGreaterThan(2);
      const id = await createLostReport(bounded, freshActor("fallback"), { location: point });
      const [primaryBefore, replicaBefore] = [await readsOn(bounded, "primary"), await readsOn(bounded, "replica")];
      // The replica has not replayed it; the primary has: the search sees it.
      expect(await alertIds(bounded, point)).toContain(id);
      expect((await onReplica.query("select 1 from safety_lost_report where id = $1", [id])).rowCount).toBe(0);
      expect(await readsOn(bounded, "primary")).toBeGreaterThan(primaryBefore);
      expect(await readsOn(bounded, "replica")).toBe(replicaBefore);
    } finally {
      await resumeReplay();
    }
    // Back on the replica once it has caught up: one scrape shows both.
    const scraped = await eventually(async () => {
      const text = (await scrapeApi(bounded)).body;
      return sampleValue(text, "db_replica_serving") === 1 ? text : undefined;
    }, 30_000, 100);
    expect(sampleValue(scraped, "db_replica_lag_seconds")).toBeLessThanOrEqual(2);
  });
});

/** A quarantine through the API: a user's moderation report, claimed and acted on by an admin. */
async function quarantine(api: TestApi, targetType: string, targetId: string): Promise<void> {
  const report = await call(api, { method: "POST", url: "/v1/moderation/reports", headers: as(freshActor("flagger")), payload: { targetType, targetId, reason: "abuse" } });
  expect(report.statusCode, report.body).toBe(201);
  const moderator = admin(freshActor("moderator"));
  const claimed = await call(api, { method: "POST", url: `/v1/admin/moderation/${report.json().id}/claim`, headers: moderator });
  expect(claimed.statusCode, claimed.body).toBe(200);
  const acted = await call(api, { method: "POST", url: `/v1/admin/moderation/${report.json().id}/action`, headers: moderator, payload: { action: "quarantine" } });
  expect(acted.statusCode, acted.body).toBe(200);
}

describe("a quarantine on the public view", () => {
  it("takes effect within the lag bound even while the replica never replays it", async () => {
    await untilServing(bounded, 1);
    const id = await createLostReport(bounded, freshActor("quarantined"));
    await untilReplayed("select 1 from safety_lost_report where id = $1", [id]);
    await pauseReplay();
    try {
      await quarantine(bounded, "lost_report", id);
      // 404 once the replica's lag passes the bound, answered by the primary.
      await eventually(async () => ((await call(bounded, { url: `/v1/safety/lost-reports/${id}` })).statusCode === 404 ? true : undefined), 20_000, 100);
      expect(await metric(bounded, "db_replica_serving")).toBe(0);
      for (const url of [`/lost/${id}`, `/lost/${id}/card.png`, `/lost/${id}/flyer.pdf`]) {
        expect((await call(bounded, { url })).statusCode, url).toBe(404);
      }
      // The replica still has the report unquarantined: the 404 came from the primary.
      const stale = await onReplica.query("select 1 from moderation_content_state where target_id = $1", [id]);
      expect(stale.rowCount).toBe(0);
    } finally {
      await resumeReplay();
    }
    // Replayed: the replica itself answers 404 (retried while the lag check may still send reads elsewhere).
    await eventually(async () => {
      const before = await readsOn(bounded, "replica");
      const status = (await call(bounded, { url: `/v1/safety/lost-reports/${id}` })).statusCode;
      expect(status).toBe(404);
      return (await readsOn(bounded, "replica")) > before ? true : undefined;
    }, 30_000, 100);
  });

  it("takes effect on the replica's answers once replayed", async () => {
    await untilServing(steady, 1);
    const id = await createLostReport(steady, freshActor("quarantined"));
    await untilReplayed("select 1 from safety_lost_report where id = $1", [id]);
    expect((await call(steady, { url: `/v1/safety/lost-reports/${id}` })).statusCode).toBe(200);
    await quarantine(steady, "lost_report", id);
    await eventually(async () => ((await call(steady, { url: `/v1/safety/lost-reports/${id}` })).statusCode === 404 ? true : undefined), 20_000, 100);
    expect(await metric(steady, "db_replica_serving")).toBe(1);
    expect(await alertIds(steady)).not.toContain(id);
  });
});

describe("with the replica stopped", () => {
  it("every public read still answers from the primary, at once and after the check notices; reads return to the replica when it is back", async () => {
    const owner = freshActor("stopped");
    const lostId = await createLostReport(steady, owner, { location: POINT });
    const foundId = await createFoundReport(steady, freshActor("finder"), { location: POINT });
    const sighting = await call(steady, {
      method: "POST",
      url: "/v1/safety/sightings",
      headers: as(freshActor("sighter")),
      payload: { lostReportId: lostId, location: POINT, seenAt: new Date(Date.now() - 60_000).toISOString() },
    });
    expect(sighting.statusCode, sighting.body).toBe(201);
    const uploaded = await upload(steady, `/v1/safety/lost-reports/${lostId}/photos`, owner, await smallJpeg(11));
    expect(uploaded.statusCode, uploaded.body).toBe(202);
    const photoId = uploaded.json().id as string;
    await processPhotoNow(photoId);
    await untilReplayed("select 1 from photo where id = $1 and status = 'ready'", [photoId]);
    await untilReplayed("select 1 from safety_sighting where id = $1", [sighting.json().id]);
    const { rows } = await onPrimary.query<{ code: string }>("select short_code as code from safety_lost_report where id = $1", [lostId]);
    const reads: Array<[string, number]> = [
      [`/v1/safety/alerts?lat=${POINT.lat}&lon=${POINT.lon}`, 200],
      [`/v1/safety/lost-reports/${lostId}`, 200],
      [`/v1/safety/found-reports/${foundId}`, 200],
      [`/v1/safety/lost-reports/${lostId}/sightings`, 200],
      [`/lost/${lostId}`, 200],
      [`/lost/${lostId}/card.png`, 200],
      [`/lost/${lostId}/flyer.pdf`, 200],
      [`/found/${foundId}`, 200],
      [`/s/${rows[0]!.code}`, 301],
      [`/v1/photos/${photoId}/thumb`, 200],
    ];
    const answers = async () => Promise.all(reads.map(async ([url]) => [url, (await call(steady, { url })).statusCode]));
    // Every one answered by the replica first, so the stop below is what changes.
    const replicaBefore = await readsOn(steady, "replica");
    expect(await answers()).toEqual(reads);
    expect(await readsOn(steady, "replica")).toBeGreaterThanOrEqual(replicaBefore + reads.length);

    await replica.stop("fast");
    try {
      const primaryBefore = await readsOn(steady, "primary");
      // Before the next check: each read fails over on its own.
      expect(await answers()).toEqual(reads);
      expect(await readsOn(steady, "primary")).toBeGreaterThanOrEqual(primaryBefore + reads.length);
      await untilServing(steady, 0);
      // A failed read stops replica reads at once; db_replica_up follows at the next check.
      await eventually(async () => ((await metric(steady, "db_replica_up")) === 0 ? true : undefined), 30_000, 100);
      expect(await answers()).toEqual(reads);
    } finally {
      await replica.start();
    }
    await untilServing(steady, 1);
    expect(await metric(steady, "db_replica_up")).toBe(1);
    const back = await readsOn(steady, "replica");
    expect(await answers()).toEqual(reads);
    expect(await readsOn(steady, "replica")).toBeGreaterThan(back);
  });
});

describe("DATABASE_REPLICA_URL at start", () => {
  it("naming the primary itself (not in recovery) is a fatal error that says so, before the port opens", async () => {
    const port = await freePort();
    const api = ServiceProcess.start(
      "api",
      devEnv(primary.url(DB), bus.url, { DATABASE_REPLICA_URL: primary.url(DB), API_HTTP_ADDR: `127.0.0.1:${port}`, LOG_LEVEL: "info" }),
    );
    expect(await api.exited).toBe(1);
    const fatal = api.lines.find((line) => line.level === 60);
    expect(String(fatal?.msg)).toMatch(/^read replica: DATABASE_REPLICA_URL points at a server that is not in recovery/);
    expect(api.lines.some((line) => line.msg === "Server listening at" || String(line.msg).includes(`:${port}`))).toBe(false);
  });

  it("unreachable: the API starts, warns, sets db_replica_up to 0, and serves the public reads from the primary", async () => {
    const [port, metricsPort, deadPort] = [await freePort(), await freePort(), await freePort()];
    const api = ServiceProcess.start(
      "api",
      devEnv(primary.url(DB), bus.url, {
        DATABASE_REPLICA_URL: `postgres://postgres@127.0.0.1:${deadPort}/${DB}`,
        API_HTTP_ADDR: `127.0.0.1:${port}`,
        API_METRICS_ADDR: `127.0.0.1:${metricsPort}`,
        LOG_LEVEL: "info",
      }),
    );
    try {
      await waitForPort(port, 30_000);
      const warning = await api.waitForLog((line) => line.level === 40 && String(line.msg).includes("cannot be reached at start"));
      expect(String(warning.msg)).toMatch(/public reads go to the primary/);
      const res = await fetch(`http://127.0.0.1:${port}/v1/safety/alerts?lat=${POINT.lat}&lon=${POINT.lon}`);
      expect(res.status).toBe(200);
      const { text } = await scrape(metricsPort);
      expect(sampleValue(text, "db_replica_up")).toBe(0);
      expect(sampleValue(text, "db_replica_serving")).toBe(0);
      expect(sampleValue(text, "db_reads_total", { target: "primary" })).toBeGreaterThan(0);
      expect(sampleValue(text, "db_reads_total", { target: "replica" })).toBe(0);
    } finally {
      await api.stop();
    }
  });
});
