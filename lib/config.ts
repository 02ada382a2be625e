import { isIP } from "node:net";
import { z } from "zod";

/**
 * Configuration is parsed once in each process's main.ts and passed down,
 * frozen. Nothing reads process.env anywhere else.
 */

export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(`${setting}: ${message}`);
    this.name = "ConfigError";
  }
}

const listenAddr = z
  .string()
  .regex(/^[^:\s]*:\d{1,5}$/, "expected host:port or :port")
  .transform((value) => {
    const at = value.lastIndexOf(":");
    const host = value.slice(0, at) || "0.0.0.0";
    return { host, port: Number(value.slice(at + 1)) };
  });

export type ListenAddr = z.output<typeof listenAddr>;

/**
 * Fills the unset listen addresses of a process: loopback in development,
 * where the auth bypass may be on, every interface elsewhere. A set value,
 * `:port` included, is taken as written.
 */
const withListenDefaults = <T extends z.ZodType>(defaults: Record<string, number>, schema: T) =>
  z.preprocess((input) => {
    const env = { ...(input as Env) };
    const host = env.API_ENV === "development" ? "127.0.0.1" : "0.0.0.0";
    for (const [setting, port] of Object.entries(defaults)) env[setting] ??= `${host}:${port}`;
    return env;
  }, schema);

const boolString = z
  .enum(["true", "false", "1", "0", ""])
  .default("false")
  .transform((v) => v === "true" || v === "1");

const csv = z
  .string()
  .default("")
  .transform((v) =>
    v
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  );

/**
 * An optional setting where an empty or blank value counts as unset: `SECRET=`
 * in a deployment file must never pass for a configured secret.
 */
const optionalSetting = <T extends z.ZodType<string | undefined>>(schema: T) =>
  z.preprocess((value) => (typeof value === "string" && value.trim() === "" ? undefined : value), schema.optional());

