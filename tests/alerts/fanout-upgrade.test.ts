import { randomBytes } from "node:crypto";
import { copyFile, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { migrate } from "graphile-migrate";
import { clearAllPools } from "graphile-migrate/dist/pg.js";
import { runMigrations } from "graphile-worker";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { migrateUp } from "../../lib/migrate.js";
import { runFanoutBatch } from "../../jobs/fanout/fanout.js";
import { databaseUrlFor } from "../setup/global-setup.js";
import { batchSizes } from "./helpers.js";

/**
 * Migration 000009 on a database with fan-outs under way: the recipients
 * still pending in the ledger (000006's design) become the fan-outs' batches,
 * so a deploy in the middle of a burst loses and repeats no alert.
 */
const adminUrl = inject("adminDatabaseUrl");
const name = `ass_t_upgrade_${randomBytes(4).toString("hex")}`;
const url = databaseUrlFor(adminUrl, name);
let pool: pg.Pool;
let folder: string;

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await admin(`create database ${name}`);
  // The committed migrations before 000009, as a database deployed before it has them.
  folder = await mkdtemp(path.join(tmpdir(), "ass-migrations-"));
  await mkdir(path.join(folder, "committed"));
  const committed = path.resolve(import.meta.dirname, "../../migrations/committed");
  for (const file of (await readdir(committed)).filter((f) => f < "000009")) await copyFile(path.join(committed, file), path.join(folder, "committed", file));
  await migrate({ connectionString: url, migrationsFolder: folder, pgSettings: { search_path: "public" } });
  clearAllPools();
  await runMigrations({ connectionString: url });
  pool = new pg.Pool({ connectionString: url, max: 3 });
});
afterAll(async () => {
  await pool?.end();
  await admin(`drop database if exists ${name} with (force)`);
  if (folder) await rm(folder, { recursive: true, force: true });
});

describe("migration 000009 on fan-outs under way", () => {
  it("turns each running fan-out's pending recipients into its batches, in actor order, and drops a stopped one's", async () => {
    const point = `st_setsrid(st_makepoint(4.83, 45.76), 4326)::geography`;
    const { rows } = await pool.query<{ id: string }>(
      `insert into safety_lost_report (reporter_id, species, last_seen_at, location, coarse_location)
       values ('upgrade-reporter', 'dog', now(), ${point}, ${point}) returning id`,
    );
    const reportId = rows[0]!.id;
    const subscribers = ["up-a", "up-b", "up-c", "up-d", "up-e"];
    const subscriptions: string[] = [];
    for (const actor of subscribers) {
      const { rows: sub } = await pool.query<{ id: string }>(
        `insert into alert_subscription (actor_id, location, radius_m) values ($1, ${point}, 5000) returning id`,
        [actor],
      );
      subscriptions.push(sub[0]!.id);
    }
    const [running, stopped] = [crypto.randomUUID(), crypto.randomUUID()];
    // Batch 1 of 2 ran (up-a notified); up-b..up-e are pending, batch 2 is next. A stopped fan-out left up-e pending.
    await pool.query(
      `insert into alert_fanout (event_id, report_id, event_type, status, next_batch, after_actor, recipients, batch_size, notified)
       values ($1, $3, 'events.animal.lost_reported.v1', 'running', 2, 'up-a', 5, 2, 1),
              ($2, $3, 'events.animal.lost_reported.v1', 'stopped', 1, null, 1, 2, 0)`,
      [running, stopped, reportId],
    );
    await pool.query(
      `insert into alert_ledger (report_id, actor_id, fanout_event_id, subscription_id, distance_m, status, day, decided_at)
       select $1, a, $2, s, 0, case when a = 'up-a' then 'notified' else 'pending' end,
         case when a = 'up-a' then current_date end, case when a = 'up-a' then now() end
       from unnest($3::text[], $4::uuid[]) as t(a, s)`,
      [reportId, running, subscribers, subscriptions],
    );

    // 000009 first, then whatever was committed after it.
    expect((await migrateUp(url)).applied[0]).toBe("000009");

    // up-b..up-e in batches of 2, numbered from the next one.
    const { rows: batches } = await pool.query(`select batch, actor_ids from alert_fanout_batch where fanout_event_id = $1 order by batch`, [running]);
    expect(batches).toEqual([
      { batch: 2, actor_ids: ["up-b", "up-c"] },
      { batch: 3, actor_ids: ["up-d", "up-e"] },
    ]);
    expect(await batchSizes(pool, stopped)).toEqual([]);
    const { rows: ledger } = await pool.query(`select actor_id, status from alert_ledger where report_id = $1`, [reportId]);
    expect(ledger).toEqual([{ actor_id: "up-a", status: "notified" }]);
    const { rows: listed } = await pool.query(`select status, deferrals_listed from alert_fanout where report_id = $1 order by status`, [reportId]);
    expect(listed).toEqual([
      { status: "running", deferrals_listed: false },
      { status: "stopped", deferrals_listed: true },
    ]);

    // The fan-out goes on where it was: batches 2 and 3 notify the four, and it is done.
    expect(await runFanoutBatch(pool, running, 2, { batchSize: 2 })).toMatchObject({ outcome: "batch", notified: 2, done: false });
    expect(await runFanoutBatch(pool, running, 3, { batchSize: 2 })).toMatchObject({ outcome: "batch", notified: 2, done: true });
    const { rows: notified } = await pool.query(
      `select recipient_actor_id as actor from notification where kind = 'nearby_lost' and channel = 'in_app' order by 1`,
    );
    expect(notified.map((r) => r.actor)).toEqual(["up-b", "up-c", "up-d", "up-e"]);
  });
});
