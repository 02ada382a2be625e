/**
 * Open-loop HTTP load generator, run as its own process by bench/run.ts.
 * Request i is due at start + i/rate whatever happened to earlier ones, and
 * its latency is counted from that intended send time, so a stall shows up
 * in the percentiles instead of silently lowering the offered rate
 * (coordinated omission).
 *
 * Input (argv[2], JSON): { baseUrl, rate, durationSec, kind, connections, seed }.
 * Output (stdout, JSON): { latenciesMs, statuses, sent, late }.
 */
import http from "node:http";

interface Plan {
  baseUrl: string;
  /** requests per second; 0 = unpaced (all at once, up to `count`) */
  rate: number;
  durationSec: number;
  count?: number;
  kind: "create" | "alerts" | "health" | "relay-message" | "view";
  connections: number;
  /** every request from one X-Forwarded-For address instead of one per request */
  singleIp?: boolean;
  /** Unique per load: actors never repeat across loads, so the 5-per-hour creation throttle never bites. */
  runId: string;
  lostReportIds?: string[];
  /** Where creates report their animal lost, in turn (default: spread over 9° × 12°). */
  points?: Array<{ lat: number; lon: number }>;
}

const plan: Plan = JSON.parse(process.argv[2]!);
const url = new URL(plan.baseUrl);
const agent = new http.Agent({ keepAlive: true, maxSockets: plan.connections });

function ipFor(i: number): string {
  if (plan.singleIp) return "198.51.100.7";
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

function requestFor(i: number): { method: string; path: string; headers: Record<string, string>; body?: string } {
  const headers: Record<string, string> = { "x-forwarded-for": ipFor(i) };
  switch (plan.kind) {
    case "create": {
      const { lat, lon } = plan.points?.[i % plan.points.length] ?? { lat: 42 + ((i * 7919) % 9000) / 1000, lon: -4 + ((i * 104729) % 12000) / 1000 };
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
      return { method: "GET", path: `/v1/safety/alerts?lat=${lat}&lon=${lon}&radiusKm=10&limit=50`, headers };
    }
    case "relay-message": {
      const ids = plan.lostReportIds ?? [];
      const id = ids[i % ids.length];
      return {
        method: "POST",
        path: `/v1/safety/lost-reports/${id}/relay-message`,
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ message: `I think I saw your dog (${i})`, fromContact: "finder@example.org" }),
      };
    }
    case "view": {
      const ids = plan.lostReportIds ?? [];
      return { method: "GET", path: `/v1/safety/lost-reports/${ids[i % ids.length]}`, headers };
    }
    case "health":
      return { method: "GET", path: "/healthz", headers };
  }
}

function send(i: number): Promise<number> {
  const spec = requestFor(i);
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
