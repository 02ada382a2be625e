/**
 * An open-loop mixed load for the cluster fault cases: lost-report creates
 * and anonymous contact messages, alternating, spread over whichever API
 * instances are up at the moment (what the proxy in front of them does).
 * Every outcome is kept, so a test can check that each acknowledged write exists.
 */

export type WriteKind = "create" | "contact-message";

export interface MixedOutcome {
  kind: WriteKind;
  status: number;
  id?: string;
}

let counter = 0;

function nextClient(): number {
  return ++counter;
}

/** A distinct client address per request: the per-IP limits stay out of the way, as they would for a city of callers. */
function forwardedFor(n: number): string {
  return `10.20.${(n >> 8) & 255}.${n & 255}`;
}

async function post(url: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; id?: string }> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const json = (await res.json().catch(() => ({}))) as { id?: string };
    return { status: res.status, id: json.id };
  } catch {
    // Refused, reset or timed out: the caller got no acknowledgement.
    return { status: 0 };
  }
}

export async function createReport(baseUrl: string, actor: string): Promise<{ status: number; id?: string }> {
  const n = nextClient();
  return post(
    `${baseUrl}/v1/safety/lost-reports`,
    { "x-debug-actor": actor, "x-forwarded-for": forwardedFor(n) },
    { animal: { species: "dog", name: `Cluster ${n}` }, lastSeenAt: "2026-11-20T08:00:00Z", location: { lat: 45, lon: 5 } },
  );
}

export async function sendContactMessage(baseUrl: string, reportId: string): Promise<{ status: number; id?: string }> {
  const n = nextClient();
  return post(
    `${baseUrl}/v1/safety/lost-reports/${reportId}/relay-message`,
    { "x-forwarded-for": forwardedFor(n) },
    { message: `I think I saw your dog (${n})`, fromContact: "finder@example.org" },
  );
}

export interface MixedLoadOptions {
  /** Base URLs of the API instances that are up right now; read before every request. */
  apis: () => string[];
  /** Reports the contact messages go to, round robin (a report takes at most 20 a day). */
  reportIds: string[];
  tag: string;
  /** Requests per second, half creates and half contact messages. */
  rate: number;
}

/** Runs until stop() is called; resolves with every outcome once the requests in flight have finished. */
export function startMixedLoad(options: MixedLoadOptions): { stop: () => Promise<MixedOutcome[]> } {
  let stopped = false;
  const pending: Promise<MixedOutcome>[] = [];
  const run = (async () => {
    const start = performance.now();
    for (let i = 0; !stopped; i++) {
      const wait = start + (i * 1000) / options.rate - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (stopped) break;
      const apis = options.apis();
      const baseUrl = apis[i % apis.length]!;
      if (i % 2 === 0) {
        pending.push(createReport(baseUrl, `${options.tag}-${i}`).then((o) => ({ kind: "create", ...o })));
      } else {
        const reportId = options.reportIds[((i - 1) / 2) % options.reportIds.length]!;
        pending.push(sendContactMessage(baseUrl, reportId).then((o) => ({ kind: "contact-message", ...o })));
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      await run;
      return Promise.all(pending);
    },
  };
}