/** An IPv4 or IPv6 address, or one with a /prefix in range for its family. */
export function isAddressOrCidr(entry: string): boolean {
  const slash = entry.indexOf("/");
  const family = isIP(slash < 0 ? entry : entry.slice(0, slash));
  if (family === 0) return false;
  if (slash < 0) return true;
  const prefix = entry.slice(slash + 1);
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

const cidrList = csv.superRefine((entries, ctx) => {
  for (const entry of entries) {
    if (!isAddressOrCidr(entry)) ctx.addIssue({ code: "custom", message: `"${entry}" is not an IP address or CIDR` });
  }
});

const databaseUrl = z.string().trim().min(1);

/**
 * Signs the one-click unsubscribe links of alert emails (lib/alert-unsubscribe.ts):
 * the notifier signs, the API checks. Required outside development; there, a
 * fixed value is used when it is unset, so a dev stack's links work.
 */
export const DEVELOPMENT_UNSUBSCRIBE_SECRET = "development-only-alert-unsubscribe-secret";
const alertUnsubscribeSecret = optionalSetting(z.string().min(32, "must be at least 32 characters"));
/** One NATS URL, or several comma-separated (the nodes of a cluster); every entry must be non-empty. */
const natsUrl = z
  .string()
  .trim()
  .min(1)
  .refine((v) => v.split(",").every((s) => s.trim().length > 0), "expected one URL or several, comma-separated");

/** The stream's replicas: 1 on one server, 3 on a three-node cluster (JetStream allows at most 5). */
const natsReplicas = z.coerce.number().int().min(1).max(5).default(1);

/** Days an open report lives after its creation or last renewal (contract: REPORT_TTL_DAYS, default 30). */
const reportTtlDays = z.coerce.number().int().min(1).max(3650).default(30);

const logging = {
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  LOG_PRETTY: boolString,
};

const common = {
  API_ENV: z.enum(["development", "test", "production"]).default("production"),
  DATABASE_URL: databaseUrl,
  NATS_URL: natsUrl,
  NATS_STREAM: z.string().regex(/^[A-Za-z0-9_-]+$/).default("EVENTS"),
  NATS_REPLICAS: natsReplicas,
  ...logging,
  PROBLEM_BASE_URL: z.string().url().default("https://problems.animal-safety.example"),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
};

/**
 * Photo storage, read by the API (uploads, serving) and the notifier
 * (processing, deleting): an S3-compatible bucket when the four
 * OBJECT_STORAGE_* are set, else the local PHOTO_STORAGE_DIR (development).
 * lib/storage's createObjectStorage takes these names.
 */
const objectStorage = {
  OBJECT_STORAGE_ENDPOINT: optionalSetting(z.string()),
  OBJECT_STORAGE_BUCKET: optionalSetting(z.string()),
  OBJECT_STORAGE_ACCESS_KEY_ID: optionalSetting(z.string()),
  OBJECT_STORAGE_SECRET_ACCESS_KEY: optionalSetting(z.string()),
  OBJECT_STORAGE_REGION: optionalSetting(z.string()),
  PHOTO_STORAGE_DIR: optionalSetting(z.string()),
};

/**
 * Photos in the API. Uploads (api/photos/upload-slots.ts): each one being read
 * holds up to 10 MiB in memory, so at most CONCURRENCY are read at once; the
 * rest wait for a slot up to WAIT_MS (then 503), and a body that has not
 * arrived BODY_TIMEOUT_MS after its reading began is cut off (408).
 */
const apiPhotos = {
  API_PHOTO_UPLOAD_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(3),
  API_PHOTO_UPLOAD_WAIT_MS: z.coerce.number().int().min(0).max(300_000).default(30_000),
  API_PHOTO_UPLOAD_BODY_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(120_000),
  /** Served variants kept in memory (api/photos/variant-cache.ts); 0 keeps none. */
  API_PHOTO_CACHE_BYTES: z.coerce.number().int().min(0).max(1024 * 1024 * 1024).default(16 * 1024 * 1024),
};

const objectStorageCredentials = [
  "OBJECT_STORAGE_ENDPOINT",
  "OBJECT_STORAGE_BUCKET",
  "OBJECT_STORAGE_ACCESS_KEY_ID",
  "OBJECT_STORAGE_SECRET_ACCESS_KEY",
] as const;

/** Some but not all four credentials would quietly keep photos on one machine's disk: refused, naming a missing one. */
function checkObjectStorage(config: Partial<Record<(typeof objectStorageCredentials)[number], string | undefined>>): void {
  const missing = objectStorageCredentials.filter((setting) => config[setting] === undefined);
  if (missing.length > 0 && missing.length < objectStorageCredentials.length) {
    const given = objectStorageCredentials.filter((setting) => !missing.includes(setting));
    throw new ConfigError(missing[0]!, `is required when ${given.join(", ")} ${given.length === 1 ? "is" : "are"} set`);
  }
}

const apiSchema = withListenDefaults({ API_HTTP_ADDR: 8080 }, z.object({
  ...common,
  API_HTTP_ADDR: listenAddr,
  API_PUBLIC_BASE_URL: z.string().url().default("http://localhost:8080"),
  AUTH_JWKS_URL: optionalSetting(z.string().url()),
  AUTH_ISSUER: optionalSetting(z.string()),
  AUTH_AUDIENCE: optionalSetting(z.string()),
  AUTH_ROLES_CLAIM: z.string().min(1).default("roles"),
  API_CORS_ORIGINS: csv,
  ...objectStorage,
  API_TRUSTED_PROXY_CIDRS: cidrList,
  API_DEV_AUTH_BYPASS: boolString,
  API_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(10_485_760).default(65_536),
  ...apiPhotos,
  REPORT_TTL_DAYS: reportTtlDays,
  ALERT_UNSUBSCRIBE_SECRET: alertUnsubscribeSecret,
}));

/**
 * The process's scheduling niceness (0–19): a background process sharing a
 * machine with the API lowers its own priority so the API's requests get the
 * cores first (bench/README.md: nice 10 held 2–3 times the creates/s).
 */
const niceValue = z.coerce.number().int().min(0).max(19).default(0);

const relaySchema = withListenDefaults({ RELAY_HEALTH_ADDR: 8081 }, z.object({
  ...common,
  RELAY_HEALTH_ADDR: listenAddr,
  RELAY_POLL_INTERVAL_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  RELAY_RETRY_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  RELAY_PUBLISH_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  RELAY_LANES: z.coerce.number().int().min(1).max(16).default(4),
  RELAY_NICE: niceValue,
  OUTBOX_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(7),
  // The relay runs the report lifetime job, which dates reports from before lifetimes existed.
  REPORT_TTL_DAYS: reportTtlDays,
}));

const notifierSchema = withListenDefaults({ NOTIFIER_HEALTH_ADDR: 8085 }, z.object({
  ...common,
  NOTIFIER_HEALTH_ADDR: listenAddr,
  SMTP_URL: optionalSetting(z.string().url()),
  SMTP_FROM: z.string().min(3).default("Animal Safety <no-reply@animal-safety.example>"),
  NOTIFIER_CONSUMER_NAME: z.string().regex(/^[A-Za-z0-9_-]+$/).default("notifier"),
  NOTIFIER_WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(5),
  /** Alert fan-out batches at once, on a runner of their own: each keeps a Postgres backend busy while it runs. */
  NOTIFIER_FANOUT_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(1),
  /** The share of its time a fan-out slot spends running batches; it rests the remainder, leaving the machine to the API. */
  NOTIFIER_FANOUT_DUTY: z.coerce.number().min(0.05).max(1).default(1),
  NOTIFIER_NICE: niceValue,
  NOTIFIER_ACK_WAIT_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
  NOTIFIER_CONSUME_CONCURRENCY: z.coerce.number().int().min(1).max(500).default(32),
  /** Where the API is reached from outside: alert emails' unsubscribe links point there. */
  API_PUBLIC_BASE_URL: z.string().url().default("http://localhost:8080"),
  ALERT_UNSUBSCRIBE_SECRET: alertUnsubscribeSecret,
  /** Photo processing jobs at once: each decodes up to a 1600 px raster (about 10 MB) besides the original. */
  NOTIFIER_PHOTO_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(2),
  ...objectStorage,
}));

/** `api migrate …` and the operator tasks: a database and, for migrate, a logger. */
const databaseToolSchema = z.object({ DATABASE_URL: databaseUrl, ...logging });

/** Operator tasks that also publish to the stream (tasks/republish-outbox.ts). */
const busToolSchema = z.object({
  DATABASE_URL: databaseUrl,
  NATS_URL: natsUrl,
  NATS_STREAM: z.string().regex(/^[A-Za-z0-9_-]+$/).default("EVENTS"),
  NATS_REPLICAS: natsReplicas,
  RELAY_PUBLISH_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  ...logging,
});

// The secret is always set once loaded: required outside development, defaulted in it.
export type ApiConfig = Readonly<z.output<typeof apiSchema> & { ALERT_UNSUBSCRIBE_SECRET: string }>;
export type RelayConfig = Readonly<z.output<typeof relaySchema>>;
export type NotifierConfig = Readonly<z.output<typeof notifierSchema> & { ALERT_UNSUBSCRIBE_SECRET: string }>;
export type DatabaseToolConfig = Readonly<z.output<typeof databaseToolSchema>>;
export type BusToolConfig = Readonly<z.output<typeof busToolSchema>>;

function parseWith<T extends z.ZodType>(schema: T, env: Env): z.output<T> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const setting = String(issue.path[0] ?? "config");
    const raw = env[setting];
    throw new ConfigError(setting, raw === undefined ? "is required" : raw.trim() === "" ? "is empty" : issue.message);
  }
  return Object.freeze(result.data) as z.output<T>;
}

