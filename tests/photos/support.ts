import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import path from "node:path";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { pino } from "pino";
import sharp, { type Sharp } from "sharp";
import { expect } from "vitest";
import type { Pool, Queryable } from "../../lib/db.js";
import type { ObjectStorage } from "../../lib/storage/index.js";
import type { SupervisedWorker } from "../../lib/worker.js";
import { PHOTO_PROCESS_TASK } from "../../jobs/photos/task.js";
import { QUEUED_TASKS } from "../../jobs/registry.js";
import { createPhotoObjectDeleter } from "../../jobs/photos/delete.js";
import { createPhotoProcessor } from "../../jobs/photos/process.js";
import { startPhotoWorker } from "../../jobs/photos/worker.js";
import type { Env } from "../../lib/config.js";
import { as, buildTestApi, type TestApi } from "../helpers/app.js";
import type { TestS3Server } from "../helpers/s3-server.js";
import { eventually } from "../helpers/stream.js";
import { call } from "../safety/helpers.js";

/** Photos: multipart bodies built by hand, test images, and counts of what an upload stored. */

export interface FilePart {
  name: string;
  filename?: string;
  contentType?: string;
  data: Buffer | string;
}

/** A multipart/form-data body exactly as a browser sends one. */
export function multipart(parts: FilePart[]): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----ass-test-${randomBytes(8).toString("hex")}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename !== undefined ? `; filename="${part.filename}"` : ""}`;
    const type = part.contentType ?? (part.filename !== undefined ? "application/octet-stream" : undefined);
    chunks.push(Buffer.from(`--${boundary}\r\ncontent-disposition: ${disposition}\r\n${type ? `content-type: ${type}\r\n` : ""}\r\n`));
    chunks.push(Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data));
    chunks.push(Buffer.from("\r\n"));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { "content-type": `multipart/form-data; boundary=${boundary}` } };
}

export const photoPart = (data: Buffer | string, filename = "photo.jpg", contentType = "image/jpeg"): FilePart => ({
  name: "photo",
  filename,
  contentType,
  data,
});

export function uploadRequest(url: string, actor: string, parts: FilePart[]): InjectOptions {
  const body = multipart(parts);
  return { method: "POST", url, headers: { ...as(actor), ...body.headers }, payload: body.payload };
}

export const upload = (api: TestApi, url: string, actor: string, bytes: Buffer | string, filename?: string) =>
  call(api, uploadRequest(url, actor, [photoPart(bytes, filename)]));

/** Left half red, right half blue, with a gradient: which way it ends up shows the rotation; detail for the hash. */
export function scene(width: number, height: number, seed = 0): Sharp {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs><linearGradient id="g" x1="0" x2="0" y1="0" y2="1"><stop offset="0" stop-color="#fff" stop-opacity="0"/>
    <stop offset="1" stop-color="#000" stop-opacity="0.${5 + (seed % 4)}"/></linearGradient></defs>
    <rect width="${width / 2}" height="${height}" fill="#ff0000"/>
    <rect x="${width / 2}" width="${width / 2}" height="${height}" fill="#0000ff"/>
    <circle cx="${(width * (2 + (seed % 5))) / 8}" cy="${height / 3}" r="${Math.min(width, height) / 6}" fill="#22aa44"/>
    <rect width="${width}" height="${height}" fill="url(#g)"/></svg>`;
  return sharp(Buffer.from(svg));
}

export const GPS_EXIF = {
  IFD0: { Make: "Canon", Model: "EOS 5D Mark IV", Software: "camera-firmware-1.2" },
  IFD3: { GPSLatitudeRef: "N", GPSLatitude: "51/1 30/1 1234/100", GPSLongitudeRef: "W", GPSLongitude: "0/1 7/1 3900/100", GPSMapDatum: "WGS-84" },
};

/** A phone-like JPEG: EXIF with the camera and the GPS position of home, and an XMP packet. */
export function phoneJpeg(width = 1200, height = 900, seed = 0, orientation?: number): Promise<Buffer> {
  const image = scene(width, height, seed);
  return (orientation ? image.withMetadata({ orientation }) : image)
    .withExif(GPS_EXIF)
    .withXmp('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/></x:xmpmeta>')
    .jpeg({ quality: 90 })
    .toBuffer();
}

