/**
 * Open-loop HTTP load generator, run as its own process by bench/run.ts.
 * Request i is due at start + i/rate whatever happened to earlier ones, and
 * its latency is counted from that intended send time, so a stall shows up
 * in the percentiles instead of silently lowering the offered rate
 * (coordinated omission).
 *
 * Before the measured requests it warms up: a second of the same kind of
 * request (own actors, another address), so the first measured request does
 * not pay for loading and compiling the HTTP client, and its sockets are open
 * (unwarmed, the first capacity step of `npm run bench` sent 115 requests
 * late and read p95 870 ms).
 *
 * Input (argv[2], JSON): { baseUrl, rate, durationSec, kind, connections, seed }.
 * Output (stdout, JSON): { latenciesMs, statuses, sent, late }.
 */
import http from "node:http";

interface Plan {
  baseUrl: string;
  baseUrls?: string[];
  /** requests per second; 0 = unpaced (all at once, up to `count`) */
  rate: number;
  durationSec: number;
  count?: number;
  kind: "create" | "alerts" | "health" | "relay-message" | "view" | "paths";
  connections: number;
  /** every request from one X-Forwarded-For address instead of one per request */
  singleIp?: boolean;
  /** Unique per load: actors never repeat across loads, so the 5-per-hour creation throttle never bites. */
  runId: string;
  lostReportIds?: string[];
  /** false skips the warm-up (the limiter's burst counts from a cold bucket either way: warm-up uses other addresses). */
  warmUp?: boolean;
  /** For kind paths: GETs of these, in turn. */
  paths?: string[];
  /** Where creates report their animal lost, in turn (default: spread over 9° × 12°). */
  points?: Array<{ lat: number; lon: number }>;
  /** For kind alerts: the search radius, as the raw statement's baseline uses it (default 25 km, as `npm run bench`'s alerts scenario). */
  radiusKm?: number;
}

const plan: Plan = JSON.parse(process.argv[2]!);
/** Several API instances: request i goes to baseUrls[i mod n], as a round-robin balancer would send it. */
const urls = (plan.baseUrls ?? [plan.baseUrl]).map((u) => new URL(u));
const agent = new http.Agent({ keepAlive: true, maxSockets: plan.connections });

/** Warm-up requests count down from -1, so they never share an actor or an address with measured ones. */
function ipFor(i: number): string {
  if (i < 0) return `10.255.${(-i >> 8) & 255}.${-i & 255}`;
  if (plan.singleIp) return "198.51.100.7";
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

function requestFor(i: number): { method: string; path: string; headers: Record<string, string>; body?: string } {
  const headers: Record<string, string> = { "x-forwarded-for": ipFor(i) };
  switch (plan.kind) {
    case "create": {
      const { lat, lon } = plan.points?.[Math.abs(i) % plan.points.length] ?? { lat: 42 + ((i * 7919) % 9000) / 1000, lon: -4 + ((i * 104729) % 12000) / 1000 };
      return {
        method: "POST",
        path: "/v1/safety/lost-reports",
        headers: { ...headers, "content-type": "application/json", "x-debug-actor": `bench-${plan.runId}-${i}` },
        body: JSON.stringify({
          animal: { species: "dog", name: `Bench ${i}`, colors: ["brown"] },
          lastSeenAt: new Date().toISOString(),
          location: { lat, lon },
          description: "benchmark report",
        }),
      };
    }
    case "alerts": {
      const lat = 42 + ((i * 7919) % 9000) / 1000;
      const lon = -4 + ((i * 104729) % 12000) / 1000;
      return { method: "GET", path: `/v1/safety/alerts?lat=${lat}&lon=${lon}&radiusKm=${plan.radiusKm ?? 25}&limit=50`, headers };
    }
    case "relay-message": {
      const ids = plan.lostReportIds ?? [];
      const id = ids[Math.abs(i) % ids.length];
      return {
        method: "POST",
        path: `/v1/safety/lost-reports/${id}/relay-message`,
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ message: `I think I saw your dog (${i})`, fromContact: "finder@example.org" }),
      };
    }
    case "view": {
      const ids = plan.lostReportIds ?? [];
      return { method: "GET", path: `/v1/safety/lost-reports/${ids[Math.abs(i) % ids.length]}`, headers };
    }
    case "health":
      return { method: "GET", path: "/healthz", headers };
    case "paths": {
      const paths = plan.paths ?? [];
      return { method: "GET", path: paths[Math.abs(i) % paths.length]!, headers };
    }
  }
}

function send(i: number): Promise<number> {
  const spec = requestFor(i);
  const url = urls[Math.abs(i) % urls.length]!;
  return new Promise((resolve) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method: spec.method, path: spec.path, headers: spec.headers, agent },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", () => resolve(0));
    if (spec.body) req.end(spec.body);
    else req.end();
  });
}

async function warmUp(): Promise<void> {
  const count = Math.min(200, Math.max(20, plan.rate || 20));
  const start = performance.now();
  const sent: Promise<number>[] = [];
  for (let k = 1; k <= count; k++) {
    const wait = start + (k * 1000) / count - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    sent.push(send(-k));
  }
  await Promise.all(sent);
  await new Promise((r) => setTimeout(r, 200));
}

if (plan.warmUp !== false) await warmUp();

const total = plan.rate > 0 ? Math.round(plan.rate * plan.durationSec) : (plan.count ?? 100);
const latenciesMs = new Array<number>(total);
const statuses = new Array<number>(total);
let late = 0;
const start = performance.now() + 50;
const inflight: Promise<void>[] = [];

for (let i = 0; i < total; i++) {
  const intended = plan.rate > 0 ? start + (i * 1000) / plan.rate : start;
  const wait = intended - performance.now();
  if (wait > 1) await new Promise((r) => setTimeout(r, wait));
  else if (wait < -5) late++;
  inflight.push(
    send(i).then((status) => {
      latenciesMs[i] = performance.now() - intended;
      statuses[i] = status;
    }),
  );
  if (plan.rate === 0) {
    // unpaced: strictly sequential so "successes before the first 429" is well defined
    await inflight[i];
  }
}
await Promise.all(inflight);
agent.destroy();
process.stdout.write(JSON.stringify({ latenciesMs, statuses, sent: total, late }));