const securitySensitiveApiSettings = [
  "AUTH_JWKS_URL",
  "AUTH_ISSUER",
  "AUTH_AUDIENCE",
  "API_CORS_ORIGINS",
  ...objectStorageCredentials,
] as const;

export function loadApiConfig(env: Env): ApiConfig {
  const config = parseWith(apiSchema, env);
  if (config.API_DEV_AUTH_BYPASS && config.API_ENV !== "development") {
    throw new ConfigError("API_DEV_AUTH_BYPASS", "is only allowed when API_ENV=development");
  }
  if (config.API_ENV !== "development") {
    for (const setting of securitySensitiveApiSettings) {
      const value = config[setting];
      // Blank strings were already turned into "unset" by the schema; an empty list is unset too.
      if (value === undefined || value === "" || (Array.isArray(value) && value.length === 0)) {
        throw new ConfigError(setting, `is required when API_ENV=${config.API_ENV}`);
      }
    }
  }
  checkObjectStorage(config);
  return withUnsubscribeSecret(config);
}

/** Outside development a missing ALERT_UNSUBSCRIBE_SECRET fails; in development the fixed value stands in. */
function withUnsubscribeSecret<T extends { API_ENV: string; ALERT_UNSUBSCRIBE_SECRET?: string | undefined }>(
  config: T,
): T & { ALERT_UNSUBSCRIBE_SECRET: string } {
  if (config.ALERT_UNSUBSCRIBE_SECRET !== undefined) return config as T & { ALERT_UNSUBSCRIBE_SECRET: string };
  if (config.API_ENV !== "development") {
    throw new ConfigError("ALERT_UNSUBSCRIBE_SECRET", `is required when API_ENV=${config.API_ENV}`);
  }
  return Object.freeze({ ...config, ALERT_UNSUBSCRIBE_SECRET: DEVELOPMENT_UNSUBSCRIBE_SECRET });
}

export function loadRelayConfig(env: Env): RelayConfig {
  return parseWith(relaySchema, env);
}

/** The notifier processes and deletes photos: outside development it needs the bucket as the API does. */
export function loadNotifierConfig(env: Env): NotifierConfig {
  const config = parseWith(notifierSchema, env);
  if (config.API_ENV !== "development") {
    for (const setting of objectStorageCredentials) {
      if (config[setting] === undefined) throw new ConfigError(setting, `is required when API_ENV=${config.API_ENV}`);
    }
  }
  checkObjectStorage(config);
  return withUnsubscribeSecret(config);
}

export function loadDatabaseToolConfig(env: Env): DatabaseToolConfig {
  return parseWith(databaseToolSchema, env);
}

export function loadBusToolConfig(env: Env): BusToolConfig {
  return parseWith(busToolSchema, env);
}
