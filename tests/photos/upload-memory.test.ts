import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_UPLOAD_BYTES } from "../../lib/photos.js";
import { originalKey, sha256Hex } from "../../lib/storage/index.js";
import { as, devEnv } from "../helpers/app.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { freePort, startTestBus, waitForPort, type TestBus } from "../helpers/nats.js";
import { ServiceProcess } from "../helpers/processes.js";
import { lostReportBody } from "../safety/helpers.js";
import { multipart, paddedJpeg, photoPart } from "./support.js";

/**
 * The memory figure: the real API process, compiled as `npm run
 * build` ships it, takes ten concurrent 10 MiB uploads, and its peak resident
 * set (VmHWM, the kernel's high-water mark, so no sampling can miss a peak)
 * stays below 300 MiB. (Run through tsx, as `npm run dev` does, the same
 * process starts about 20 MiB larger: the compiler is loaded too.)
 */
const UPLOADS = 10;
const RSS_LIMIT_MIB = 300;

let db: TestDatabase;
let bus: TestBus;
let api: ServiceProcess;
let baseUrl: string;
const photoDir = mkdtempSync(path.join(tmpdir(), "ass-test-upload-memory-"));
const root = path.resolve(import.meta.dirname, "../..");
// Inside the package, like dist/ (as tests/foundation/build.test.ts does).
const compiled = path.join(root, ".test-dist", `upload-memory-${process.pid}`);

beforeAll(async () => {
  await promisify(execFile)(process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", compiled], { cwd: root });
  db = await createTestDatabase();
  bus = await startTestBus();
  const port = await freePort();
  api = ServiceProcess.start("api", devEnv(db.url, bus.url, { API_HTTP_ADDR: `127.0.0.1:${port}`, PHOTO_STORAGE_DIR: photoDir }), { compiledIn: compiled });
  await waitForPort(port, 30_000);
  baseUrl = `http://127.0.0.1:${port}`;
}, 180_000);
afterAll(async () => {
  await api?.stop();
  await bus?.dispose();
  await db?.drop();
  rmSync(photoDir, { recursive: true, force: true });
  rmSync(compiled, { recursive: true, force: true });
});

/** A /proc/<pid>/status figure in MiB (VmRSS now, VmHWM the peak so far). */
function statusMiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith(`${field}:`));
  return Math.round(Number(line!.split(/\s+/)[1]) / 1024);
}

async function createReport(actor: string): Promise<string> {
  const res = await fetch(`${baseUrl}/v1/safety/lost-reports`, {
    method: "POST",
    headers: { ...as(actor), "content-type": "application/json" },
    body: JSON.stringify(lostReportBody()),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

describe("upload memory under concurrency", () => {
  it(`keeps the API's peak RSS below ${RSS_LIMIT_MIB} MiB under ${UPLOADS} concurrent 10 MiB uploads`, async () => {
    const actors = Array.from({ length: UPLOADS }, (_, i) => `memory-owner-${i}`);
    const reports = await Promise.all(actors.map(createReport));
    // Each a distinct 10 MiB file (the cap exactly), so nothing is shared between uploads.
    const files = await Promise.all(actors.map((_, i) => paddedJpeg(MAX_UPLOAD_BYTES, i)));
    const bodies = files.map((file) => multipart([photoPart(file)]));
    const pid = api.child.pid!;
    const before = { rss: statusMiB(pid, "VmRSS"), peak: statusMiB(pid, "VmHWM") };

    const statuses = await Promise.all(
      actors.map(async (actor, i) => {
        const res = await fetch(`${baseUrl}/v1/safety/lost-reports/${reports[i]}/photos`, {
          method: "POST",
          headers: { ...as(actor), ...bodies[i]!.headers },
          body: bodies[i]!.payload,
        });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    const peak = statusMiB(pid, "VmHWM");
    console.log(
      `upload memory: ${UPLOADS} concurrent ${MAX_UPLOAD_BYTES / 2 ** 20} MiB uploads → ${statuses.join(",")}; ` +
        `API RSS before ${before.rss} MiB (peak so far ${before.peak} MiB), peak after ${peak} MiB, now ${statusMiB(pid, "VmRSS")} MiB`,
    );
    expect(statuses).toEqual(Array(UPLOADS).fill(202));
    // The slots' buffers are reused: every upload was stored whole and as sent, none with another's bytes.
    const sent = files.map(sha256Hex).sort();
    const { rows } = await db.pool.query<{ sha: string }>(`select original_sha256 as sha from photo order by 1`);
    expect(rows.map((r) => r.sha)).toEqual(sent);
    for (const sha of sent) expect(sha256Hex(readFileSync(path.join(photoDir, "objects", originalKey(sha))))).toBe(sha);
    expect(peak).toBeLessThan(RSS_LIMIT_MIB);
  });
});
