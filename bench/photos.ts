/**
 * The photo scenario (upload→ready and variant GETs against their targets), on a
 * running bench stack (bench/stack.ts):
 *
 * - upload→ready: a 12-megapixel phone JPEG of about 4 MB is uploaded to a
 *   lost report through the API, one upload at a time after a warm-up, and
 *   timed from the start of the upload until the photo is seen ready (a
 *   database poll every 20 ms, cheaper for the stack than polling the API);
 *   the notifier's job makes the variants in between.
 * - variant GET: the ready photos' display and thumb variants from the local
 *   backend, at a steady open-loop rate after a warm-up (bench/loadgen.ts).
 *
 * bench/photos-main.ts runs it alone.
 */
import sharp from "sharp";
import { cameraLikeJpeg, withComment } from "./camera-jpeg.js";
import { load } from "./load.js";
import { log, type BenchStack } from "./stack.js";
import { round, summarize } from "./stats.js";

const targets = { uploadReadyP95Ms: 1500, variantGetP95Ms: 10 };
/** Photos per report (the contract's cap): the uploads are spread over reports of their own. */
const PER_REPORT = 5;
const POLL_MS = 20;

type Row = [string, string, string, string];

interface UploadSample {
  id: string;
  /** Until the API's 202. */
  acceptedMs: number;
  /** Until the photo was seen ready. */
  readyMs: number;
}

let clients = 0;
/** Each request from an address of its own: the per-IP limiter is not what this measures. */
const client = (actor: string) => ({ "x-debug-actor": actor, "x-forwarded-for": `10.99.${(++clients >> 8) & 255}.${clients & 255}` });

async function createLostReport(stack: BenchStack, actor: string): Promise<string> {
  const res = await fetch(`${stack.baseUrl}/v1/safety/lost-reports`, {
    method: "POST",
    headers: { ...client(actor), "content-type": "application/json" },
    body: JSON.stringify({ animal: { species: "dog", name: "Bench" }, lastSeenAt: new Date().toISOString(), location: { lat: 48.85, lon: 2.35 } }),
  });
  if (res.status !== 201) throw new Error(`lost report: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

async function uploadUntilReady(stack: BenchStack, reportId: string, actor: string, jpeg: Buffer): Promise<UploadSample> {
  const form = new FormData();
  form.append("photo", new Blob([jpeg], { type: "image/jpeg" }), "PXL_20251120_081500123.jpg");
  const started = performance.now();
  const res = await fetch(`${stack.baseUrl}/v1/safety/lost-reports/${reportId}/photos`, { method: "POST", headers: client(actor), body: form });
  if (res.status !== 202) throw new Error(`upload: ${res.status} ${await res.text()}`);
  const acceptedMs = performance.now() - started;
  const { id } = (await res.json()) as { id: string };
  for (;;) {
    const { rows } = await stack.pool.query<{ status: string; failure_reason: string | null }>(`select status, failure_reason from photo where id = $1`, [id]);
    if (rows[0]?.status === "ready") return { id, acceptedMs, readyMs: performance.now() - started };
    if (rows[0]?.status !== "processing") throw new Error(`photo ${id} is ${rows[0]?.status}: ${rows[0]?.failure_reason}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

const VARIANT_ROUTE = 'route="/v1/photos/:photoId/:variant"';

/** The API's own count of variant GETs answered 200 within each histogram bucket (le, in seconds). */
async function servedWithin(stack: BenchStack): Promise<Map<string, number>> {
  const text = await (await fetch(`${stack.metricsUrl}/metrics`, { headers: client("bench-photos-metrics") })).text();
  const counts = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line.startsWith("http_request_duration_seconds_bucket") || !line.includes(VARIANT_ROUTE) || !line.includes('status="200"')) continue;
    counts.set(/le="([^"]+)"/.exec(line)![1]!, Number(line.split(" ").at(-1)));
  }
  return counts;
}

/** Of the GETs between two readings, the share the server answered within 2.5, 5 and 10 ms: its time without the client's. */
function serverShares(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const count = (le: string) => (after.get(le) ?? 0) - (before.get(le) ?? 0);
  const all = Math.max(1, count("+Inf"));
  return Object.fromEntries(["0.0025", "0.005", "0.01"].map((le) => [`within${Number(le) * 1000}ms`, round((count(le) / all) * 100, 1)]));
}

export async function photoScenario(stack: BenchStack, options: { quick: boolean }): Promise<{ rows: Row[]; results: Record<string, unknown> }> {
  const uploads = options.quick ? 5 : 20;
  log(`photos: making a 12-megapixel phone JPEG, then ${uploads} uploads one at a time after a warm-up`);
  const jpeg = await cameraLikeJpeg();
  const { width, height } = await sharp(jpeg).metadata();
  const input = `${width}x${height} JPEG, ${round(jpeg.length / 1e6, 1)} MB`;

  const samples: UploadSample[] = [];
  let reportId = "";
  let actor = "";
  // Upload 0 is the warm-up (first decode, first WebP encode, cold caches); every upload has its own bytes.
  for (let i = 0; i <= uploads; i++) {
    if (i % PER_REPORT === 0) {
      actor = `bench-photos-${Date.now().toString(36)}-${i}`;
      reportId = await createLostReport(stack, actor);
    }
    const sample = await uploadUntilReady(stack, reportId, actor, withComment(jpeg, `bench upload ${i}`));
    if (i > 0) samples.push(sample);
  }
  const ready = summarize(samples.map((s) => s.readyMs));
  const accepted = summarize(samples.map((s) => s.acceptedMs));
  log(`  upload→ready p50 ${ready.p50} ms, p95 ${ready.p95} ms (202 after p50 ${accepted.p50} ms)`);

  const paths = samples.flatMap(({ id }) => [`/v1/photos/${id}/display`, `/v1/photos/${id}/thumb`]);
  const rate = 50;
  const durationSec = options.quick ? 4 : 10;
  log(`photos: variant GETs, warm-up then ${rate * durationSec} at ${rate}/s`);
  await load({ baseUrl: stack.baseUrl, rate, durationSec: 2, kind: "paths", paths, connections: 8 });
  const before = await servedWithin(stack);
  const gets = await load({ baseUrl: stack.baseUrl, rate, durationSec, kind: "paths", paths, connections: 8 });
  const server = serverShares(before, await servedWithin(stack));
  const served = gets.statuses["200"] ?? 0;
  log(`  variant GET p50 ${gets.latency.p50} ms, p95 ${gets.latency.p95} ms, ${served}/${gets.sent} 200; server ${JSON.stringify(server)}`);

  return {
    rows: [
      [
        "photo upload→ready p50/p95",
        `${round(ready.p50, 0)} / ${round(ready.p95, 0)} ms`,
        `p95 ≤ ${targets.uploadReadyP95Ms} ms`,
        `${ready.count} sequential uploads of a ${input}; 202 after p50 ${round(accepted.p50, 0)} ms`,
      ],
      [
        "photo variant GET p50/p95/p99",
        `${gets.latency.p50} / ${gets.latency.p95} / ${gets.latency.p99} ms`,
        `p95 ≤ ${targets.variantGetP95Ms} ms`,
        `${served}/${gets.sent} 200 at ${rate}/s, display and thumb, local backend; server: ${server.within5ms}% ≤ 5 ms, ${server.within10ms}% ≤ 10 ms`,
      ],
    ],
    results: { input, uploadReady: ready, uploadAccepted: accepted, variantGet: { ...gets.latency, rate, statuses: gets.statuses, late: gets.late, server } },
  };
}
