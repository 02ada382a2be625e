/**
 * The cluster fault scenario shared by cluster.fault.ts (`npm run faults`)
 * and cluster.test.ts (`npm test`): two of each process on a three-node
 * JetStream cluster with an R3 stream, a mixed load, SIGKILLs, and the
 * counts that show nothing was lost or doubled.
 */
import { TEST_STREAM } from "../helpers/app.js";
import type { TestDatabase } from "../helpers/db.js";
import { startMixedLoad, createReport, type MixedOutcome } from "../helpers/mixed-load.js";
import type { NatsCluster } from "../helpers/nats-cluster.js";
import type { ServiceProcess, ProcessName } from "../helpers/processes.js";
import { Stack } from "../helpers/stack.js";
import { eventually, readStream } from "../helpers/stream.js";

export type Fault = "node" | "leader" | "processes";

export interface ScenarioOptions {
  tag: string;
  /** Requests per second of the mixed load. */
  rate: number;
  /** Reports the contact messages are spread over (at most 20 messages each a day). */
  reports: number;
  faults: Fault[];
  /** Load kept up after the last fault, so writes land on the recovered cluster and processes too. */
  tailSeconds: number;
  /** How long a killed node stays down before the harness starts it again. */
  outageSeconds: number;
  log: (line: string) => void;
  /** Settings for our processes beyond the cluster's (e.g. a shorter NOTIFIER_ACK_WAIT_MS). */
  env?: Record<string, string>;
}

export interface ScenarioCounts {
  acknowledged: { creates: number; contactMessages: number };
  unacknowledged: number;
  missingAcknowledged: number;
  outboxRows: number;
  stream: { messages: number; distinctMsgIds: number; distinctEventIds: number; msgIdMismatches: number; missingRows: number };
  contactMessages: number;
  notifications: { contactMessagesWithExactlyOne: number; contactMessagesWithNone: number; contactMessagesWithMore: number; wrongRecipient: number };
  processes: { killed: string[]; restarted: number; exitedOnTheirOwn: string[]; notReady: string[] };
  busEvents: { disconnects: number; reconnects: number; relayPublishFailures: number };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function ready(p: ServiceProcess): Promise<boolean> {
  const port = (p as ServiceProcess & { port?: number }).port;
  try {
    return (await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(3_000) })).status === 200;
  } catch {
    return false;
  }
}

function alive(p: ServiceProcess): boolean {
  return p.child.exitCode === null && p.child.signalCode === null;
}

