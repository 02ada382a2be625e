import { isIP } from "node:net";
import { z } from "zod";
import { ipv6Groups } from "./client-address.js";
import { NEARBY_DELIVERY_BATCH } from "./alerts.js";
import { JOB_FAMILIES, type JobFamily } from "./job-families.js";
import { DELIVERY_BATCH_MAX } from "./notifications.js";
import { DEFAULT_DEADLINES_MS, DEFAULT_PUSH_ORIGIN_PAUSE_MS, PUSH_ORIGIN_TIMEOUTS_TO_PAUSE } from "./deadline.js";
import { isRegion } from "./sms/phone.js";

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

/**
 * Every setting carries a one-line `description` (zod's metadata) for
 * docs/configuration.md; a helper whose schema is a string turned into
 * something else by a transform also names what an operator writes, as
 * `valueType`.
 */
const listenAddr = z
  .string()
  .regex(/^[^:\s]*:\d{1,5}$/, "expected host:port or :port")
  .transform((value) => {
    const at = value.lastIndexOf(":");
    const host = value.slice(0, at) || "0.0.0.0";
    return { host, port: Number(value.slice(at + 1)) };
  })
  .meta({ valueType: "`host:port`, or `:port` for every interface" });

export type ListenAddr = z.output<typeof listenAddr>;

/**
 * The host of an unset listen address: loopback in development, where the auth
 * bypass may be on, every interface elsewhere.
 */
export const DEFAULT_LISTEN_HOSTS = { development: "127.0.0.1", otherwise: "0.0.0.0" } as const;

/** The environments a process runs in: any but development enforces the settings required in production. */
const ENVIRONMENTS = ["development", "test", "production"] as const;

/**
 * The API's environment setting. It configured all three processes before each
 * had its own (RELAY_ENV, NOTIFIER_ENV), so theirs fall back to it when unset.
 */
const API_ENV = "API_ENV";

/** A process's own environment setting: unset, it takes API_ENV (withProcessDefaults), then `production`. */
const environment = (description: string) => z.enum(ENVIRONMENTS).default("production").describe(description);

/** API_ENV as a process other than the API reads it: only when the process's own setting is unset. */
const apiEnvFallback = (own: string) =>
  z
    .enum(ENVIRONMENTS)
    .optional()
    .describe(`Read only when \`${own}\` is unset: the environment every process took before each had its own setting.`);

/**
 * A process's own environment setting, when unset, takes API_ENV's value; then
 * its unset listen addresses (setting → port) are filled on DEFAULT_LISTEN_HOSTS,
 * and in development its unset developmentFallbacks are filled in.
 * A set value, `:port` included, is taken as written.
 */
const withProcessDefaults = <T extends z.ZodType>(settings: ProcessSettings, schema: T) =>
  z.preprocess((input) => {
    const env = { ...(input as Env) };
    const own = settings.environment ?? API_ENV;
    env[own] ??= env[API_ENV];
    const host = env[own] === "development" ? DEFAULT_LISTEN_HOSTS.development : DEFAULT_LISTEN_HOSTS.otherwise;
    for (const [setting, port] of Object.entries(settings.listenDefaults)) if (port !== undefined) env[setting] ??= `${host}:${port}`;
    if (env[own] === "development") for (const [setting, value] of Object.entries(settings.developmentFallbacks)) env[setting] ??= value;
    return env;
  }, schema);

const boolString = z
  .enum(["true", "false", "1", "0", ""])
  .default("false")
  .transform((v) => v === "true" || v === "1")
  .meta({ valueType: "boolean: `true` or `1`, `false` or `0`" });

const csv = z
  .string()
  .default("")
  .transform((v) =>
    v
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  )
  .meta({ valueType: "comma-separated list" });

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

/** An address's bits (32 for IPv4, 128 for IPv6, a zone id dropped), for comparing blocks. */
function addressBits(address: string, family: 4 | 6): bigint {
  if (family === 4) return address.split(".").reduce((n, part) => (n << 8n) | BigInt(part), 0n);
  return ipv6Groups(address.split("%")[0]!).reduce((n, group) => (n << 16n) | BigInt(group), 0n);
}

/** Whether the blocks (each `prefix` bits of `bits`) together hold every address of a `width`-bit family. */
function coverEverything(blocks: { bits: bigint; prefix: number }[], width: number): boolean {
  const spans = blocks
    .map(({ bits, prefix }) => {
      const host = BigInt(width - prefix);
      const start = (bits >> host) << host;
      return { start, end: start + (1n << host) };
    })
    .sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  let next = 0n;
  for (const { start, end } of spans) {
    if (start > next) return false;
    if (end > next) next = end;
  }
  return next >= 1n << BigInt(width);
}

/**
 * The family whose every client a list of valid entries would trust, or
 * undefined. Matched as Fastify's proxy check (@fastify/proxy-addr) does: an
 * IPv4 client by the IPv4 entries and the IPv4-mapped IPv6 ones of /96 or
 * longer (::ffff:0:0/96 is 0.0.0.0/0), an IPv6 client by the other IPv6 ones.
 */
export function familyTrustedWhole(entries: readonly string[]): "IPv4" | "IPv6" | undefined {
  const v4: { bits: bigint; prefix: number }[] = [];
  const v6: { bits: bigint; prefix: number }[] = [];
  for (const entry of entries) {
    const [address = "", written] = entry.split("/");
    const family = isIP(address) === 4 ? 4 : 6;
    const bits = addressBits(address, family);
    const prefix = written === undefined ? (family === 4 ? 32 : 128) : Number(written);
    if (family === 4) v4.push({ bits, prefix });
    else if (bits >> 32n === 0xffffn && prefix >= 96) v4.push({ bits: bits & 0xffffffffn, prefix: prefix - 96 });
    else v6.push({ bits, prefix });
  }
  if (coverEverything(v4, 32)) return "IPv4";
  if (coverEverything(v6, 128)) return "IPv6";
  return undefined;
}

