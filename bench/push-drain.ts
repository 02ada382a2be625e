/**
 * The push drain, on a running bench stack (bench/stack.ts): the city's
 * fan-out (20,000 in range) without push subscribers, then 5,000 of its
 * subscribers get a push subscription on a local push service
 * (tests/helpers/push-service.ts, which checks each request's VAPID JWT and
 * decrypts its body), and a second report there fans out: its time to the last
 * notification row beside the first's, from the same run, then how fast the
 * notifier's delivery jobs drain the 5,000 pushes against that service.
 *
 * Beside the rates (shared machine: noisy), the cost of a push once the
 * fan-out is done, which load barely moves: the notifier's CPU, the CPU of the
 * database's backends, the push service's (this process's) CPU, and the
 * database's transactions (every statement of a delivery is its own), each
 * over the pushes sent in that window.
 *
 * `npm run bench` runs it as a scenario (seeding the city alone), and so does
 * `npx tsx bench/push-drain.ts` on a stack of its own (`ass_bench_push`);
 * `ALERTS_BENCH_PARTS=push npx tsx bench/alerts-fanout.ts` after the alert
 * bench's full seeding.
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { randomUUID } from "node:crypto";
import { withTransaction } from "../lib/db.js";
import { NEARBY_DELIVERY_BATCH, NEARBY_DELIVERY_PRIORITY } from "../lib/alerts.js";
import { EventType } from "../lib/events.js";
import { enqueueDeliveries, enqueueDeliveryBatches } from "../jobs/queue.js";
import { insertNotifications, type NewNotification } from "../lib/notification-rows.js";
import { TestPushService } from "../tests/helpers/push-service.js";
import { CITY, seedCitySubscriptions } from "./alerts-seed.js";
import { runScenarioScript, type Scenario, type ScenarioRow } from "./scenario-script.js";
import { BENCH_VAPID, log, type BenchStack } from "./stack.js";
import { round } from "./stats.js";

/** Subscribers of the city given a push subscription each. */
export const PUSH_SUBSCRIBERS = 5_000;
const TARGET_PER_SECOND = 500;
const FANOUT_TARGET_MS = 10_000;

let reports = 0;
async function reportLost(stack: BenchStack, at: { lat: number; lon: number }): Promise<string> {
  const i = ++reports;
  const res = await fetch(`${stack.baseUrl}/v1/safety/lost-reports`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-debug-actor": `bench-push-reporter-${i}`, "x-forwarded-for": `10.97.${(i >> 8) & 255}.${i & 255}` },
    body: JSON.stringify({ animal: { species: "dog", name: `Push ${i}` }, lastSeenAt: new Date().toISOString(), location: at }),
  });
  if (res.status !== 201) throw new Error(`report: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

export interface PushFanout {
  scenario: string;
  reportId: string;
  recipients: number;
  notifications: number;
  /** The report's commit to the fan-out's last batch commit: every notification row and delivery job written. */
  commitToQueuedMs: number;
}

async function fanOut(stack: BenchStack, scenario: string, at: { lat: number; lon: number }): Promise<PushFanout> {
  const reportId = await reportLost(stack, at);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { rows } = await stack.pool.query(
      `select f.status, f.recipients, extract(epoch from f.finished_at - r.created_at) * 1000 as ms
       from alert_fanout f join safety_lost_report r on r.id = f.report_id where f.report_id = $1`,
      [reportId],
    );
    const f = rows[0];
    if (f && f.status !== "running") {
      const { rows: counted } = await stack.pool.query(
        `select count(*)::int as n from notification where kind = 'nearby_lost' and data->>'lostReportId' = $1`,
        [reportId],
      );
      const figures = { scenario, reportId, recipients: f.recipients, notifications: counted[0].n, commitToQueuedMs: round(Number(f.ms), 0) };
      log(`${scenario}: ${JSON.stringify(figures)}`);
      return figures;
    }
    if (Date.now() > deadline) throw new Error(`${scenario}: fan-out not finished after 120 s`);
    await sleep(20);
  }
}

/** Waits (up to `maxMs`) for the notifier to deliver what is queued, so one scenario's deliveries do not load the next. */
export async function drained(stack: BenchStack, maxMs: number): Promise<number> {
  const deadline = Date.now() + maxMs;
  for (;;) {
    const { rows } = await stack.pool.query(`select count(*)::int as n from graphile_worker.jobs where task_identifier in ('notification__deliver', 'notification__deliver_batch')`);
    if (rows[0].n === 0 || Date.now() > deadline) return rows[0].n;
    await sleep(250);
  }
}

/** User + system CPU of a process in ms, from /proc (Linux); 0 when it is gone. */
function processCpuMs(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th, in clock ticks (100/s).
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

interface CostSnapshot {
  at: number;
  notifierMs: number;
  backendMs: Map<number, number>;
  /** The notifier's own connections (application_name notifier): its delivery jobs and runner. */
  notifierBackends: Set<number>;
  peerMs: number;
  transactions: number;
  sent: number;
}

/** The counters the cost per push is the difference of. */
async function costSnapshot(stack: BenchStack, reportId: string): Promise<CostSnapshot> {
  const { rows: backends } = await stack.pool.query<{ pid: number; app: string }>(
    `select pid, application_name as app from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
  );
  // pg_stat_database lags by up to a stats flush (1 s at most in Postgres 15); the window is tens of seconds.
  const { rows: db } = await stack.pool.query<{ n: string }>(
    `select (xact_commit + xact_rollback)::text as n from pg_stat_database where datname = current_database()`,
  );
  const { rows: sent } = await stack.pool.query<{ n: number }>(
    `select count(*)::int as n from notification where channel = 'push' and kind = 'nearby_lost' and data->>'lostReportId' = $1 and status = 'sent'`,
    [reportId],
  );
  const usage = process.cpuUsage();
  return {
    at: performance.now(),
    notifierMs: processCpuMs(stack.notifier.child.pid),
    backendMs: new Map(backends.map(({ pid }) => [pid, processCpuMs(pid)])),
    notifierBackends: new Set(backends.filter((b) => b.app === "notifier").map((b) => b.pid)),
    peerMs: (usage.user + usage.system) / 1000,
    transactions: Number(db[0]!.n),
    sent: sent[0]!.n,
  };
}

