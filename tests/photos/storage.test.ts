import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../lib/config.js";
import {
  createObjectStorage,
  InvalidObjectKey,
  LocalObjectStorage,
  originalKeyFor,
  readAll,
  S3ObjectStorage,
  sha256Hex,
  variantKeyFor,
  type ObjectStorage,
} from "../../lib/storage/index.js";
import { startS3Server, type TestS3Server } from "../helpers/s3-server.js";

interface Backend {
  storage: ObjectStorage;
  /** How many objects exist under a prefix, seen from outside the interface. */
  countUnder(prefix: string): Promise<number>;
  /** Leftovers of half-written objects, if the backend has such a place. */
  strayTempFiles(): number;
  dispose(): Promise<void>;
}

async function localBackend(): Promise<Backend> {
  const dir = mkdtempSync(path.join(tmpdir(), "ass-photos-local-"));
  const storage = new LocalObjectStorage(dir);
  const list = (sub: string) => {
    try {
      return readdirSync(path.join(dir, sub), { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    } catch {
      return [];
    }
  };
  return {
    storage,
    countUnder: async (prefix) => list(path.join("objects", prefix)).length,
    strayTempFiles: () => list("tmp").length,
    dispose: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function s3Backend(): Promise<Backend> {
  const server = await startS3Server();
  const config = { endpoint: server.endpoint, bucket: server.bucket, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey };
  const storage = new S3ObjectStorage(config);
  const lister = new S3Client({
    endpoint: server.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
  });
  return {
    storage,
    countUnder: async (prefix) => {
      const out = await lister.send(new ListObjectsV2Command({ Bucket: server.bucket, Prefix: prefix }));
      return out.KeyCount ?? 0;
    },
    strayTempFiles: () => 0,
    dispose: async () => {
      lister.destroy();
      await storage.close();
      await server.stop();
    },
  };
}

function failingStream(first: Buffer): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (!sent) {
        sent = true;
        this.push(first);
      } else {
        this.destroy(new Error("client went away"));
      }
    },
  });
}

describe.each([
  ["local directory", localBackend],
  ["S3 (s3rver)", s3Backend],
] as const)("object storage: %s", (_name, make) => {
  let backend: Backend;
  let storage: ObjectStorage;
  beforeAll(async () => {
    backend = await make();
    storage = backend.storage;
  });
  afterAll(async () => backend?.dispose());

  it("round-trips a buffer with its type and length", async () => {
    const bytes = Buffer.from("hello photo \u{1F436}");
    await storage.put("variants/round-trip.webp", bytes, "image/webp");
    const got = await storage.get("variants/round-trip.webp");
    expect(got).not.toBeNull();
    expect(got!.contentType).toBe("image/webp");
    expect(got!.contentLength).toBe(bytes.length);
    expect((await readAll(got!.body)).equals(bytes)).toBe(true);
    expect(await storage.head("variants/round-trip.webp")).toEqual({ contentLength: bytes.length, contentType: "image/webp" });
    expect(await storage.exists("variants/round-trip.webp")).toBe(true);
  });

  it("round-trips a stream, and a second put replaces the object", async () => {
    const big = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    await storage.put("originals/streamed", Readable.from([big.subarray(0, 1000), big.subarray(1000)]), "image/jpeg");
    const got = await storage.get("originals/streamed");
    expect(got!.contentLength).toBe(big.length);
    expect((await readAll(got!.body)).equals(big)).toBe(true);

    await storage.put("originals/streamed", Buffer.from("short"), "image/png");
    const replaced = await storage.get("originals/streamed");
    expect(replaced!.contentType).toBe("image/png");
    expect((await readAll(replaced!.body)).toString()).toBe("short");
  });

  it("answers null for a key with no object", async () => {
    expect(await storage.get("variants/never-stored.webp")).toBeNull();
    expect(await storage.head("variants/never-stored.webp")).toBeNull();
    expect(await storage.exists("variants/never-stored.webp")).toBe(false);
  });

  it("deletes, and deleting again or deleting a key never stored is fine", async () => {
    await storage.put("originals/to-delete", Buffer.from("x"), "image/gif");
    await storage.delete("originals/to-delete");
    expect(await storage.get("originals/to-delete")).toBeNull();
    expect(await storage.exists("originals/to-delete")).toBe(false);
    await expect(storage.delete("originals/to-delete")).resolves.toBeUndefined();
    await expect(storage.delete("originals/no-such-key-ever")).resolves.toBeUndefined();
  });

  it("stores content-addressed bytes once", async () => {
    const webp = Buffer.from("RIFF....WEBPVP8 same bytes");
    const first = variantKeyFor(webp);
    const second = variantKeyFor(Buffer.from(webp));
    expect(second).toBe(first);
    expect(first).toBe(`variants/${sha256Hex(webp)}.webp`);
    const before = await backend.countUnder("variants/");
    await storage.put(first, webp, "image/webp");
    await storage.put(second, Buffer.from(webp), "image/webp");
    expect(await backend.countUnder("variants/")).toBe(before + 1);
    expect(originalKeyFor(webp)).toBe(`originals/${sha256Hex(webp)}`);
  });

  it("leaves no object behind when the upload stream fails", async () => {
    await expect(storage.put("originals/half-written", failingStream(Buffer.alloc(4096, 1)), "image/jpeg")).rejects.toThrow(
      /client went away/,
    );
    expect(await storage.get("originals/half-written")).toBeNull();
    expect(backend.strayTempFiles()).toBe(0);
  });

  it("refuses keys that could escape or are ambiguous", async () => {
    for (const key of ["", "../escape", "variants/../../etc/passwd", "/absolute", "a//b", "trailing/", ".hidden", "back\\slash", "sp ace"]) {
      await expect(storage.put(key, Buffer.from("x"), "text/plain"), key).rejects.toBeInstanceOf(InvalidObjectKey);
      await expect(storage.get(key), key).rejects.toBeInstanceOf(InvalidObjectKey);
      await expect(storage.delete(key), key).rejects.toBeInstanceOf(InvalidObjectKey);
    }
  });
});