const cidrList = csv
  .superRefine((entries, ctx) => {
    for (const entry of entries) {
      if (!isAddressOrCidr(entry)) ctx.addIssue({ code: "custom", message: `"${entry}" is not an IP address or CIDR` });
    }
    // A list that trusts every client lets anyone set their own address in X-Forwarded-For, and with
    // it dodge every per-address limit; @fastify/proxy-addr also throws on a /0 when the app starts.
    const whole = entries.every(isAddressOrCidr) ? familyTrustedWhole(entries) : undefined;
    if (whole) {
      ctx.addIssue({ code: "custom", message: `trusts every ${whole} client: list only your proxies' addresses` });
    }
  })
  .meta({ valueType: "comma-separated IP addresses and CIDR blocks" });

const databaseUrl = z.string().trim().min(1).describe("Postgres connection string.");

/**
 * Signs the one-click unsubscribe links of alert emails (lib/alert-unsubscribe.ts):
 * the notifier signs, the API checks. Required outside development; there, a
 * fixed value is used when it is unset, so a dev stack's links work.
 */
export const DEVELOPMENT_UNSUBSCRIBE_SECRET = "development-only-alert-unsubscribe-secret";
const alertUnsubscribeSecret = optionalSetting(z.string().min(32, "must be at least 32 characters")).describe(
  "Key of the HMAC on alert emails' one-click unsubscribe links: the notifier signs, the API checks; the same value in both.",
);
/** Values that stand in for unset settings in development only. */
const developmentFallbacks = { ALERT_UNSUBSCRIBE_SECRET: DEVELOPMENT_UNSUBSCRIBE_SECRET } as const;

/** A total deadline of an outbound call, in ms (lib/deadline.ts); short values are for tests. */
function deadlineMs(byDefault: number) {
  return z.coerce.number().int().min(100).max(600_000).default(byDefault);
}

/**
 * Web Push (contract part 3, "Push to phones"): the VAPID key pair (RFC 8292)
 * that signs every push request, and the hosts a subscription's endpoint may
 * use over plain http. In development, unset keys are made once and kept in
 * `.data/vapid-keys.json` (lib/push.ts).
 */
const vapidPublicKey = optionalSetting(
  z.string().regex(/^[A-Za-z0-9_-]{87}$/, "must be a 65-byte uncompressed P-256 public key in base64url (87 characters)"),
).describe(
  "The VAPID public key (base64url, 65-byte uncompressed P-256 point): browsers subscribe with it (`GET /v1/push/public-key`) and " +
    "push services check the notifier's signatures with it. The same value in the API and the notifier. In development, when unset, " +
    "a pair made once and kept in `.data/vapid-keys.json`.",
);
const pushEndpointAllow = csv.describe(
  "Host names a push subscription's endpoint may use over plain http and on any address, loopback included: for tests only. " +
    "Any other endpoint must be https, and outside development not on a private, loopback, link-local or metadata address.",
);
const webPushNotifier = {
  VAPID_PUBLIC_KEY: vapidPublicKey,
  VAPID_PRIVATE_KEY: optionalSetting(z.string().regex(/^[A-Za-z0-9_-]{43}$/, "must be a 32-byte P-256 private key in base64url (43 characters)")).describe(
    "The VAPID private key (base64url, 32 bytes) the notifier signs push requests with; the pair of `VAPID_PUBLIC_KEY`.",
  ),
  VAPID_SUBJECT: optionalSetting(z.string().regex(/^(mailto:|https:\/\/)\S+$/, "must be a mailto: or https: URL")).describe(
    "The VAPID `sub` claim: a `mailto:` or `https:` contact push services can reach the operator at.",
  ),
  PUSH_ENDPOINT_ALLOW: pushEndpointAllow,
  PUSH_DEADLINE_MS: deadlineMs(DEFAULT_DEADLINES_MS.push).describe(
    "The total time one push request may take, from connecting to the last byte of the push service's answer; past it the " +
      "request is cut and counts as a timeout.",
  ),
  PUSH_ORIGIN_PAUSE_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(3_600_000)
    .default(DEFAULT_PUSH_ORIGIN_PAUSE_MS)
    .describe(
      `How long a push origin (scheme, host and port) that timed out ${PUSH_ORIGIN_TIMEOUTS_TO_PAUSE} times in a row is paused: ` +
        "its deliveries wait for the pause's end without holding a job slot or counting an attempt.",
    ),
};

/**
 * SMS (contract part 4, "SMS"): a provider speaking the Twilio-compatible REST
 * API. With the account, token and number unset there is no `sms` channel;
 * set, all three are needed, in every environment. The API needs only the
 * token (it checks the provider's webhook signatures with it) and the region.
 */
