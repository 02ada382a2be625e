/**
 * The shelter partner scenario, on a running bench stack (bench/stack.ts).
 * bench/run.ts can run it as one of its scenarios; `npm run bench:partners`
 * runs it alone on a stack of its own (`ass_bench_partners`).
 *
 * - in-custody create p50/p95/p99: POST /partners/v2/animals, open loop at
 *   20 calls/s, each a new animal, beside a finder's POST
 *   /v1/safety/found-reports at the same rate from the same run (the raw
 *   baseline of this path: the same found report without the partner's
 *   token lookup, date parsing and custody columns).
 * - nightly publish: 500 new animals, each with one photo by URL from a local
 *   HTTP server (allow-listed; a 1024 px JPEG, the scaled copy shelter
 *   software stores, or with BENCH_PARTNER_PHOTO=camera the phone camera's
 *   full-size one), sequential as ASM3 sends them and honouring
 *   Retry-After at the 600-a-minute limit; the time until the last photo is
 *   ready. BENCH_PARTNERS_NIGHTLY_ONLY=1 runs this part alone.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import sharp from "sharp";
import { cameraLikeJpeg } from "./camera-jpeg.js";
import { runScenarioScript } from "./scenario-script.js";
import { BENCH_PARTNER_KEY, log, type BenchStack } from "./stack.js";
import { round, summarize } from "./stats.js";

const targets = { createP95Ms: 20, nightlySeconds: 60 };
type Row = [scenario: string, figure: string, baseline: string, target: string, note: string];

let clients = 0;
const address = () => `10.96.${(++clients >> 8) & 255}.${clients & 255}`;

async function expectJson(res: Response, want: number[]): Promise<Record<string, unknown>> {
  if (!want.includes(res.status)) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

let animals = 0;
const animal = () => {
  animals += 1;
  return {
    externalId: `B${animals}`,
    displayId: `B${animals}`,
    birthDate: "03/14/2021",
    description: "Came in as a stray, friendly.",
    address: { city: "", country: "", line1: "12 Rue Cler", line2: "", postalCode: "", state: "" },
    intakeDate: "11/20/2025",
    name: "Bench",
    metadata: { system_animal_id: animals },
    microchip: `2502685${String(animals).padStart(8, "0")}`,
    shelterId: "bench",
    species: animals % 2 ? "dog" : "cat",
    status: "found",
    size: "MEDIUM",
    altered: true,
    breed: "Beagle",
    weight: 424,
    sex: "male",
  };
};

/** Open loop: one call every 1000/rate ms whatever the answers, each call's latency recorded. */
async function openLoop(rate: number, count: number, call: () => Promise<Response>): Promise<number[]> {
  const started = performance.now();
  const pending: Promise<number>[] = [];
  for (let i = 0; i < count; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(
      (async () => {
        const t = performance.now();
        const res = await call();
        await res.arrayBuffer();
        if (res.status >= 300) throw new Error(`${res.url}: ${res.status}`);
        return performance.now() - t;
      })(),
    );
  }
  return Promise.all(pending);
}