/** CPU ms and transactions per push sent between two snapshots. Backends that ended in between are not counted. */
function costPerPush(from: CostSnapshot, to: CostSnapshot) {
  const pushes = Math.max(1, to.sent - from.sent);
  let backendMs = 0;
  let notifierBackendMs = 0;
  for (const [pid, ms] of to.backendMs) {
    backendMs += ms - (from.backendMs.get(pid) ?? 0);
    if (to.notifierBackends.has(pid)) notifierBackendMs += ms - (from.backendMs.get(pid) ?? 0);
  }
  return {
    pushes: to.sent - from.sent,
    seconds: round((to.at - from.at) / 1000, 1),
    notifierCpuMs: round((to.notifierMs - from.notifierMs) / pushes, 2),
    // Every backend of the bench's database (the bench's own polling too), and those of the notifier's pool alone.
    postgresCpuMs: round(backendMs / pushes, 2),
    postgresNotifierCpuMs: round(notifierBackendMs / pushes, 2),
    // This process: the push service's VAPID checks and decryption, and the bench's own polling.
    pushServiceCpuMs: round((to.peerMs - from.peerMs) / pushes, 2),
    transactions: round((to.transactions - from.transactions) / pushes, 1),
  };
}

/**
 * A backlog of pushes drained: one nearby_lost push row for each of `actors`
 * (all with a subscription on the push service), written with their delivery
 * jobs in one transaction, as batch jobs of NEARBY_DELIVERY_BATCH (the
 * fan-out's way) or one job each (the baseline), and timed from the commit to
 * the last one sent. The fan-out is not running meanwhile, so this is the
 * delivery's own rate, with its cost per push.
 */
async function backlogDrain(stack: BenchStack, service: TestPushService, actors: string[], jobs: "batch" | "single") {
  const marker = randomUUID();
  const sourceEventId = randomUUID();
  const verifiedBefore = service.requests.filter((r) => r.error === undefined && r.status === 201).length;
  const rows: NewNotification[] = actors.map((actor) => ({
    recipientActorId: actor,
    sourceKey: `nearby_lost:${sourceEventId}`,
    subject: "A dog was reported lost near you",
    body: "A dog was reported lost 2 km from your alert area's centre. Have a look if you are out.",
    sourceEventId,
    sourceOccurredAt: new Date(),
    eventType: EventType.AnimalLostReported,
    kind: "nearby_lost",
    data: { lostReportId: marker },
    channel: "push",
  }));
  const before = await costSnapshot(stack, marker);
  const committedAt = await withTransaction(stack.pool, async (client) => {
    const ids = (await insertNotifications(client, rows)).map((r) => r.id);
    if (jobs === "batch") await enqueueDeliveryBatches(client, ids.map((id) => ({ id, channel: "push" as const })), { priority: NEARBY_DELIVERY_PRIORITY, size: NEARBY_DELIVERY_BATCH });
    else await enqueueDeliveries(client, ids.map((id) => ({ id, channel: "push" as const })), { priority: NEARBY_DELIVERY_PRIORITY });
    return ids.length;
  }).then(() => Date.now());
  const deadline = Date.now() + 120_000;
  let open = actors.length;
  while (open > 0 && Date.now() < deadline) {
    await sleep(100);
    const { rows: counted } = await stack.pool.query<{ n: number }>(
      `select count(*)::int as n from notification where kind = 'nearby_lost' and data->>'lostReportId' = $1 and status in ('pending', 'failed')`,
      [marker],
    );
    open = counted[0]!.n;
  }
  const after = await costSnapshot(stack, marker);
  const { rows: timing } = await stack.pool.query<{ lastSentMs: number }>(
    `select extract(epoch from max(sent_at))::float8 * 1000 as "lastSentMs" from notification where kind = 'nearby_lost' and data->>'lostReportId' = $1`,
    [marker],
  );
  const drainMs = Number(timing[0]!.lastSentMs) - committedAt;
  const figures = {
    jobs,
    pushes: actors.length,
    sent: after.sent,
    stillOpen: open,
    requestsVerifiedAndDecrypted: service.requests.filter((r) => r.error === undefined && r.status === 201).length - verifiedBefore,
    commitToLastSentMs: round(drainMs, 0),
    pushesPerSecond: round(after.sent / (drainMs / 1000), 0),
    costPerPush: costPerPush(before, after),
    loadAverage: loadavg().map((l) => round(l, 2)),
  };
  log(`backlog (${jobs}): ${JSON.stringify(figures)}`);
  return figures;
}