const smsAuthToken = optionalSetting(z.string().min(8)).describe(
  "The SMS provider's auth token: the password of its REST API (with `SMS_ACCOUNT_SID`) and the key of its webhooks' " +
    "`X-Twilio-Signature`. The same value in the API and the notifier; unset, the API refuses every SMS webhook with 403.",
);
const smsDefaultRegion = optionalSetting(
  z
    .string()
    .trim()
    .toUpperCase()
    .refine(isRegion, "must be an ISO 3166 alpha-2 region libphonenumber knows, such as DE or US"),
).describe(
  "The region (ISO 3166 alpha-2) of a phone number written without its country code, in `PUT /v1/me/phone` and a finder's " +
    "fromContact. Unset: only numbers with their country code (+49…) are read.",
);
const smsCredentials = ["SMS_ACCOUNT_SID", "SMS_AUTH_TOKEN", "SMS_FROM"] as const;
const smsNotifier = {
  SMS_API_BASE_URL: z
    .string()
    .url()
    .default("https://api.twilio.com")
    .describe("The SMS provider's REST API: texts are POSTed to `{base}/2010-04-01/Accounts/{SMS_ACCOUNT_SID}/Messages.json`."),
  SMS_ACCOUNT_SID: optionalSetting(z.string().regex(/^[A-Za-z0-9]{2,64}$/, "must be the provider's account id (letters and digits)")).describe(
    "The SMS provider's account id: the user of its REST API's basic auth and part of its URL. With `SMS_AUTH_TOKEN` and " +
      "`SMS_FROM`, turns the `sms` channel on.",
  ),
  SMS_AUTH_TOKEN: smsAuthToken,
  SMS_FROM: optionalSetting(z.string().regex(/^\+[1-9]\d{6,14}$/, "must be a number in E.164 form, such as +4915112345678")).describe(
    "The service's number, in E.164 form: every text is sent from it, and replies come to it.",
  ),
  SMS_DEFAULT_REGION: smsDefaultRegion,
  SMS_DAILY_LIMIT_PER_RECIPIENT: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(10)
    .describe("Texts one number gets in a UTC day; past it a text dead-letters (`sms budget exhausted`) and the in-app notification stands."),
  SMS_DAILY_SEGMENTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000_000)
    .default(1000)
    .describe("Segments the whole service sends in a UTC day; past it a text dead-letters (`sms budget exhausted`)."),
};

/** One NATS URL, or several comma-separated (the nodes of a cluster); every entry must be non-empty. */
const natsUrl = z
  .string()
  .trim()
  .min(1)
  .refine((v) => v.split(",").every((s) => s.trim().length > 0), "expected one URL or several, comma-separated")
  .meta({ valueType: "URL, or several comma-separated", description: "The NATS server, or the nodes of a cluster." });

const natsStream = z
  .string()
  .regex(/^[A-Za-z0-9_-]+$/)
  .default("EVENTS")
  .describe("The JetStream stream of the events (subjects `events.>`).");

/** The stream's replicas: 1 on one server, 3 on a three-node cluster (JetStream allows at most 5). */
const natsReplicas = z.coerce
  .number()
  .int()
  .min(1)
  .max(5)
  .default(1)
  .describe("The stream's replicas: 1 on one server, 3 on a three-node cluster.");

/** Days an open report lives after its creation or last renewal (contract: REPORT_TTL_DAYS, default 30). */
const reportTtlDays = z.coerce.number().int().min(1).max(3650).default(30);

const relayPublishTimeoutMs = z.coerce
  .number()
  .int()
  .min(100)
  .max(60_000)
  .default(5000)
  .describe("How long a publish waits for JetStream's acknowledgement.");

const apiPublicBaseUrl = z.string().url().default("http://localhost:8080");

const logging = {
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
    .default("info")
    .describe("The least severe level logged."),
  LOG_PRETTY: boolString.describe("Readable log lines instead of JSON (development)."),
};

const common = {
  DATABASE_URL: databaseUrl,
  NATS_URL: natsUrl,
  NATS_STREAM: natsStream,
  NATS_REPLICAS: natsReplicas,
  ...logging,
  PROBLEM_BASE_URL: z
    .string()
    .url()
    .default("https://problems.animal-safety.example")
    .describe("Base of the `type` URI of problem+json error bodies (the spec's {problem_base})."),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10).describe("Postgres connections per pool of the process."),
};

/**
 * Photo storage, read by the API (uploads, serving) and the notifier
 * (processing, deleting): an S3-compatible bucket when the four
 * OBJECT_STORAGE_* are set, else the local PHOTO_STORAGE_DIR (development).
 * lib/storage's createObjectStorage takes these names.
 */
const objectStorage = {
  OBJECT_STORAGE_ENDPOINT: optionalSetting(z.string()).describe("Endpoint of the S3-compatible photo bucket (path-style addressing)."),
  OBJECT_STORAGE_BUCKET: optionalSetting(z.string()).describe("The photo bucket's name."),
  OBJECT_STORAGE_ACCESS_KEY_ID: optionalSetting(z.string()).describe("Access key id for the photo bucket."),
  OBJECT_STORAGE_SECRET_ACCESS_KEY: optionalSetting(z.string()).describe("Secret access key for the photo bucket."),
  OBJECT_STORAGE_REGION: optionalSetting(z.string()).describe("The bucket's region (`us-east-1` when unset)."),
  PHOTO_STORAGE_DIR: optionalSetting(z.string()).describe(
    "The local photo directory used when no bucket is set (development); `.data/photos` when unset.",
  ),
};

/**
 * Photos in the API. Uploads (api/photos/upload-slots.ts): each one being read
 * holds up to 10 MiB in memory, so at most CONCURRENCY are read at once; one
 * takes its slot only once its photo's first 64 KiB have arrived, the rest
 * wait for a slot up to WAIT_MS (then 503), a body silent for IDLE_TIMEOUT_MS
 * or not arrived BODY_TIMEOUT_MS after its reading began (the wait for a slot
 * not counted) is cut off (408).
 */
