import { randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { assertValidKey, InvalidObjectKey, type ObjectInfo, type ObjectStorage, type StoredObject } from "./object-storage.js";

const DEFAULT_CONTENT_TYPE = "application/octet-stream";

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/**
 * Objects as files under a directory, for development without an S3 server.
 * Layout: objects/<key> holds the bytes, meta/<key>.json the content type,
 * tmp/ the half-written files that a rename publishes whole.
 */
export class LocalObjectStorage implements ObjectStorage {
  readonly kind = "local" as const;
  readonly directory: string;
  private readonly objectsDir: string;
  private readonly metaDir: string;
  private readonly tmpDir: string;

  constructor(directory: string) {
    this.directory = path.resolve(directory);
    this.objectsDir = path.join(this.directory, "objects");
    this.metaDir = path.join(this.directory, "meta");
    this.tmpDir = path.join(this.directory, "tmp");
  }

  async put(key: string, body: Buffer | Readable, contentType: string): Promise<void> {
    const { file, meta } = this.pathsOf(key);
    // Type first: once the bytes are visible, their type is too.
    await this.writeAtomically(meta, Buffer.from(JSON.stringify({ contentType })));
    await this.writeAtomically(file, body);
  }

  async get(key: string): Promise<StoredObject | null> {
    const { file, meta } = this.pathsOf(key);
    let handle;
    try {
      handle = await open(file, "r");
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    try {
      // Size from the open file, so a concurrent replace or delete cannot make it disagree with the stream.
      const { size } = await handle.stat();
      const contentType = await this.readContentType(meta);
      return { body: handle.createReadStream(), contentLength: size, contentType };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async head(key: string): Promise<ObjectInfo | null> {
    const { file, meta } = this.pathsOf(key);
    try {
      const { size } = await stat(file);
      return { contentLength: size, contentType: await this.readContentType(meta) };
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.head(key)) !== null;
  }

  async delete(key: string): Promise<void> {
    const { file, meta } = this.pathsOf(key);
    await rm(file, { force: true });
    await rm(meta, { force: true });
  }

  async close(): Promise<void> {}

  private pathsOf(key: string): { file: string; meta: string } {
    assertValidKey(key);
    const file = path.join(this.objectsDir, ...key.split("/"));
    // assertValidKey already forbids "..": this guards against a future change to it.
    if (!file.startsWith(this.objectsDir + path.sep)) throw new InvalidObjectKey(key);
    return { file, meta: path.join(this.metaDir, ...key.split("/")) + ".json" };
  }

  private async readContentType(meta: string): Promise<string> {
    try {
      const parsed = JSON.parse(await readFile(meta, "utf8")) as { contentType?: unknown };
      return typeof parsed.contentType === "string" ? parsed.contentType : DEFAULT_CONTENT_TYPE;
    } catch (error) {
      if (isMissing(error)) return DEFAULT_CONTENT_TYPE;
      throw error;
    }
  }

  /** Temp file in the same file system, flushed, then renamed: readers see the old or the new file whole. */
  private async writeAtomically(target: string, body: Buffer | Readable): Promise<void> {
    await mkdir(this.tmpDir, { recursive: true });
    await mkdir(path.dirname(target), { recursive: true });
    const temp = path.join(this.tmpDir, randomUUID());
    try {
      if (Buffer.isBuffer(body)) {
        await writeFile(temp, body, { flag: "wx", flush: true });
      } else {
        await pipeline(body, createWriteStream(temp, { flags: "wx", flush: true }));
      }
      await rename(temp, target);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }
}
