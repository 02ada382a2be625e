import type { Env } from "../../lib/config.js";
import { devEnv } from "./app.js";
import { freePort, waitForPort } from "./nats-server.js";
import { ServiceProcess, type ProcessName } from "./processes.js";

/**
 * Real processes for fault tests: the API on a free port (behind a trusted
 * "proxy" so each simulated client has its own X-Forwarded-For address), and
 * any number of relays and notifiers.
 */
export class Stack {
  readonly processes: ServiceProcess[] = [];
  apiPort = 0;

  constructor(
    private databaseUrl: string,
    private natsUrl: string,
    private readonly extra: Env = {},
  ) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.apiPort}`;
  }

  async start(name: ProcessName, extra: Env = {}): Promise<ServiceProcess> {
    const port = await freePort();
    const addr = `127.0.0.1:${port}`;
    const env = devEnv(this.databaseUrl, this.natsUrl, {
      LOG_LEVEL: "info",
      API_TRUSTED_PROXY_CIDRS: "127.0.0.1/32",
      ...(name === "api" ? { API_HTTP_ADDR: addr } : name === "relay" ? { RELAY_HEALTH_ADDR: addr } : { NOTIFIER_HEALTH_ADDR: addr }),
      ...this.extra,
      ...extra,
    });
    const child = ServiceProcess.start(name, env);
    this.processes.push(child);
    await waitForPort(port, 30_000);
    if (name === "api") this.apiPort = port;
    (child as ServiceProcess & { port?: number }).port = port;
    return child;
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.stop()));
  }
}

export interface WriteOutcome {
  status: number;
  ms: number;
  id?: string;
}

let clientCounter = 0;

/** One create from a distinct client address and actor; never throws. */
export async function createLostReport(baseUrl: string, tag: string, timeoutMs = 10_000): Promise<WriteOutcome> {
  const n = ++clientCounter;
  const started = performance.now();
  try {
    const res = await fetch(`${baseUrl}/v1/safety/lost-reports`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-debug-actor": `${tag}-${n}`,
        "x-forwarded-for": `10.9.${(n >> 8) & 255}.${n & 255}`,
      },
      body: JSON.stringify({ animal: { species: "dog", name: `${tag} ${n}` }, lastSeenAt: "2026-11-20T08:00:00Z", location: { lat: 45, lon: 5 } }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = (await res.json().catch(() => ({}))) as { id?: string };
    return { status: res.status, ms: performance.now() - started, id: body.id };
  } catch {
    return { status: 0, ms: performance.now() - started };
  }
}

/** Sends `count` creates at `rate` per second, open loop; resolves with every outcome. */
export async function createAtRate(baseUrl: string, tag: string, count: number, rate: number): Promise<WriteOutcome[]> {
  const start = performance.now();
  const pending: Promise<WriteOutcome>[] = [];
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(createLostReport(baseUrl, tag));
  }
  return Promise.all(pending);
}
