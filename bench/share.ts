/**
 * The share scenario: flyers, the share page and its first photo, each beside
 * the tag page's figures from the same run, on a running bench stack
 * (bench/stack.ts). bench/run.ts runs it as one of its scenarios;
 * `npm run bench:share` runs it alone on a stack of its own (`ass_bench_share`).
 *
 * - flyer warm: the same flyer URL back to back after a warm-up: the API's
 *   render cache answers by ETag (api/share/cache.ts).
 * - flyer cold: every request after the report's updated_at moved (a direct
 *   update, so no edit limit is in the way): a new ETag, so a full render
 *   with the photo read from storage.
 * - flyer size; share page weight (HTML, stylesheet, script, first display
 *   photo) beside the tag page's (HTML, stylesheet, script, thumb).
 * - page GET p95: the share page and the tag page, sequential.
 */
import { cameraLikeJpeg } from "./camera-jpeg.js";
import { runScenarioScript } from "./scenario-script.js";
import { log, type BenchStack } from "./stack.js";
import { round, summarize } from "./stats.js";

const targets = { flyerWarmP95Ms: 150, flyerBytes: 1024 * 1024, pageWeightBytes: 150 * 1024 };

type Row = [scenario: string, figure: string, baseline: string, target: string, note: string];

let clients = 0;
/** Each request from an address of its own: the per-IP limiter and the tag's scan limit are not what this measures. */
const client = (actor = "share-bench") => ({ "x-debug-actor": actor, "x-forwarded-for": `10.98.${(++clients >> 8) & 255}.${clients & 255}` });
const anonymous = () => ({ "x-forwarded-for": `10.97.${(++clients >> 8) & 255}.${clients & 255}`, accept: "text/html" });