const apiPhotos = {
  API_PHOTO_UPLOAD_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(3)
    .describe("Photo uploads read at once, each holding up to 10 MiB in memory."),
  API_PHOTO_UPLOAD_WAIT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(300_000)
    .default(30_000)
    .describe("How long an upload waits for a slot before 503."),
  API_PHOTO_UPLOAD_BODY_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(600_000)
    .default(120_000)
    .describe("How long an upload's body may take to arrive once its reading began (its wait for a slot not counted), before 408."),
  API_PHOTO_UPLOAD_IDLE_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(600_000)
    .default(10_000)
    .describe("How long an upload's body may send nothing, before its first bytes or between two, before 408."),
  /** Served variants kept in memory (api/photos/variant-cache.ts); 0 keeps none. */
  API_PHOTO_CACHE_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(1024 * 1024 * 1024)
    .default(16 * 1024 * 1024)
    .describe("Bytes of served photo variants kept in memory; 0 keeps none."),
};

const objectStorageCredentials = [
  "OBJECT_STORAGE_ENDPOINT",
  "OBJECT_STORAGE_BUCKET",
  "OBJECT_STORAGE_ACCESS_KEY_ID",
  "OBJECT_STORAGE_SECRET_ACCESS_KEY",
] as const;

/**
 * One process's (or tool's) settings and the rules about them that its schema
 * does not state. The loaders apply these rules, and scripts/configuration-docs.ts
 * renders the same data into docs/configuration.md, so the two cannot drift.
 */
export interface ProcessSettings<Shape extends z.ZodRawShape = z.ZodRawShape> {
  /** The heading of the process's section in docs/configuration.md. */
  readonly title: string;
  /** What runs with these settings, one line of markdown. */
  readonly runs: string;
  /** The settings: the z.object shape, before the listen-address defaults wrap it. */
  readonly shape: Shape;
  /**
   * The setting naming the process's environment (ENVIRONMENTS), which the rules
   * below go by: API_ENV for the API, RELAY_ENV and NOTIFIER_ENV for the others,
   * which fall back to API_ENV. The tools, which have no rules, leave it out.
   */
  readonly environment?: string;
  /** Listen addresses and the port of their default (DEFAULT_LISTEN_HOSTS). */
  readonly listenDefaults: { readonly [K in keyof Shape]?: number };
  /** Required whenever the environment is not development, checked in this order: unset, blank or an empty list fails. */
  readonly requiredOutsideDevelopment: readonly (keyof Shape & string)[];
  /** Boolean settings refused as true unless the environment is development. */
  readonly developmentOnly: readonly (keyof Shape & string)[];
  /** Values that stand in for unset settings in development. */
  readonly developmentFallbacks: { readonly [K in keyof Shape]?: string };
  /** Groups to set all together or not at all: some but not all would quietly keep photos on one machine's disk. */
  readonly allOrNone: readonly (readonly (keyof Shape & string)[])[];
}

// Here the environment must name a setting of the shape; ProcessSettings types it as a string, or the general type would not take this one.
const defineProcess = <Shape extends z.ZodRawShape>(
  settings: ProcessSettings<Shape> & { readonly environment?: keyof Shape & string },
): ProcessSettings<Shape> => settings;

const noRules = { listenDefaults: {}, requiredOutsideDevelopment: [], developmentOnly: [], developmentFallbacks: {}, allOrNone: [] };

