import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { freePort, waitForPort } from "./nats-server.js";

const NATS_SERVER_BIN = process.env.NATS_SERVER_BIN ?? "/usr/sbin/nats-server";

/** `sync_interval` (fsync policy) exists from nats-server 2.10.0 on; 2.9 refuses the field. */
function serverHasSyncInterval(): boolean {
  const match = /v(\d+)\.(\d+)/.exec(execFileSync(NATS_SERVER_BIN, ["--version"]).toString());
  return !!match && (Number(match[1]) > 2 || (Number(match[1]) === 2 && Number(match[2]) >= 10));
}

interface NodePorts {
  client: number;
  cluster: number;
  monitor: number;
}

/** One node of the cluster: its own config file, store dir and ports, kept across restarts. */
export class ClusterNode {
  child: ChildProcess | null = null;

  constructor(
    readonly name: string,
    readonly ports: NodePorts,
    readonly configFile: string,
  ) {}

  get url(): string {
    return `nats://127.0.0.1:${this.ports.client}`;
  }

  get running(): boolean {
    return this.child !== null;
  }

  async start(): Promise<void> {
    if (this.child) return;
    const child = spawn(NATS_SERVER_BIN, ["-c", this.configFile], { stdio: "ignore" });
    this.child = child;
    const exited = new Promise<never>((_, reject) =>
      child.once("exit", (code) => {
        if (this.child === child) this.child = null;
        reject(new Error(`nats-server ${this.name} exited (${code}) before its port opened`));
      }),
    );
    exited.catch(() => undefined);
    // A port another test took between freePort() and this start makes the server exit at once: fail fast, not in 30 s.
    await Promise.race([waitForPort(this.ports.client, 30_000), exited]);
  }

