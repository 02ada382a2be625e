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
 * - a shelter's first publish: ASM3's publisher's run() replayed call for
 *   call (tests/partners/asm3-publisher.ts) for 300 animals with a photo
 *   each, from one client address: a login, then for each animal a create,
 *   the purge of its photos and the post of its photo, 901 calls one after
 *   the other, retrying nothing; each photo from a local HTTP server
 *   (allow-listed; a 1024 px JPEG, the scaled copy shelter software stores,
 *   or with BENCH_PARTNER_PHOTO=camera the phone camera's full-size one).
 *   The run's time, its calls' latencies, the 429s and errors (none is the
 *   target), and the time until the last photo is ready.
 *   BENCH_PARTNERS_NIGHTLY_ONLY=1 runs this part alone.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import sharp from "sharp";
import { Asm3Shelter, stray } from "../tests/partners/asm3-publisher.js";
import { cameraLikeJpeg } from "./camera-jpeg.js";
import { runScenarioScript } from "./scenario-script.js";
import { BENCH_PARTNER_KEY, log, type BenchStack } from "./stack.js";
import { round, summarize } from "./stats.js";

const targets = { createP95Ms: 20, publishSeconds: 60, refused: 0 };
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
  // Under the 500 new animals an hour a partner may create (contract part 4).
  const count = quick ? 200 : 480;
  const nightly = quick ? 100 : 300;
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

    log(`partners: a shelter's first publish of ${nightly} animals with a photo each, as ASM3's run() sends it, from one address`);
    const loginEmail = "bench-shelter-publish@bench-shelter.example";
    const made = await expectJson(
      await fetch(`${stack.baseUrl}/v1/admin/partners`, {
        method: "POST",
        headers: { "x-debug-actor": "bench-admin", "x-debug-roles": "platform_admin", "content-type": "application/json", "x-forwarded-for": address() },
        body: JSON.stringify({ name: "Bench Shelter publish", kind: "shelter", location: { lat: 48.8584, lon: 2.2945 }, publicContact: {}, loginEmail }),
      }),
      [201],
    );
    const shelterAddress = address();
    const calls: { method: string; status: number; ms: number }[] = [];
    const shelter = new Asm3Shelter(
      { email: loginEmail, password: String(made.password), apiKey: BENCH_PARTNER_KEY, shelterId: "bench" },
      `http://127.0.0.1:${photoPort}/service`,
      "bench",
      "kg",
      async (request) => {
        // fetch sets Connection and Content-Length itself; the rest go as the publisher sends them, from the shelter's one address.
        const { connection: _c, "content-length": _l, ...headers } = request.headers;
        const t = performance.now();
        const res = await fetch(`${stack.baseUrl}/partners${request.path}`, {
          method: request.method,
          headers: { ...headers, "x-forwarded-for": shelterAddress },
          body: request.body,
        });
        const body = await res.text();
        calls.push({ method: request.method, status: res.status, ms: performance.now() - t });
        return { status: res.status, body };
      },
    );
    const intake = new Date(new Date().toISOString().slice(0, 10));
    for (let i = 0; i < nightly; i++) shelter.animals.push(stray(i, intake));
    const started = performance.now();
    const { processed } = await shelter.run(new Date());
    const sentSeconds = (performance.now() - started) / 1000;
    const refused = calls.filter((c) => c.status === 429).length;
    const failed = calls.filter((c) => c.status >= 400).length;
    if (shelter.log.errors.length > 0) log(`partners: the publisher logged ${shelter.log.errors.length} errors, the first: ${shelter.log.errors[0]}`);
    const ids = shelter.animals.map((an) => an.EXTRAIDS.petcolovelost).filter((id): id is string => Boolean(id));
    let fetchedSeconds: number | null = null;
    for (;;) {
      const { rows } = await stack.pool.query<{ ready: number; failed: number; fetched: number }>(
        `select count(*) filter (where p.status = 'ready')::int as ready, count(*) filter (where f.status = 'fetched')::int as fetched,
                count(*) filter (where f.status = 'failed' or p.status = 'failed')::int as failed
         from partner_photo_fetch f left join photo p on p.id = f.photo_id where f.found_report_id = any($1::uuid[])`,
        [ids],
      );
      if (rows[0]!.failed > 0) throw new Error(`${rows[0]!.failed} partner photos failed`);
      if (fetchedSeconds === null && rows[0]!.fetched === ids.length) fetchedSeconds = (performance.now() - started) / 1000;
      if (rows[0]!.ready === ids.length) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const allReadySeconds = (performance.now() - started) / 1000;
    const latency = summarize(calls.map((c) => c.ms));

    const ms = (s: { p50: number; p95: number; p99: number }) => `${round(s.p50)} / ${round(s.p95)} / ${round(s.p99)} ms`;
    const rows: Row[] = [
      ...(create && finder
        ? [["in-custody create p50/p95/p99", ms(create), `finder found report ${ms(finder)}`, `p95 ≤ ${targets.createP95Ms} ms`, `${count} at ${rate}/s, open loop`] satisfies Row]
        : []),
      [
        `a shelter's first publish, ${nightly} animals + photos, ASM3's run()`,
        `${refused} × 429, ${failed} errors, ${shelter.log.errors.length} logged by the publisher; ${calls.length} calls in ${round(sentSeconds, 1)} s; ${round(allReadySeconds, 1)} s to the last photo ready`,
        `call latency p50/p95/p99 ${ms(latency)} (the calls past the 600-a-minute bucket wait for their tokens); every photo fetched at ${round(fetchedSeconds ?? 0, 1)} s`,
        `0 × 429, 0 errors; ≤ ${targets.publishSeconds} s`,
        `one client address, one call at a time; local HTTP photo server (allow-listed), ${process.env.BENCH_PARTNER_PHOTO === "camera" ? "camera-size" : "1024 px"} JPEG; photo jobs ${process.env.NOTIFIER_PHOTO_CONCURRENCY ?? "at the default concurrency"}`,
      ],
    ];
    return {
      rows,
      results: {
        create,
        finder,
        publish: {
          animals: nightly,
          processed: processed.length,
          calls: calls.length,
          refused,
          failed,
          publisherErrors: shelter.log.errors.length,
          sentSeconds,
          allReadySeconds,
          fetchedSeconds,
          latency,
        },
        photoConcurrency: process.env.NOTIFIER_PHOTO_CONCURRENCY ?? null,
        targets,
      },
    };
  } finally {
    photoServer.closeAllConnections();
    photoServer.close();
  }
}

await runScenarioScript(import.meta.url, "partners bench", "ass_bench_partners", partnersScenario);