const apiSettings = defineProcess({
  title: "API",
  runs: "The HTTP API: `npm run start:api`, `bin/api` or `bin/api serve`.",
  environment: API_ENV,
  shape: {
    [API_ENV]: environment(
      "The API's environment: any but `development` enforces the settings required in production. " +
        "The relay and the notifier take it when their own (`RELAY_ENV`, `NOTIFIER_ENV`) is unset.",
    ),
    ...common,
    API_HTTP_ADDR: listenAddr.describe("Where the HTTP server listens."),
    API_METRICS_ADDR: listenAddr.describe("Where the API's `/metrics` listens for Prometheus: its own port, never the public one."),
    API_PUBLIC_BASE_URL: apiPublicBaseUrl.describe("Where the API is reached from outside: the base of photo URLs and emergency QR links."),
    PUBLIC_BASE_URL: optionalSetting(z.string().url()).describe(
      "The base of the public links people share and print: share pages (`og:url`, `og:image`, canonical), flyers' QR codes and " +
        "short links. In development, when unset, `API_PUBLIC_BASE_URL`.",
    ),
    AUTH_JWKS_URL: optionalSetting(z.string().url()).describe("The identity provider's JWKS, which verifies bearer JWTs."),
    AUTH_ISSUER: optionalSetting(z.string()).describe("The `iss` a bearer JWT must carry."),
    AUTH_AUDIENCE: optionalSetting(z.string()).describe("The `aud` a bearer JWT must carry."),
    AUTH_ROLES_CLAIM: z.string().min(1).default("roles").describe("The JWT claim that holds the actor's roles."),
    API_CORS_ORIGINS: csv.describe("The origins CORS allows; none when empty."),
    APP_OIDC_CLIENT_ID: optionalSetting(z.string().trim().min(1).max(200)).describe(
      "The OpenID Connect client the app (`/app`) and the admin console (`/admin`) sign in with at `AUTH_ISSUER`: a public client " +
        "(authorization code with PKCE, no secret) whose redirect URIs are `{origin}/app/callback` and `{origin}/admin/callback`. " +
        "Unset: neither offers the provider's sign-in.",
    ),
    APP_OIDC_SCOPE: z
      .string()
      .trim()
      .regex(/^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/, "expected space-separated scope tokens")
      .refine((scope) => scope.split(" ").includes("openid"), "must include openid")
      .default("openid offline_access")
      .describe("The scopes the app and the console ask the provider for; `offline_access` gets a refresh token from most providers."),
    APP_OIDC_RESOURCE: optionalSetting(z.string().url()).describe(
      "An RFC 8707 resource indicator sent with the sign-in and token requests, for a provider that issues the API's access token " +
        "(audience `AUTH_AUDIENCE`) for a named resource. Unset: none is sent.",
    ),
    APP_MAP_TILE_URL: z
      .string()
      .url()
      .refine((url) => ["{z}", "{x}", "{y}"].every((part) => url.includes(part)), "must contain {z}, {x} and {y}")
      .refine((url) => /^https?:\/\//.test(url), "must be http or https")
      .default("https://tile.openstreetmap.org/{z}/{x}/{y}.png")
      .describe(
        "The app's map tiles, a Leaflet URL template (`{s}` optional). Its origin is the only other origin the app's content security policy allows (images).",
      ),
    APP_MAP_ATTRIBUTION: z
      .string()
      .trim()
      .min(1)
      .max(300)
      .default("© OpenStreetMap contributors")
      .describe("The attribution shown on the app's maps, as the tiles' licence asks."),
    ...objectStorage,
    API_TRUSTED_PROXY_CIDRS: cidrList.describe("Proxies whose `X-Forwarded-For` is trusted for the client's address; none when empty."),
    API_DEV_AUTH_BYPASS: boolString.describe(
      "Development only: `X-Debug-Actor` and `X-Debug-Roles` stand in for a JWT, with an in-memory authorization stub.",
    ),
    API_BODY_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(10_485_760)
      .default(65_536)
      .describe("The largest request body, in bytes (photo uploads have their own limit)."),
    API_REQUEST_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(1_000)
      .max(120_000)
      .default(30_000)
      .describe(
        "How long a request's body may take to arrive after its headers, before 408; the headers themselves get 10 s, or this if shorter. " +
          "Photo uploads have their own limits.",
      ),
    ...apiPhotos,
    API_JOBS_SUMMARY_MAX_AGE_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(60_000)
      .default(2_000)
      .describe(
        "How long GET /v1/admin/jobs/summary keeps its counts and shares them among requests (answered while recounted up to 5 times as long); " +
          "a retry or fail drops them. 0 counts on every request.",
      ),
    DATABASE_REPLICA_URL: optionalSetting(z.string().trim().min(1)).describe(
      "A streaming replica of `DATABASE_URL` (hot standby) for the public reads: the alerts search, the public report views, share " +
        "pages, flyers, sightings lists and photo variants. Unset: every read goes to `DATABASE_URL`. A server that is not in recovery " +
        "(the primary itself) is refused at start.",
    ),
    DATABASE_REPLICA_MAX_LAG_MS: z.coerce
      .number()
      .int()
      .min(1_500)
      .max(600_000)
      .default(2_000)
      .describe(
        "Past this lag (the age of the primary's heartbeat row as read on the replica, checked every 500 ms) the public reads go back " +
          "to `DATABASE_URL` until the replica catches up. The heartbeat is written every second, so the age includes up to 1 s of its period (hence at least 1,500).",
      ),
    DATABASE_NAMED_STATEMENTS: z
      .enum(["true", "false", "1", "0"])
      .default("true")
      .transform((v) => v === "true" || v === "1")
      .meta({ valueType: "boolean: `true` or `1`, `false` or `0`" })
      .describe(
        "Hot-path queries as named (prepared) statements, planned once per connection. `false` behind PgBouncer 1.18 in transaction " +
          "pooling, which keeps no prepared statements across transactions: each query is then parsed as an unnamed statement.",
      ),
    DATABASE_SESSION_SETTINGS: z
      .enum(["startup", "role"])
      .default("startup")
      .describe(
        "Where the API's connections get `statement_timeout` (10 s) and `jit=off`: `startup` sends them as startup parameters; " +
          "`role` sends none (PgBouncer refuses them) and relies on `alter role … set`, which the API checks at start.",
      ),
    REPORT_TTL_DAYS: reportTtlDays.describe("Days an open report lives after its creation or last renewal."),
    ALERT_UNSUBSCRIBE_SECRET: alertUnsubscribeSecret,
    EMAIL_VERIFICATION: z
      .enum(["required", "off"])
      .default("required")
      .describe(
        "`required`: a notification address gets email only after its confirmation link is followed. " +
          "`off`: an address gets email as soon as it is set, and no confirmation email is sent.",
      ),
    VAPID_PUBLIC_KEY: vapidPublicKey,
    PUSH_ENDPOINT_ALLOW: pushEndpointAllow,
    SMS_AUTH_TOKEN: smsAuthToken,
    SMS_DEFAULT_REGION: smsDefaultRegion,
    PARTNER_API_KEYS: csv.describe(
      "The partner API's integration keys, one per integrating program (shelter software): every `/partners` call carries one in " +
        "`x-api-key`. None set: every `/partners` call is 401.",
    ),
  },
  listenDefaults: { API_HTTP_ADDR: 8080, API_METRICS_ADDR: 9464 },
  requiredOutsideDevelopment: [
    "AUTH_JWKS_URL",
    "AUTH_ISSUER",
    "AUTH_AUDIENCE",
    "API_CORS_ORIGINS",
    ...objectStorageCredentials,
    "ALERT_UNSUBSCRIBE_SECRET",
    "PUBLIC_BASE_URL",
    "VAPID_PUBLIC_KEY",
  ],
  developmentOnly: ["API_DEV_AUTH_BYPASS"],
  // `npm run dev` sends no confirmation email: an address is used as soon as it is set.
  developmentFallbacks: { ...developmentFallbacks, EMAIL_VERIFICATION: "off" },
  allOrNone: [objectStorageCredentials],
});

/**
 * The process's scheduling niceness (0–19): a background process sharing a
 * machine with the API lowers its own priority so the API's requests get the
 * cores first (`npm run bench:write-path`, its equal-priority step: nice 10 held 2–3 times the creates/s; docs/decisions/0021).
 */
const niceValue = z.coerce
  .number()
  .int()
  .min(0)
  .max(19)
  .default(0)
  .describe("The niceness the process gives itself at start, so the API's requests get the cores first.");

const healthAddr = listenAddr.describe("Where the health server (`/healthz`, `/readyz`, `/metrics`) listens.");

const outboxRetentionDays = z.coerce
  .number()
  .int()
  .min(1)
  .max(3650)
  .default(7)
  .describe(
    "Days outbox rows are kept, counted from when they occurred: the maintenance job (scheduled family) then drops their day's partition, only once every row in it is published.",
  );

/** Job families by name, comma-separated; empty or unset: every one. */
const jobFamilies = z
  .string()
  .default("")
  .transform((v, ctx) => {
    const names = v.split(",").map((s) => s.trim()).filter((s) => s.length > 0);
    const unknown = names.filter((n) => !(JOB_FAMILIES as readonly string[]).includes(n));
    if (unknown.length > 0) {
      ctx.addIssue({ code: "custom", message: `unknown job families: ${unknown.join(", ")}; known: ${JOB_FAMILIES.join(", ")}` });
      return z.NEVER;
    }
    return (names.length > 0 ? [...new Set(names)] : [...JOB_FAMILIES]) as JobFamily[];
  });

/** A family's job slots: one graphile-worker runner each (jobs/families.ts). */
const familySlots = (fallback: number, max: number, what: string) => z.coerce.number().int().min(1).max(max).default(fallback).describe(what);

const relaySettings = defineProcess({
  ...noRules,
  title: "Relay",
  runs: "The outbox relay: `npm run start:relay`.",
  environment: "RELAY_ENV",
  shape: {
    // API_ENV first: when RELAY_ENV takes its value, a bad one is reported under its own name.
    [API_ENV]: apiEnvFallback("RELAY_ENV"),
    RELAY_ENV: environment(
      "The relay's environment: any but `development` enforces the settings required in production. When unset, `API_ENV`'s value.",
    ),
    ...common,
    RELAY_HEALTH_ADDR: healthAddr,
    RELAY_POLL_INTERVAL_MS: z.coerce
      .number()
      .int()
      .min(50)
      .max(60_000)
      .default(1000)
      .describe("Interval of the outbox poll, which drains what a lost wake-up left."),
    RELAY_RETRY_INTERVAL_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(5000)
      .describe("The pause after a failed publish."),
    RELAY_PUBLISH_TIMEOUT_MS: relayPublishTimeoutMs,
    RELAY_LANES: z.coerce.number().int().min(1).max(16).default(4).describe("Batches in flight at once while a backlog drains."),
    RELAY_NICE: niceValue,
    OUTBOX_RETENTION_DAYS: outboxRetentionDays,
  },
  listenDefaults: { RELAY_HEALTH_ADDR: 8081 },
});

const notifierSettings = defineProcess({
  title: "Notifier",
  runs: "The notifier (bus consumer, notification, alert and photo jobs): `npm run start:notifier`.",
  environment: "NOTIFIER_ENV",
  shape: {
    // API_ENV first: when NOTIFIER_ENV takes its value, a bad one is reported under its own name.
    [API_ENV]: apiEnvFallback("NOTIFIER_ENV"),
    NOTIFIER_ENV: environment(
      "The notifier's environment: any but `development` enforces the settings required in production. When unset, `API_ENV`'s value.",
    ),
    ...common,
    NOTIFIER_HEALTH_ADDR: healthAddr,
    SMTP_URL: optionalSetting(z.string().url()).describe("The SMTP server of email notifications; when unset, email has no deliverer."),
    SMTP_DEADLINE_MS: deadlineMs(DEFAULT_DEADLINES_MS.smtpMessage).describe(
      "The total time one email may take, from connecting to the SMTP server's last answer; past it the connection is cut and " +
        "the attempt counts as a timeout.",
    ),
    SMTP_FROM: z.string().min(3).default("Animal Safety <no-reply@animal-safety.example>").describe("The sender of notification emails."),
    NOTIFIER_CONSUMER_NAME: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/)
      .default("notifier")
      .describe("The name of the durable JetStream consumer."),
    NOTIFIER_CONSUME: z
      .enum(["true", "false", "1", "0"])
      .default("true")
      .transform((v) => v === "true" || v === "1")
      .meta({ valueType: "boolean: `true` or `1`, `false` or `0`" })
      .describe(
      "Whether this notifier consumes the event stream. A notifier with `false` runs only the job families `NOTIFIER_JOB_FAMILIES` names: matching and photos on a process of their own, say.",
    ),
    NOTIFIER_JOB_FAMILIES: jobFamilies.describe(
      "The job families this notifier runs, each on a graphile-worker runner with slots of its own: any of " +
        JOB_FAMILIES.map((f) => `\`${f}\``).join(", ") +
        ". Every one by default; two processes may run the same family (docs/operations.md, \"Job families\").",
    ),
    NOTIFIER_DELIVERY_CONCURRENCY: familySlots(
      32,
      500,
      "Deliveries at once for each channel's family (delivery-email, delivery-push): they wait on the network, not the CPU, so twenty hanging on one slow endpoint leave room for everyone else's.",
    ),
    NOTIFIER_MATCHING_CONCURRENCY: familySlots(2, 32, "Matching jobs at once (the matching family)."),
    NOTIFIER_PARTNER_PHOTO_CONCURRENCY: familySlots(4, 64, "Partner photo fetches at once (the partner-photos family): each waits up to its deadline on a shelter's host."),
    NOTIFIER_SCHEDULED_CONCURRENCY: familySlots(2, 16, "Scheduled jobs at once (the scheduled family: report lifetime, maintenance, digests, sweeps)."),
    REPORT_TTL_DAYS: reportTtlDays.describe("Days an open report lives after its creation or last renewal (the scheduled family's report lifetime job)."),
    OUTBOX_RETENTION_DAYS: outboxRetentionDays,
    NOTIFIER_ALERT_DELIVERY_BATCH: z.coerce
      .number()
      .int()
      .min(1)
      .max(DELIVERY_BATCH_MAX)
      .default(NEARBY_DELIVERY_BATCH)
      .describe(
        "nearby_lost notifications (email and push) per delivery job of the alert fan-out and the morning digest: a job takes their locks, reads, records and unlocks them a statement each, and sends them at once.",
      ),
    /** Alert fan-out batches at once, on a runner of their own: each keeps a Postgres backend busy while it runs. */
    NOTIFIER_FANOUT_CONCURRENCY: z.coerce
      .number()
      .int()
      .min(1)
      .max(16)
      .default(1)
      .describe("Alert fan-out batches run at once, each keeping a Postgres backend busy."),
    /** The share of its time a fan-out slot spends running batches; it rests the remainder, leaving the machine to the API. */
    NOTIFIER_FANOUT_DUTY: z.coerce
      .number()
      .min(0.05)
      .max(1)
      .default(1)
      .describe("The share of its time a fan-out slot runs batches; it rests the remainder, leaving the machine to the API."),
    NOTIFIER_NICE: niceValue,
    NOTIFIER_ACK_WAIT_MS: z.coerce
      .number()
      .int()
      .min(1_000)
      .max(600_000)
      .default(30_000)
      .describe("How long JetStream waits for a message's ack before it redelivers the message."),
    NOTIFIER_CONSUME_CONCURRENCY: z.coerce
      .number()
      .int()
      .min(1)
      .max(500)
      .default(32)
      .describe("Bus messages handled at once."),
    /** Where the API is reached from outside: alert emails' unsubscribe links point there. */
    API_PUBLIC_BASE_URL: apiPublicBaseUrl.describe("Where the API is reached from outside: alert emails' unsubscribe links point there."),
    ALERT_UNSUBSCRIBE_SECRET: alertUnsubscribeSecret,
    /** Photo processing jobs at once (the photos family): each decodes up to a 1600 px raster (about 10 MB) besides the original. */
    NOTIFIER_PHOTO_CONCURRENCY: z.coerce
      .number()
      .int()
      .min(1)
      .max(16)
      .default(2)
      .describe("Photo processing jobs at once, each decoding up to a 1600 px raster (about 10 MB) besides the original."),
    ...objectStorage,
    ...webPushNotifier,
    ...smsNotifier,
    PUBLIC_BASE_URL: optionalSetting(z.string().url()).describe(
      "The API's public base as the SMS provider reaches it: the `StatusCallback` of each text (`/v1/sms/status`, whose signature " +
        "the API checks on its own `PUBLIC_BASE_URL`: the same value in both) and the links texts end with. Required with the `sms` " +
        "channel outside development; there, when unset, `API_PUBLIC_BASE_URL`.",
    ),
    PARTNER_PHOTO_FETCH_ALLOW: csv.describe(
      "Host names whose partner photo URLs are fetched over plain http and to any address, loopback included: for tests only. " +
        "Any other host is fetched over https only, and never from a private, loopback, link-local or metadata address.",
    ),
    PARTNER_PHOTO_FETCH_DEADLINE_MS: deadlineMs(DEFAULT_DEADLINES_MS.partnerPhotoFetch).describe(
      "The total time one partner photo fetch may take, redirects and the photo's bytes included; past it the fetch is cut " +
        "and fails as a timeout.",
    ),
  },
  listenDefaults: { NOTIFIER_HEALTH_ADDR: 8085 },
  // The notifier processes and deletes photos: outside development it needs the bucket as the API does.
  requiredOutsideDevelopment: [...objectStorageCredentials, "ALERT_UNSUBSCRIBE_SECRET", "VAPID_PUBLIC_KEY", "VAPID_PRIVATE_KEY", "VAPID_SUBJECT"],
  developmentOnly: [],
  developmentFallbacks,
  allOrNone: [objectStorageCredentials, smsCredentials],
});