  /** SIGKILL: no lame duck, no flush, no goodbye to the routes; what a power loss or an OOM kill looks like to the others. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }

  /** The names of the clients connected to the node now (`/connz`), none while it is down. */
  async clientNames(): Promise<string[]> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.ports.monitor}/connz?limit=1024`, { signal: AbortSignal.timeout(2_000) });
      return ((await res.json()) as { connections?: Array<{ name?: string }> }).connections?.map((c) => c.name ?? "") ?? [];
    } catch {
      return [];
    }
  }

  /** The node's monitoring view of JetStream (`/jsz`), or null while it is down. */
  async jsz(): Promise<{ meta_cluster?: { leader?: string; cluster_size?: number } } | null> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.ports.monitor}/jsz`, { signal: AbortSignal.timeout(2_000) });
      return (await res.json()) as { meta_cluster?: { leader?: string; cluster_size?: number } };
    } catch {
      return null;
    }
  }
}

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nats cluster: ${what} not within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ""}`);
}

/**
 * Three (or `size`) real nats-server processes on free ports, routed to each
 * other as one JetStream cluster, each with its own config file and store
 * dir. A node can be SIGKILLed and restarted on the same ports and store, as
 * an orchestrator would. `url` is the comma-separated list NATS_URL takes.
 */
export class NatsCluster {
  private admin: NatsConnection | null = null;

  private constructor(
    readonly nodes: ClusterNode[],
    private readonly dir: string,
  ) {}

  /** Starts a cluster on fresh ports, retrying with new ones when a port was taken meanwhile (files run in parallel). */
  static async start(size = 3, clusterName = "ass-test"): Promise<NatsCluster> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await NatsCluster.startOnce(size, clusterName);
      } catch (err) {
        if (attempt >= 3) throw err;
      }
    }
  }

  private static async startOnce(size: number, clusterName: string): Promise<NatsCluster> {
    const dir = mkdtempSync(path.join(tmpdir(), "ass-nats-cluster-"));
    const ports: NodePorts[] = [];
    for (let i = 0; i < size; i++) ports.push({ client: await freePort(), cluster: await freePort(), monitor: await freePort() });
    const routes = ports.map((p) => `"nats-route://127.0.0.1:${p.cluster}"`).join(", ");
    const sync = serverHasSyncInterval() ? "sync_interval: always" : "";
    const nodes = ports.map((p, i) => {
      const name = `n${i + 1}`;
      const file = path.join(dir, `${name}.conf`);
      // JetStream in a cluster needs a unique server_name per node; every node lists every route (its own is ignored).
      writeFileSync(
        file,
        [
          `server_name: ${name}`,
          `listen: "127.0.0.1:${p.client}"`,
          `http: "127.0.0.1:${p.monitor}"`,
          `jetstream { store_dir: "${path.join(dir, name)}" ${sync} }`,
          `cluster { name: ${clusterName}, listen: "127.0.0.1:${p.cluster}", routes: [${routes}] }`,
        ].join("\n"),
      );
      return new ClusterNode(name, p, file);
    });
    const cluster = new NatsCluster(nodes, dir);
    try {
      await Promise.all(nodes.map((n) => n.start()));
      await cluster.waitForMetaLeader();
    } catch (err) {
      await Promise.all(nodes.map((n) => n.kill()));
      throw err;
    }
    return cluster;
  }

  /** Every node, comma-separated: what NATS_URL takes. */
  get url(): string {
    return this.nodes.map((n) => n.url).join(",");
  }

  node(name: string): ClusterNode {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no node ${name}`);
    return node;
  }

  /** A client of the harness's own, connected to whichever node is up. */
  async connection(): Promise<NatsConnection> {
    this.admin ??= await connect({ servers: this.nodes.map((n) => n.url), maxReconnectAttempts: -1, reconnectTimeWait: 200 });
    return this.admin;
  }

  /** Runs fn on a connection of its own to the cluster, closed afterwards. */
  async withConnection<T>(fn: (nc: NatsConnection) => Promise<T>): Promise<T> {
    const nc = await connect({ servers: this.nodes.filter((n) => n.running).map((n) => n.url) });
    try {
      return await fn(nc);
    } finally {
      await nc.close();
    }
  }

  /** No API check up front: the harness's node may be the one just killed, and every call here is retried. */
  private async manager() {
    return jetstreamManager(await this.connection(), { checkAPI: false, timeout: 2_000 });
  }

  /** Waits until the running nodes agree on a JetStream meta leader; returns its name. */
  async waitForMetaLeader(timeoutMs = 30_000): Promise<string> {
    return until(
      "a meta leader",
      async () => {
        const views = await Promise.all(this.nodes.filter((n) => n.running).map((n) => n.jsz()));
        const leaders = new Set(views.map((v) => v?.meta_cluster?.leader));
        const [leader] = [...leaders];
        return leaders.size === 1 && leader ? leader : undefined;
      },
      timeoutMs,
    );
  }

  /** The node leading the stream's raft group. */
  async streamLeader(stream: string, timeoutMs = 30_000): Promise<ClusterNode> {
    return until(
      `a leader for ${stream}`,
      async () => {
        const jsm = await this.manager();
        const leader = (await jsm.streams.info(stream)).cluster?.leader;
        return leader ? this.node(leader) : undefined;
      },
      timeoutMs,
    );
  }

  /**
   * Waits until the stream has a leader and every replica is current, so the
   * next fault starts from a whole cluster (a restarted node has caught up).
   */
  async waitForStreamCurrent(stream: string, replicas: number, timeoutMs = 60_000): Promise<void> {
    await until(
      `${stream} with ${replicas} current replicas`,
      async () => {
        const jsm = await this.manager();
        const { cluster } = await jsm.streams.info(stream);
        const followers = cluster?.replicas ?? [];
        const current = followers.filter((r) => r.current && !r.offline).length;
        return cluster?.leader && current === replicas - 1 ? true : undefined;
      },
      timeoutMs,
    );
  }

  async dispose(): Promise<void> {
    await this.admin?.close().catch(() => undefined);
    await Promise.all(this.nodes.map((n) => n.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