export async function partnersScenario(stack: BenchStack, { quick = false } = {}): Promise<{ rows: Row[]; results: Record<string, unknown> }> {
  const rate = 20;
  const count = quick ? 200 : 600;
  const nightly = quick ? 100 : 500;
  // Shelter software serves its stored, scaled copy (BENCH_PARTNER_PHOTO=camera sends the phone camera's full-size JPEG instead).
  const camera = await cameraLikeJpeg();
  const jpeg = process.env.BENCH_PARTNER_PHOTO === "camera" ? camera : await sharp(camera).resize({ width: 1024 }).jpeg({ quality: 85 }).toBuffer();
  const photoServer = http.createServer((_request, response) => {
    response.writeHead(200, { "content-type": "image/jpeg", "content-length": jpeg.length });
    response.end(jpeg);
  });
  await new Promise<void>((resolve) => photoServer.listen(0, "127.0.0.1", resolve));
  const photoPort = (photoServer.address() as AddressInfo).port;

  const session = async (name: string) => {
    const loginEmail = `${name.toLowerCase().replaceAll(" ", "-")}@bench-shelter.example`;
    const made = await expectJson(
      await fetch(`${stack.baseUrl}/v1/admin/partners`, {
        method: "POST",
        headers: { "x-debug-actor": "bench-admin", "x-debug-roles": "platform_admin", "content-type": "application/json", "x-forwarded-for": address() },
        body: JSON.stringify({ name, kind: "shelter", location: { lat: 48.8584, lon: 2.2945 }, publicContact: {}, loginEmail, dateFormat: "MM/DD/YYYY" }),
      }),
      [201],
    );
    const login = await expectJson(
      await fetch(`${stack.baseUrl}/partners/v2/auth/login`, {
        method: "POST",
        headers: { "x-api-key": BENCH_PARTNER_KEY, "content-type": "application/json", "x-forwarded-for": address() },
        body: JSON.stringify({ email: loginEmail, password: made.password }),
      }),
      [200],
    );
    return { "x-api-key": BENCH_PARTNER_KEY, authorization: `Bearer ${String(login.accessToken)}`, "content-type": "application/json" };
  };

  try {
    const nightlyOnly = process.env.BENCH_PARTNERS_NIGHTLY_ONLY === "1";
    const creates = async () => {
      log(`partners: ${count} in-custody creates at ${rate}/s, and as many finder found reports at the same rate`);
      const headers = await session("Bench Shelter");
      await openLoop(rate, 20, () => fetch(`${stack.baseUrl}/partners/v2/animals`, { method: "POST", headers: { ...headers, "x-forwarded-for": address() }, body: JSON.stringify(animal()) }));
      // A fresh partner for the measured run, so its 600-a-minute bucket is full.
      const measured = await session("Bench Shelter measured");
      const create = summarize(
        await openLoop(rate, count, () =>
          fetch(`${stack.baseUrl}/partners/v2/animals`, { method: "POST", headers: { ...measured, "x-forwarded-for": address() }, body: JSON.stringify(animal()) }),
        ),
      );
      let finders = 0;
      const finderReport = () =>
        fetch(`${stack.baseUrl}/v1/safety/found-reports`, {
          method: "POST",
          headers: { "x-debug-actor": `bench-finder-${++finders}`, "content-type": "application/json", "x-forwarded-for": address() },
          body: JSON.stringify({ animal: { species: "dog", breed: "Beagle" }, foundAt: "2025-11-20T00:00:00Z", location: { lat: 48.8584, lon: 2.2945 } }),
        });
      const finder = summarize(await openLoop(rate, count, finderReport));
      return { create, finder };
    };
    const { create, finder } = nightlyOnly ? { create: null, finder: null } : await creates();

    log(`partners: nightly publish of ${nightly} animals with a photo each, sequential, honouring Retry-After`);
    const nightlyHeaders = await session("Bench Shelter nightly");
    const started = performance.now();
    let waitedMs = 0;
    const send = async (url: string, body: unknown): Promise<Record<string, unknown>> => {
      for (;;) {
        const res = await fetch(`${stack.baseUrl}${url}`, { method: "POST", headers: { ...nightlyHeaders, "x-forwarded-for": address() }, body: JSON.stringify(body) });
        if (res.status !== 429) return expectJson(res, [200, 201, 202]);
        const wait = Number(res.headers.get("retry-after") ?? 1) * 1000;
        waitedMs += wait;
        await res.arrayBuffer();
        await new Promise((r) => setTimeout(r, wait));
      }
    };
    const ids: string[] = [];
    for (let i = 0; i < nightly; i++) {
      const { id } = await send("/partners/v2/animals", animal());
      await send(`/partners/v2/animals/${id}/photos`, { photos: [{ url: `http://127.0.0.1:${photoPort}/image?id=${i}&something=.jpg` }] });
      ids.push(String(id));
    }
    const sentSeconds = (performance.now() - started) / 1000;
    let fetchedSeconds: number | null = null;
    for (;;) {
      const { rows } = await stack.pool.query<{ ready: number; failed: number; fetched: number }>(
        `select count(*) filter (where p.status = 'ready')::int as ready, count(*) filter (where f.status = 'fetched')::int as fetched,
                count(*) filter (where f.status = 'failed' or p.status = 'failed')::int as failed
         from partner_photo_fetch f left join photo p on p.id = f.photo_id where f.found_report_id = any($1::uuid[])`,
        [ids],
      );
      if (rows[0]!.failed > 0) throw new Error(`${rows[0]!.failed} partner photos failed`);
      if (fetchedSeconds === null && rows[0]!.fetched === nightly) fetchedSeconds = (performance.now() - started) / 1000;
      if (rows[0]!.ready === nightly) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const allReadySeconds = (performance.now() - started) / 1000;

    const ms = (s: { p50: number; p95: number; p99: number }) => `${round(s.p50)} / ${round(s.p95)} / ${round(s.p99)} ms`;
    const rows: Row[] = [
      ...(create && finder
        ? [["in-custody create p50/p95/p99", ms(create), `finder found report ${ms(finder)}`, `p95 ≤ ${targets.createP95Ms} ms`, `${count} at ${rate}/s, open loop`] satisfies Row]
        : []),
      [
        `nightly publish, ${nightly} animals + photos`,
        `${round(allReadySeconds, 1)} s to the last photo ready`,
        `calls sent in ${round(sentSeconds, 1)} s, ${round(waitedMs / 1000, 1)} s of it waiting on Retry-After; every photo fetched at ${round(fetchedSeconds ?? 0, 1)} s`,
        `≤ ${targets.nightlySeconds} s`,
        `sequential, local HTTP photo server (allow-listed), ${process.env.BENCH_PARTNER_PHOTO === "camera" ? "camera-size" : "1024 px"} JPEG; photo jobs ${process.env.NOTIFIER_PHOTO_CONCURRENCY ?? "at the default concurrency"}`,
      ],
    ];
    return { rows, results: { create, finder, nightly, sentSeconds, allReadySeconds, waitedSeconds: waitedMs / 1000, fetchedSeconds, photoConcurrency: process.env.NOTIFIER_PHOTO_CONCURRENCY ?? null, targets } };
  } finally {
    photoServer.closeAllConnections();
    photoServer.close();
  }
}

await runScenarioScript(import.meta.url, "partners bench", "ass_bench_partners", partnersScenario);