/** `api migrate …` and the operator tasks: a database and, for migrate, a logger. */
const databaseToolSettings = defineProcess({
  ...noRules,
  title: "`api migrate` and the operator tasks",
  runs: "`bin/api migrate up` / `status` (`npm run migrate`), `tasks/cancel-lost-report.ts` and `tasks/clean-worker-jobs.ts`.",
  shape: { DATABASE_URL: databaseUrl, ...logging },
});

/** Operator tasks that also publish to the stream (tasks/republish-outbox.ts). */
const busToolSettings = defineProcess({
  ...noRules,
  title: "The republish task",
  runs: "`tasks/republish-outbox.ts`, the operator task that publishes outbox rows to the stream again.",
  shape: {
    DATABASE_URL: databaseUrl,
    NATS_URL: natsUrl,
    NATS_STREAM: natsStream,
    NATS_REPLICAS: natsReplicas,
    RELAY_PUBLISH_TIMEOUT_MS: relayPublishTimeoutMs,
    ...logging,
  },
});

/** Every process's and tool's settings, in the order of docs/configuration.md. */
export const settingsByProcess = {
  api: apiSettings,
  relay: relaySettings,
  notifier: notifierSettings,
  databaseTool: databaseToolSettings,
  busTool: busToolSettings,
} as const;