describe("createObjectStorage", () => {
  let server: TestS3Server;
  beforeAll(async () => {
    server = await startS3Server("chosen-bucket");
  });
  afterAll(async () => server?.stop());

  it("uses the bucket when all four settings are given", async () => {
    const storage = createObjectStorage({
      OBJECT_STORAGE_ENDPOINT: server.endpoint,
      OBJECT_STORAGE_BUCKET: server.bucket,
      OBJECT_STORAGE_ACCESS_KEY_ID: server.accessKeyId,
      OBJECT_STORAGE_SECRET_ACCESS_KEY: server.secretAccessKey,
      PHOTO_STORAGE_DIR: "/nonexistent/ignored",
    });
    try {
      expect(storage.kind).toBe("s3");
      await storage.put("originals/chosen", Buffer.from("in the bucket"), "image/png");
      expect(await storage.head("originals/chosen")).toEqual({ contentLength: 13, contentType: "image/png" });
    } finally {
      await storage.close();
    }
  });

  it("uses the local directory when none is given", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "ass-photos-choose-"));
    try {
      const storage = createObjectStorage({ PHOTO_STORAGE_DIR: dir, OBJECT_STORAGE_REGION: "eu-west-1" });
      expect(storage.kind).toBe("local");
      await storage.put("originals/chosen", Buffer.from("on disk"), "image/png");
      expect(readdirSync(path.join(dir, "objects", "originals"))).toEqual(["chosen"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses some but not all of the four settings, naming a missing one", () => {
    const partial = () => createObjectStorage({ OBJECT_STORAGE_ENDPOINT: server.endpoint, OBJECT_STORAGE_BUCKET: "b", OBJECT_STORAGE_ACCESS_KEY_ID: " " });
    expect(partial).toThrow(ConfigError);
    expect(partial).toThrow(/OBJECT_STORAGE_ACCESS_KEY_ID/);
  });

  it("reports a missing bucket as an error, not as a missing object", async () => {
    const storage = new S3ObjectStorage({
      endpoint: server.endpoint,
      bucket: "no-such-bucket",
      accessKeyId: server.accessKeyId,
      secretAccessKey: server.secretAccessKey,
    });
    try {
      await expect(storage.get("originals/anything")).rejects.toThrow(/bucket/i);
    } finally {
      await storage.close();
    }
  });
});