async function json(res: Response, want: number): Promise<Record<string, unknown>> {
  if (res.status !== want) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

async function untilReady(stack: BenchStack, photoId: string): Promise<void> {
  for (;;) {
    const { rows } = await stack.pool.query<{ status: string }>(`select status from photo where id = $1`, [photoId]);
    if (rows[0]?.status === "ready") return;
    if (rows[0]?.status === "failed") throw new Error(`photo ${photoId} failed`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function uploadPhoto(stack: BenchStack, url: string, jpeg: Buffer): Promise<void> {
  const form = new FormData();
  form.append("photo", new Blob([jpeg], { type: "image/jpeg" }), "PXL_20251120_081500123.jpg");
  const { id } = await json(await fetch(`${stack.baseUrl}${url}`, { method: "POST", headers: client(), body: form }), 202);
  await untilReady(stack, String(id));
}

/** Milliseconds of `n` sequential GETs, each body read whole. */
async function timed(n: number, request: () => Promise<Response>, before?: () => Promise<void>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    if (before) await before();
    const started = performance.now();
    const res = await request();
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${res.url}: ${res.status}`);
    samples.push(performance.now() - started);
  }
  return samples;
}

async function bytesOf(url: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(url, { headers });
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  return (await res.arrayBuffer()).byteLength;
}

/** The stylesheet, script and first image a page links to, with the page's own bytes: what a first visit downloads. */
async function pageWeight(stack: BenchStack, html: string, htmlBytes: number): Promise<{ total: number; image: number }> {
  const assets = [...html.matchAll(/(?:href|src)="(\/t\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  const image = /<img src="([^"]+)"/.exec(html)?.[1];
  let total = htmlBytes;
  for (const asset of new Set(assets)) total += await bytesOf(`${stack.baseUrl}${asset}`);
  const imageBytes = image ? await bytesOf(`${stack.baseUrl}${image}`) : 0;
  return { total: total + imageBytes, image: imageBytes };
}

export async function shareScenario(stack: BenchStack, { quick = false } = {}): Promise<{ rows: Row[]; results: Record<string, unknown> }> {
  const n = quick ? 40 : 200;
  const coldN = quick ? 10 : 30;
  const jpeg = await cameraLikeJpeg();

  log("share: a lost report and a tagged animal, each with one photo");
  const report = await json(
    await fetch(`${stack.baseUrl}/v1/safety/lost-reports`, {
      method: "POST",
      headers: { ...client(), "content-type": "application/json" },
      body: JSON.stringify({
        animal: { species: "dog", name: "Bench", breed: "Beagle", colors: ["brown", "white"] },
        lastSeenAt: new Date().toISOString(),
        location: { lat: 48.85, lon: 2.35 },
        description: "Shy beagle with a red collar. ".repeat(20),
      }),
    }),
    201,
  );
  const reportId = String(report.id);
  await uploadPhoto(stack, `/v1/safety/lost-reports/${reportId}/photos`, jpeg);
  const animal = await json(
    await fetch(`${stack.baseUrl}/v1/animals`, {
      method: "POST",
      headers: { ...client(), "content-type": "application/json" },
      body: JSON.stringify({ name: "Bench", species: "dog", breed: "Beagle", colors: ["brown"] }),
    }),
    201,
  );
  await uploadPhoto(stack, `/v1/animals/${animal.id}/photos`, jpeg);
  const profile = await json(
    await fetch(`${stack.baseUrl}/v1/animals/${animal.id}/emergency-profile`, {
      method: "PUT",
      headers: { ...client(), "content-type": "application/json" },
      body: JSON.stringify({ showName: true, instructions: "Call the owner" }),
    }),
    200,
  );
  const tagUrl = `${stack.baseUrl}/t/${profile.token}`;
  const pageUrl = `${stack.baseUrl}/lost/${reportId}`;
  const flyerUrl = `${pageUrl}/flyer.pdf`;

  log("share: flyer cold (a new ETag each time) and warm (cached by ETag)");
  const touch = async () => {
    await stack.pool.query(`update safety_lost_report set updated_at = clock_timestamp() where id = $1`, [reportId]);
  };
  await timed(3, () => fetch(flyerUrl, { headers: anonymous() }), touch);
  const cold = summarize(await timed(coldN, () => fetch(flyerUrl, { headers: anonymous() }), touch));
  await timed(5, () => fetch(flyerUrl, { headers: anonymous() }));
  const warm = summarize(await timed(n, () => fetch(flyerUrl, { headers: anonymous() })));
  const flyerBytes = await bytesOf(flyerUrl, anonymous());

  log("share: share page and tag page, GET and weight");
  await timed(10, () => fetch(pageUrl, { headers: anonymous() }));
  const sharePage = summarize(await timed(n, () => fetch(pageUrl, { headers: anonymous() })));
  await timed(10, () => fetch(tagUrl, { headers: anonymous() }));
  const tagPage = summarize(await timed(n, () => fetch(tagUrl, { headers: anonymous() })));
  const shareHtml = await (await fetch(pageUrl, { headers: anonymous() })).text();
  const tagHtml = await (await fetch(tagUrl, { headers: anonymous() })).text();
  const shareWeight = await pageWeight(stack, shareHtml, Buffer.byteLength(shareHtml));
  const tagWeight = await pageWeight(stack, tagHtml, Buffer.byteLength(tagHtml));

  const ms = (s: { p50: number; p95: number; p99: number }) => `${round(s.p50)} / ${round(s.p95)} / ${round(s.p99)} ms`;
  const kb = (bytes: number) => `${round(bytes / 1024, 1)} KB`;
  const rows: Row[] = [
    ["flyer warm (ETag cache) p50/p95/p99", ms(warm), `tag page GET ${ms(tagPage)}`, `p95 ≤ ${targets.flyerWarmP95Ms} ms`, `${n} sequential, one photo`],
    ["flyer cold (render) p50/p95/p99", ms(cold), `tag page GET ${ms(tagPage)}`, "—", `${coldN} sequential, each a new ETag`],
    ["flyer size, A4, one photo", kb(flyerBytes), "—", `≤ ${kb(targets.flyerBytes)}`, "DejaVu Sans subsets embedded"],
    ["share page GET p50/p95/p99", ms(sharePage), `tag page GET ${ms(tagPage)}`, "—", `${n} sequential`],
    ["share page weight with first photo", kb(shareWeight.total), `tag page with thumb ${kb(tagWeight.total)}`, `≤ ${kb(targets.pageWeightBytes)}`, `display photo ${kb(shareWeight.image)}, thumb ${kb(tagWeight.image)}`],
  ];
  const results = { flyerWarm: warm, flyerCold: cold, flyerBytes, sharePage, tagPage, shareWeight, tagWeight, targets };
  return { rows, results };
}

await runScenarioScript(import.meta.url, "share bench", "ass_bench_share", shareScenario);