const apiSchema = withProcessDefaults(apiSettings, z.object(apiSettings.shape));
const relaySchema = withProcessDefaults(relaySettings, z.object(relaySettings.shape));
const notifierSchema = withProcessDefaults(notifierSettings, z.object(notifierSettings.shape));
const databaseToolSchema = z.object(databaseToolSettings.shape);
const busToolSchema = z.object(busToolSettings.shape);

// The secret is always set once loaded: required outside development, defaulted in it.
export type ApiConfig = Readonly<z.output<typeof apiSchema> & { ALERT_UNSUBSCRIBE_SECRET: string; PUBLIC_BASE_URL: string }>;
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

/** A process's environment, and the setting it was read from, which the messages name. */
interface ProcessEnvironment {
  readonly setting: string;
  readonly value: string;
}

/**
 * Parses a process's settings and applies its rules. The environment is named
 * after the process's own setting, or API_ENV when only that one was set.
 */
function loadProcess<T extends z.ZodType>(settings: ProcessSettings, schema: T, env: Env) {
  const config = parseWith(schema, env);
  const own = settings.environment ?? API_ENV;
  const setting = env[own] === undefined && env[API_ENV] !== undefined ? API_ENV : own;
  const environment: ProcessEnvironment = { setting, value: String((config as Record<string, unknown>)[own]) };
  checkRules(config as Readonly<Record<string, unknown>>, settings, environment);
  return { config, environment };
}