export async function runClusterScenario(db: TestDatabase, cluster: NatsCluster, options: ScenarioOptions): Promise<ScenarioCounts> {
  const started = Date.now();
  const log = (line: string) => options.log(`+${((Date.now() - started) / 1000).toFixed(1)}s ${line}`);
  const stack = new Stack(db.url, cluster.url, { NATS_REPLICAS: "3", ...options.env });
  const killed = new Set<ServiceProcess>();
  let restarted = 0;
  let load: ReturnType<typeof startMixedLoad> | null = null;
  try {
    const running: Record<ProcessName, ServiceProcess[]> = { api: [], relay: [], notifier: [] };
    // Two at a time (six tsx start-ups at once can starve two cores): each ensures the R3 stream, one creates it.
    for (const name of ["relay", "notifier", "api"] as const) {
      running[name] = await Promise.all([stack.start(name), stack.start(name)]);
    }
    log("two of each process started");
    const baseUrl = (p: ServiceProcess) => `http://127.0.0.1:${(p as ServiceProcess & { port?: number }).port}`;
    const liveApis = () => running.api.filter(alive).map(baseUrl);
    await cluster.waitForStreamCurrent(TEST_STREAM, 3);

    // The owners whose reports receive contact messages, notified in-app (no SMTP in the tests).
    const reportIds: string[] = [];
    for (let i = 0; i < options.reports; i++) {
      const owner = `${options.tag}-owner-${i}`;
      const created = await createReport(liveApis()[i % 2]!, owner);
      if (created.status !== 201 || !created.id) throw new Error(`seeding report ${i}: status ${created.status}`);
      reportIds.push(created.id);
      await db.pool.query(`insert into notification_preference (actor_id, email_kinds) values ($1, '{}') on conflict do nothing`, [owner]);
    }

    load = startMixedLoad({ apis: liveApis, reportIds, tag: options.tag, rate: options.rate });
    log("load started");
    await sleep(2_000);
    for (const fault of options.faults) {
      if (fault === "node") {
        // Of the nodes that do not lead the stream, the one most of our processes are connected to: they must move.
        const leader = await cluster.streamLeader(TEST_STREAM);
        const followers = cluster.nodes.filter((n) => n !== leader);
        const ours = new Set<string>(["api", "relay", "notifier"]);
        const clients = await Promise.all(followers.map(async (n) => (await n.clientNames()).filter((name) => ours.has(name)).length));
        const victim = followers[clients.indexOf(Math.max(...clients))]!;
        await victim.kill();
        log(`SIGKILL nats node ${victim.name} with ${Math.max(...clients)} of our processes connected (stream leader is ${leader.name})`);
        await sleep(options.outageSeconds * 1000);
        await victim.start();
        await cluster.waitForStreamCurrent(TEST_STREAM, 3);
        log(`nats node ${victim.name} restarted and caught up`);
      } else if (fault === "leader") {
        const leader = await cluster.streamLeader(TEST_STREAM);
        await leader.kill();
        log(`SIGKILL the stream leader, nats node ${leader.name}`);
        const next = await cluster.streamLeader(TEST_STREAM, 60_000);
        log(`new stream leader ${next.name}`);
        await sleep(options.outageSeconds * 1000);
        await leader.start();
        await cluster.waitForStreamCurrent(TEST_STREAM, 3);
        log(`nats node ${leader.name} restarted and caught up`);
      } else {
        const victims = [running.api[0]!, running.relay[0]!, running.notifier[0]!];
        for (const victim of victims) {
          victim.signal("SIGKILL");
          killed.add(victim);
        }
        await Promise.all(victims.map((v) => v.exited));
        log(`SIGKILL api ${victims[0]!.child.pid}, relay ${victims[1]!.child.pid}, notifier ${victims[2]!.child.pid}`);
        await sleep(2_000);
        // The orchestrator's part: a killed container is started again.
        for (const victim of victims) {
          const replacement = await stack.start(victim.name);
          running[victim.name] = running[victim.name].map((p) => (p === victim ? replacement : p));
          restarted++;
        }
        log("killed processes restarted");
      }
    }
    await sleep(options.tailSeconds * 1000);
    const outcomes: MixedOutcome[] = await load.stop();
    log(`load stopped after ${outcomes.length} requests`);

    // Drained: every outbox row published, every contact message notified (a killed
    // notifier's unacked messages come back after the consumer's 30 s ack wait).
    await eventually(async () => {
      const { rows } = await db.pool.query<{ n: number }>(`select count(*)::int as n from outbox_event where published_at is null`);
      return rows[0]!.n === 0 ? true : undefined;
    }, 120_000, 250);
    log("outbox drained");
    await eventually(async () => {
      const { rows } = await db.pool.query<{ n: number }>(
        `select count(*)::int as n from safety_relay_message m
         where not exists (select 1 from notification n where n.source_key = 'relay_message:' || m.id)`,
      );
      return rows[0]!.n === 0 ? true : undefined;
    }, 120_000, 250);
    log("every contact message notified");

    const ok = (kind: string, status: number) => outcomes.filter((o) => o.kind === kind && o.status === status && o.id);
    const creates = ok("create", 201).map((o) => o.id!);
    const messages = ok("contact-message", 202).map((o) => o.id!);
    const { rows: found } = await db.pool.query<{ n: number }>(
      `select (select count(*) from safety_lost_report where id = any($1::uuid[]))::int
            + (select count(*) from safety_relay_message where id = any($2::uuid[]))::int as n`,
      [creates, messages],
    );

    const { rows: outbox } = await db.pool.query<{ id: string }>(`select id from outbox_event`);
    // A node restarted moments ago may still be finding the meta leader; the read is retried until one answers.
    await cluster.waitForMetaLeader();
    const onStream = await eventually(() => cluster.withConnection((nc) => readStream(nc, TEST_STREAM)), 30_000, 500);
    const eventIds = new Set(onStream.map((m) => m.body.id));
    const rowIds = new Set(outbox.map((r) => r.id));

    const { rows: perMessage } = await db.pool.query<{ n: number; wrong: number }>(
      `select count(n.id)::int as n, count(n.id) filter (where n.recipient_actor_id <> r.reporter_id or n.channel <> 'in_app')::int as wrong
       from safety_relay_message m
       join safety_lost_report r on r.id = m.lost_report_id
       left join notification n on n.source_key = 'relay_message:' || m.id
       group by m.id`,
    );

    const all = stack.processes;
    const exitedOnTheirOwn = all.filter((p) => !killed.has(p) && !alive(p)).map((p) => `${p.name} ${p.child.pid}`);
    const live = all.filter((p) => !killed.has(p));
    const notReady: string[] = [];
    for (const p of live) if (!(await ready(p))) notReady.push(`${p.name} ${p.child.pid}`);
    const countLines = (msg: string) => all.reduce((n, p) => n + p.lines.filter((l) => l.msg === msg).length, 0);

    return {
      acknowledged: { creates: creates.length, contactMessages: messages.length },
      unacknowledged: outcomes.length - creates.length - messages.length,
      missingAcknowledged: creates.length + messages.length - found[0]!.n,
      outboxRows: outbox.length,
      stream: {
        messages: onStream.length,
        distinctMsgIds: new Set(onStream.map((m) => m.msgId)).size,
        distinctEventIds: eventIds.size,
        msgIdMismatches: onStream.filter((m) => m.msgId !== m.body.id).length,
        missingRows: [...rowIds].filter((id) => !eventIds.has(id)).length,
      },
      contactMessages: perMessage.length,
      notifications: {
        contactMessagesWithExactlyOne: perMessage.filter((r) => r.n === 1).length,
        contactMessagesWithNone: perMessage.filter((r) => r.n === 0).length,
        contactMessagesWithMore: perMessage.filter((r) => r.n > 1).length,
        wrongRecipient: perMessage.reduce((n, r) => n + r.wrong, 0),
      },
      processes: { killed: [...killed].map((p) => `${p.name} ${p.child.pid}`), restarted, exitedOnTheirOwn, notReady },
      busEvents: {
        disconnects: countLines("bus: disconnect"),
        reconnects: countLines("bus: reconnect"),
        relayPublishFailures: countLines("relay: publish failed; retrying later"),
      },
    };
  } finally {
    // A failure midway must not leave the load running against stopped processes.
    await load?.stop();
    await stack.stopAll();
  }
}