/**
 * The push drain. The stack's database must hold the city's subscribers
 * (`city-…` actors around CITY); `seedCity` writes them (20,000) first.
 */
export async function pushDrain(stack: BenchStack, { seedCity = false } = {}) {
  if (seedCity) {
    await seedCitySubscriptions(stack.pool);
    // One in ten with an email address, as the alert bench seeds them: their alert is an email row and job too.
    await stack.pool.query(
      `insert into notification_preference (actor_id, email) select actor_id, actor_id || '@example.org'
       from alert_subscription where actor_id like 'city-%' and random() < 0.1 on conflict do nothing`,
    );
    await stack.pool.query(`analyze alert_subscription`);
    log(`seeded the city's ${CITY.subscriptions} alert subscriptions`);
  }
  const service = await TestPushService.start();
  service.expectVapidKey(BENCH_VAPID.publicKey);
  try {
    log(`deliveries still queued before the push drain: ${await drained(stack, 120_000)}`);
    const withoutPush = await fanOut(stack, "city: 20k within 10 km, no push subscribers", CITY);
    log(`deliveries still queued: ${await drained(stack, 60_000)}`);

    const { rows: chosen } = await stack.pool.query<{ actorId: string }>(
      `select actor_id as "actorId" from alert_subscription where actor_id like 'city-%' order by actor_id limit $1`,
      [PUSH_SUBSCRIBERS],
    );
    const subs = chosen.map(({ actorId }) => ({ actorId, ...service.subscribe() }));
    await stack.pool.query(
      `insert into push_subscription (actor_id, endpoint, p256dh, auth) select * from unnest($1::text[], $2::text[], $3::text[], $4::text[])`,
      [subs.map((s) => s.actorId), subs.map((s) => s.endpoint), subs.map((s) => s.keys.p256dh), subs.map((s) => s.keys.auth)],
    );
    log(`${subs.length} push subscriptions on ${service.origin}`);

    const at = { lat: CITY.lat + 0.001, lon: CITY.lon + 0.001 };
    const withPush = await fanOut(stack, "city: 20k within 10 km, 5k with push", at);
    const afterFanout = await costSnapshot(stack, withPush.reportId);
    const deadline = Date.now() + 180_000;
    let counts: { total: number; sent: number; open: number };
    for (;;) {
      counts = (
        await stack.pool.query(
          `select count(*)::int as total, count(*) filter (where status = 'sent')::int as sent,
             count(*) filter (where status in ('pending', 'failed'))::int as open
           from notification where channel = 'push' and kind = 'nearby_lost' and data->>'lostReportId' = $1`,
          [withPush.reportId],
        )
      ).rows[0];
      if (counts.open === 0 || Date.now() > deadline) break;
      await sleep(250);
    }
    const drainedAt = await costSnapshot(stack, withPush.reportId);
    const { rows: timing } = await stack.pool.query(
      `select extract(epoch from max(n.sent_at) - f.finished_at) * 1000 as "afterFanoutMs",
         extract(epoch from max(n.sent_at) - min(n.created_at)) * 1000 as "firstRowToLastSentMs",
         extract(epoch from max(n.sent_at) - min(n.sent_at)) * 1000 as "firstToLastSentMs",
         count(*) filter (where n.sent_at > f.finished_at)::int as "sentAfterFanout"
       from notification n join alert_fanout f on f.report_id = $1::uuid
       where n.channel = 'push' and n.kind = 'nearby_lost' and n.data->>'lostReportId' = $1::text group by f.finished_at`,
      [withPush.reportId],
    );
    const drainMs = Number(timing[0]?.firstToLastSentMs ?? NaN);
    const verified = service.requests.filter((r) => r.error === undefined && r.status === 201).length;
    const push = {
      subscribers: subs.length,
      pushRows: counts!.total,
      sent: counts!.sent,
      stillOpen: counts!.open,
      requestsVerifiedAndDecrypted: verified,
      requestsRefused: service.requests.length - verified,
      // TCP connections the push service accepted: far fewer than requests when the notifier reuses them (keep-alive).
      connections: service.connections,
      lastSentAfterFanoutMs: round(Number(timing[0]?.afterFanoutMs ?? NaN), 0),
      firstRowToLastSentMs: round(Number(timing[0]?.firstRowToLastSentMs ?? NaN), 0),
      firstToLastSentMs: round(drainMs, 0),
      // Sent pushes over the time from the first sent to the last: the delivery jobs' rate against the local service.
      pushesPerSecond: round(counts!.sent / (drainMs / 1000), 0),
      // The backlog left when the fan-out's last batch committed, over the time to send it: the drain once every
      // push row exists (while the fan-out still writes, the rate is bounded by how fast it writes push rows).
      sentAfterFanout: Number(timing[0]?.sentAfterFanout ?? 0),
      afterFanoutPerSecond: round(Number(timing[0]?.sentAfterFanout ?? 0) / (Number(timing[0]?.afterFanoutMs ?? NaN) / 1000), 0),
      // Per push sent after the fan-out: CPU of each side and the database's transactions (statements, here).
      costPerPush: costPerPush(afterFanout, drainedAt),
      loadAverage: loadavg().map((l) => round(l, 2)),
    };
    log(`push: ${JSON.stringify(push)}`);
    log(`deliveries still queued: ${await drained(stack, 60_000)}`);
    // The same subscribers' pushes as a backlog: one job each (the baseline), then in batch jobs, back to back.
    const actors = subs.map((s) => s.actorId);
    const single = await backlogDrain(stack, service, actors, "single");
    log(`deliveries still queued: ${await drained(stack, 60_000)}`);
    const batched = await backlogDrain(stack, service, actors, "batch");
    const cost = (c: ReturnType<typeof costPerPush>) =>
      `notifier ${c.notifierCpuMs} ms CPU, Postgres ${c.postgresCpuMs} ms, push service ${c.pushServiceCpuMs} ms, ${c.transactions} statements`;
    const rows: ScenarioRow[] = [
      [
        "alert fan-out to the city's 20,000 with 5,000 push subscribers: commit → last notification row",
        `${round(withPush.commitToQueuedMs / 1000, 2)} s`,
        `${round(withoutPush.commitToQueuedMs / 1000, 2)} s without push subscribers`,
        `≤ ${FANOUT_TARGET_MS / 1000} s`,
        "",
      ],
      [
        "its 5,000 pushes drained against the local push service (VAPID-checked and decrypted each)",
        `${push.pushesPerSecond}/s from the first push; ${push.afterFanoutPerSecond}/s after the fan-out`,
        "—",
        `≥ ${TARGET_PER_SECOND}/s`,
        `per push after the fan-out: notifier ${push.costPerPush.notifierCpuMs} ms CPU, Postgres ${push.costPerPush.postgresCpuMs} ms, ` +
          `push service ${push.costPerPush.pushServiceCpuMs} ms, ${push.costPerPush.transactions} statements; ` +
          `${push.connections} connections; load average ${push.loadAverage.join(" ")}`,
      ],
      [
        `a backlog of 5,000 queued pushes: commit → last sent, ${NEARBY_DELIVERY_BATCH} a delivery job`,
        `${batched.pushesPerSecond}/s (${round(batched.commitToLastSentMs / 1000, 2)} s)`,
        `${single.pushesPerSecond}/s (${round(single.commitToLastSentMs / 1000, 2)} s) one job a push`,
        `≥ ${TARGET_PER_SECOND}/s`,
        `per push: ${cost(batched.costPerPush)}; one job a push: ${cost(single.costPerPush)}; load average ${batched.loadAverage.join(" ")}`,
      ],
    ];
    return { target: "fan-out ≤ 10 s of notification rows with 5k push subscribers; pushes drain ≥ 500/s", withoutPush, withPush, push, backlog: { single, batched }, rows };
  } finally {
    await service.close();
  }
}

/** The scenario of `npm run bench`: the city seeded alone, then the drain. */
export const pushDrainScenario: Scenario = async (stack) => {
  const { rows, ...results } = await pushDrain(stack, { seedCity: true });
  return { rows, results };
};

await runScenarioScript(import.meta.url, "push drain bench", "ass_bench_push", pushDrainScenario);