/**
 * The rules of a process's ProcessSettings, in this order: development-only
 * settings, then the settings required outside development, then the
 * all-or-none groups.
 */
function checkRules(values: Readonly<Record<string, unknown>>, rules: ProcessSettings, environment: ProcessEnvironment): void {
  if (environment.value !== "development") {
    for (const setting of rules.developmentOnly) {
      if (values[setting] === true) throw new ConfigError(setting, `is only allowed when ${environment.setting}=development`);
    }
    for (const setting of rules.requiredOutsideDevelopment) {
      const value = values[setting];
      // Blank strings were already turned into "unset" by the schema; an empty list is unset too.
      if (value === undefined || value === "" || (Array.isArray(value) && value.length === 0)) {
        throw new ConfigError(setting, `is required when ${environment.setting}=${environment.value}`);
      }
    }
  }
  for (const group of rules.allOrNone) checkAllOrNone(values, group);
}

/** Some but not all of a group (the four bucket credentials) is refused, naming a missing one. */
function checkAllOrNone(values: Readonly<Record<string, unknown>>, group: readonly string[]): void {
  const missing = group.filter((setting) => values[setting] === undefined);
  if (missing.length > 0 && missing.length < group.length) {
    const given = group.filter((setting) => !missing.includes(setting));
    throw new ConfigError(missing[0]!, `is required when ${given.join(", ")} ${given.length === 1 ? "is" : "are"} set`);
  }
}

export function loadApiConfig(env: Env): ApiConfig {
  const { config, environment } = loadProcess(apiSettings, apiSchema, env);
  return withPublicBaseUrl(withUnsubscribeSecret(config, environment), environment);
}

/**
 * PUBLIC_BASE_URL is printed on flyers and posted to other sites, where a
 * localhost link would be wrong for good: outside development a missing one
 * has already failed (requiredOutsideDevelopment; checked again here). In
 * development it is the API's own public base, http://localhost:8080 unless set.
 */
function withPublicBaseUrl<T extends { PUBLIC_BASE_URL?: string | undefined; API_PUBLIC_BASE_URL: string }>(
  config: T,
  environment: ProcessEnvironment,
): T & { PUBLIC_BASE_URL: string } {
  if (config.PUBLIC_BASE_URL !== undefined) return config as T & { PUBLIC_BASE_URL: string };
  if (environment.value !== "development") {
    throw new ConfigError("PUBLIC_BASE_URL", `is required when ${environment.setting}=${environment.value}`);
  }
  return Object.freeze({ ...config, PUBLIC_BASE_URL: config.API_PUBLIC_BASE_URL });
}

/**
 * Outside development a missing ALERT_UNSUBSCRIBE_SECRET has already failed
 * (requiredOutsideDevelopment; checked again here, so no other environment
 * ever gets the fixed value); in development the fixed value stands in.
 */
function withUnsubscribeSecret<T extends { ALERT_UNSUBSCRIBE_SECRET?: string | undefined }>(
  config: T,
  environment: ProcessEnvironment,
): T & { ALERT_UNSUBSCRIBE_SECRET: string } {
  if (config.ALERT_UNSUBSCRIBE_SECRET !== undefined) return config as T & { ALERT_UNSUBSCRIBE_SECRET: string };
  if (environment.value !== "development") {
    throw new ConfigError("ALERT_UNSUBSCRIBE_SECRET", `is required when ${environment.setting}=${environment.value}`);
  }
  return Object.freeze({ ...config, ALERT_UNSUBSCRIBE_SECRET: developmentFallbacks.ALERT_UNSUBSCRIBE_SECRET });
}

export function loadRelayConfig(env: Env): RelayConfig {
  return loadProcess(relaySettings, relaySchema, env).config;
}

/** The notifier processes and deletes photos: outside development it needs the bucket as the API does. */
export function loadNotifierConfig(env: Env): NotifierConfig {
  const { config, environment } = loadProcess(notifierSettings, notifierSchema, env);
  // The texts' status callbacks must reach the API at the URL it checks their signatures on: no localhost guess outside development.
  if (config.SMS_ACCOUNT_SID !== undefined && config.PUBLIC_BASE_URL === undefined && environment.value !== "development") {
    throw new ConfigError("PUBLIC_BASE_URL", `is required with SMS_ACCOUNT_SID when ${environment.setting}=${environment.value}`);
  }
  return withUnsubscribeSecret(config, environment);
}

export function loadDatabaseToolConfig(env: Env): DatabaseToolConfig {
  return parseWith(databaseToolSchema, env);
}

export function loadBusToolConfig(env: Env): BusToolConfig {
  return parseWith(busToolSchema, env);
}
