import { ConfigError } from "../config.js";
import { LocalObjectStorage } from "./local.js";
import type { ObjectStorage } from "./object-storage.js";
import { S3ObjectStorage } from "./s3.js";

export { LocalObjectStorage } from "./local.js";
export { S3ObjectStorage, DEFAULT_S3_REGION, type S3StorageConfig } from "./s3.js";
export {
  assertValidKey,
  InvalidObjectKey,
  readAll,
  type ObjectInfo,
  type ObjectStorage,
  type StoredObject,
} from "./object-storage.js";
export * from "./keys.js";

/** The settings that choose and configure photo storage; the API's config has these names. */
export interface ObjectStorageSettings {
  OBJECT_STORAGE_ENDPOINT?: string | undefined;
  OBJECT_STORAGE_BUCKET?: string | undefined;
  OBJECT_STORAGE_ACCESS_KEY_ID?: string | undefined;
  OBJECT_STORAGE_SECRET_ACCESS_KEY?: string | undefined;
  OBJECT_STORAGE_REGION?: string | undefined;
  PHOTO_STORAGE_DIR?: string | undefined;
}

export const DEFAULT_PHOTO_STORAGE_DIR = ".data/photos";

const s3Settings = [
  "OBJECT_STORAGE_ENDPOINT",
  "OBJECT_STORAGE_BUCKET",
  "OBJECT_STORAGE_ACCESS_KEY_ID",
  "OBJECT_STORAGE_SECRET_ACCESS_KEY",
] as const;

const isSet = (value: string | undefined): value is string => value !== undefined && value.trim() !== "";

/**
 * S3 when all four OBJECT_STORAGE_* settings are given, the local directory
 * when none is. Some but not all is a mistake that would quietly keep photos
 * on one machine's disk, so it throws a ConfigError naming a missing one.
 */
export function createObjectStorage(settings: ObjectStorageSettings): ObjectStorage {
  const missing = s3Settings.filter((name) => !isSet(settings[name]));
  if (missing.length === 0) {
    return new S3ObjectStorage({
      endpoint: settings.OBJECT_STORAGE_ENDPOINT!,
      bucket: settings.OBJECT_STORAGE_BUCKET!,
      accessKeyId: settings.OBJECT_STORAGE_ACCESS_KEY_ID!,
      secretAccessKey: settings.OBJECT_STORAGE_SECRET_ACCESS_KEY!,
      ...(isSet(settings.OBJECT_STORAGE_REGION) ? { region: settings.OBJECT_STORAGE_REGION } : {}),
    });
  }
  if (missing.length < s3Settings.length) {
    const given = s3Settings.filter((name) => !missing.includes(name));
    throw new ConfigError(missing[0]!, `is required when ${given.join(", ")} ${given.length === 1 ? "is" : "are"} set`);
  }
  return new LocalObjectStorage(isSet(settings.PHOTO_STORAGE_DIR) ? settings.PHOTO_STORAGE_DIR : DEFAULT_PHOTO_STORAGE_DIR);
}