export const smallJpeg = (seed = 0) => scene(200, 150, seed).jpeg().toBuffer();

/** Exactly `size` bytes: a small valid JPEG followed by padding after its end-of-image marker (cameras append trailers too). */
export async function paddedJpeg(size: number, seed = 0): Promise<Buffer> {
  const jpeg = await smallJpeg(seed);
  return Buffer.concat([jpeg, Buffer.alloc(size - jpeg.length, 0x20)]);
}

/** What the photo upload left behind, counted from outside the code under test. */
export interface Footprint {
  photos: number;
  outbox: number;
  jobs: number;
  objects: number;
}

/** An API listening on a real port, for clients on real sockets. */
export interface Served {
  api: TestApi;
  port: number;
}

/** The app of `env` on 127.0.0.1 and any free port. */
export async function serveApi(env: Env): Promise<Served> {
  const api = await buildTestApi(env);
  await api.app.listen({ host: "127.0.0.1", port: 0 });
  return { api, port: (api.app.server.address() as { port: number }).port };
}

/** Closes served APIs, dropping the connections stalled clients still hold. */
export async function closeServed(...served: Array<Served | undefined>): Promise<void> {
  for (const one of served) {
    one?.api.app.server.closeAllConnections();
    await one?.api.close();
  }
}

export async function footprint(db: Queryable, countObjects: () => Promise<number>): Promise<Footprint> {
  const { rows } = await db.query<{ photos: number; outbox: number; jobs: number }>(
    `select (select count(*)::int from photo) as photos, (select count(*)::int from outbox_event) as outbox,
       (select count(*)::int from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
        where t.identifier like 'photo%') as jobs`,
  );
  return { ...rows[0]!, objects: await countObjects() };
}

/** Files under a LocalObjectStorage directory's objects/ (optionally one prefix). */
export function localObjectCount(directory: string, prefix = ""): number {
  try {
    return readdirSync(path.join(directory, "objects", prefix), { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
  } catch {
    return 0;
  }
}

/** Keys in an s3rver bucket, listed with a client of its own (not the code under test). */
export async function s3Keys(server: TestS3Server, prefix = ""): Promise<string[]> {
  const client = new S3Client({
    endpoint: server.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
  });
  try {
    const out = await client.send(new ListObjectsV2Command({ Bucket: server.bucket, Prefix: prefix }));
    return (out.Contents ?? []).map((o) => o.Key!).sort();
  } finally {
    client.destroy();
  }
}

export function expectProblemOf(res: LightMyRequestResponse, status: number, slug: string): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
  const body = res.json();
  expect(body).toMatchObject({ status, type: expect.stringMatching(new RegExp(`/${slug}$`)), title: expect.any(String), detail: expect.any(String) });
}

/**
 * The photo jobs' own functions (the ones the notifier's worker runs), called
 * directly so each step happens exactly when the test says. `pool` is read
 * when a job runs, so this can be made before the harness exists.
 */
export function photoJobsNow(pool: () => Pool, storage: ObjectStorage) {
  const deps = () => ({ pool: pool(), storage, logger: pino({ level: "silent" }) });
  return {
    process: (id: string, attempt = 1) => createPhotoProcessor(deps())(id, { attempt, maxAttempts: QUEUED_TASKS[PHOTO_PROCESS_TASK].maxAttempts }),
    deleteObjects: (id: string) => createPhotoObjectDeleter(deps())(id),
  };
}

/** The photo jobs on the real notifier code, in the test process. */
export function startPhotoJobs(pool: Pool, storage: ObjectStorage, concurrency = 2): Promise<SupervisedWorker> {
  return startPhotoWorker({ pool, storage, logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }) }, concurrency);
}

export async function photoStatus(db: Queryable, id: string): Promise<{ status: string; failure_reason: string | null }> {
  const { rows } = await db.query(`select status, failure_reason from photo where id = $1`, [id]);
  return rows[0];
}

export const untilStatus = (db: Queryable, id: string, status: string, timeoutMs = 30_000) =>
  eventually(async () => ((await photoStatus(db, id))?.status === status ? true : undefined), timeoutMs);
