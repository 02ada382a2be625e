/**
 * One-off measurement of photo processing (not part of `npm run bench`):
 * `npx tsx bench/photo-processing.ts`. A 12-megapixel camera-like JPEG
 * (4000x3000, gradient + grain, about 4 MB), processed into both WebP
 * variants a few times on this machine; prints the wall time of each run.
 */
import { cpus } from "node:os";
import sharp from "sharp";
import { processImage } from "../lib/images/process.js";

const RUNS = Number(process.env.PHOTO_BENCH_RUNS ?? 5);

async function cameraLikeJpeg(): Promise<Buffer> {
  const width = 4000;
  const height = 3000;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#6b8e5a"/><stop offset="1" stop-color="#d9c7a3"/></linearGradient></defs>
    <rect width="100%" height="100%" fill="url(#g)"/><circle cx="1800" cy="1500" r="900" fill="#7a5230"/></svg>`;
  const grain = await sharp({
    create: { width, height, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 16 } },
  })
    .raw()
    .toBuffer();
  return sharp(Buffer.from(svg))
    .composite([{ input: grain, raw: { width, height, channels: 3 }, blend: "overlay" }])
    .withExif({ IFD0: { Make: "Bench", Model: "Camera" } })
    .jpeg({ quality: 92 })
    .toBuffer();
}

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
