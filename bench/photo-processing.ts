/**
 * One-off measurement of photo processing (not part of `npm run bench`):
 * `npx tsx bench/photo-processing.ts`. A 12-megapixel camera-like JPEG
 * (camera-jpeg.ts, about 4 MB), processed into both WebP
 * variants a few times on this machine; prints the wall time of each run.
 */
import { cpus } from "node:os";
import sharp from "sharp";
import { processImage } from "../lib/images/process.js";
import { cameraLikeJpeg } from "./camera-jpeg.js";

const RUNS = Number(process.env.PHOTO_BENCH_RUNS ?? 5);

const jpeg = await cameraLikeJpeg();
const meta = await sharp(jpeg).metadata();
console.log(`input: ${meta.width}x${meta.height} JPEG, ${(jpeg.length / 2 ** 20).toFixed(2)} MiB; ${cpus().length} cores, sharp ${sharp.versions.sharp}`);
const times: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const started = performance.now();
  const result = await processImage(jpeg);
  times.push(performance.now() - started);
  if (i === 0) {
    const { thumb, display } = result.variants;
    console.log(`display ${display.width}x${display.height} ${(display.bytes.length / 1024).toFixed(0)} KiB, thumb ${thumb.width}x${thumb.height} ${(thumb.bytes.length / 1024).toFixed(0)} KiB`);
  }
}
const sorted = [...times].sort((a, b) => a - b);
console.log(`processImage (both variants + phash), ${RUNS} runs: ${times.map((t) => t.toFixed(0)).join(", ")} ms; median ${sorted[Math.floor(RUNS / 2)]!.toFixed(0)} ms`);
console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
