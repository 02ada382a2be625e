import { Readable } from "node:stream";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { assertValidKey, readAll, type ObjectInfo, type ObjectStorage, type StoredObject } from "./object-storage.js";

export interface S3StorageConfig {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Defaults to us-east-1, which S3-compatible servers accept whatever their own region. */
  region?: string;
}

export const DEFAULT_S3_REGION = "us-east-1";

// Only a missing key: NoSuchBucket (also a 404) is a misconfiguration and must surface.
// A HEAD has no error body, so the SDK names any 404 of it "NotFound".
function isNotFound(error: unknown): boolean {
  return error instanceof S3ServiceException && (error.name === "NoSuchKey" || error.name === "NotFound");
}

/** An S3-compatible bucket, addressed path-style so MinIO, s3rver and others work as AWS does. */
export class S3ObjectStorage implements ObjectStorage {
  readonly kind = "s3" as const;
  readonly bucket: string;
  private readonly client: S3Client;

  constructor(config: S3StorageConfig) {
    this.bucket = config.bucket;
    this.client = new S3Client({
      endpoint: config.endpoint,
      region: config.region ?? DEFAULT_S3_REGION,
      forcePathStyle: true,
      credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
      // Newer SDKs add CRC checksums by default; many S3-compatible servers reject or mangle them.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      // Fail fast on an unreachable endpoint; socketTimeout is idle time, so a slow reader of a body is not cut off.
      requestHandler: { connectionTimeout: 5_000, socketTimeout: 30_000 },
    });
  }

  async put(key: string, body: Buffer | Readable, contentType: string): Promise<void> {
    assertValidKey(key);
    // A stream of unknown length would need a multipart upload; photo objects are at most 10 MiB, so buffer them.
    const bytes = Buffer.isBuffer(body) ? body : await readAll(body);
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: bytes, ContentType: contentType, ContentLength: bytes.length }),
    );
  }

  async get(key: string): Promise<StoredObject | null> {
    assertValidKey(key);
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      const body = out.Body;
      if (!(body instanceof Readable)) throw new Error("S3 GetObject returned no readable body");
      return {
        body,
        contentLength: out.ContentLength ?? 0,
        contentType: out.ContentType ?? "application/octet-stream",
      };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async head(key: string): Promise<ObjectInfo | null> {
    assertValidKey(key);
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { contentLength: out.ContentLength ?? 0, contentType: out.ContentType ?? "application/octet-stream" };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.head(key)) !== null;
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    // S3 answers 204 for a key with no object too; a 404 from a stricter server means the same.
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}
