import type { Readable } from "node:stream";

/** What a stored object is, without its bytes. */
export interface ObjectInfo {
  contentLength: number;
  contentType: string;
}

/** A stored object: the caller must consume or destroy `body`. */
export interface StoredObject extends ObjectInfo {
  body: Readable;
}

/**
 * The one interface photos use for bytes at rest, so the S3 bucket of a
 * deployment and the local directory of a developer's machine behave alike.
 */
export interface ObjectStorage {
  readonly kind: "s3" | "local";
  /** Stores (or replaces) the object; it is visible whole or not at all. */
  put(key: string, body: Buffer | Readable, contentType: string): Promise<void>;
  /** The object, or null when no object has that key. */
  get(key: string): Promise<StoredObject | null>;
  /** Length and type, or null when no object has that key. */
  head(key: string): Promise<ObjectInfo | null>;
  exists(key: string): Promise<boolean>;
  /** Removes the object; a key with no object is not an error. */
  delete(key: string): Promise<void>;
  /** Releases connections; the storage is unusable afterwards. */
  close(): Promise<void>;
}

export class InvalidObjectKey extends Error {
  constructor(readonly key: string) {
    super(`invalid object key ${JSON.stringify(key.slice(0, 100))}`);
    this.name = "InvalidObjectKey";
  }
}

// A segment may not start with a dot, which rules out "." and ".." (and hidden files).
const keySegment = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/**
 * Keys are slash-separated segments of [A-Za-z0-9._-], so a key can never
 * name a path outside the local directory and means the same on every backend.
 */
export function assertValidKey(key: string): void {
  if (key.length === 0 || key.length > 512) throw new InvalidObjectKey(key);
  for (const segment of key.split("/")) {
    if (!keySegment.test(segment)) throw new InvalidObjectKey(key);
  }
}

/** Reads a stream whole; for photo-sized objects (the upload limit is 10 MiB). */
export async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}
