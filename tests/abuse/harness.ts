import type { FastifyInstance, HTTPMethods, InjectOptions, LightMyRequestResponse, RouteOptions } from "fastify";
import { pino } from "pino";
import sharp from "sharp";
import { afterAll, beforeAll } from "vitest";
import type { RouteAuth } from "../../api/plugins/auth.js";
import { TAG_CSS } from "../../api/tag/assets.js";
import type { Env } from "../../lib/config.js";
import type { Pool } from "../../lib/db.js";
import type { ObjectStorage } from "../../lib/storage/index.js";
import { createPhotoProcessor } from "../../jobs/photos/process.js";
import type { TestDatabase } from "../helpers/db.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import type { TestBus } from "../helpers/nats.js";
import { privacyRules } from "../helpers/privacy.js";

/** A route as Fastify registered it, with the gate auth.ts applies to it. */
export interface RegisteredRoute {
  method: HTTPMethods;
  url: string;
  /** As declared (or forced on /v1/admin by auth.ts); undefined when the route declares none. */
  auth: RouteAuth | undefined;
  /** Hidden from /openapi.json (health, docs, console assets). */
  hidden: boolean;
}

export interface AbuseHarness {
  db: TestDatabase;
  bus: TestBus;
  app: FastifyInstance;
  pool: Pool;
  /** The app's photo storage (the file's local directory). */
  storage: ObjectStorage;
  /** Every route, read after app.ready() so the gate auth.ts forces on /v1/admin is included. */
  routes: RegisteredRoute[];
  /**
   * inject() from an address of its own, so the per-IP limiter (tested in
   * tests/plugins) never answers in a route's place. The privacy checker
   * (tests/helpers/privacy.ts, seeded with the world's secrets) sees every
   * public response; what it finds fails the running test.
   */
  call(options: InjectOptions): Promise<LightMyRequestResponse>;
  /** Responses of public API routes, per route ("GET /v1/…"), with their status codes. */
  publicResponses: Map<string, number[]>;
}

let addressCounter = 0;
/** A client address no earlier request used. */
function freshAddress(): string {
  addressCounter += 1;
  return `10.${(addressCounter >> 16) & 255}.${(addressCounter >> 8) & 255}.${addressCounter & 255}`;
}

/**
 * The file's own database, nats-server and real app (the test harness,
 * tests/helpers/harness.ts: development settings, debug bypass unless `extra`
 * says otherwise), with every route it registered.
 */
export function useAbuseHarness(options: { extra?: Env | (() => Env | Promise<Env>) } = {}): AbuseHarness {
  const harness = { publicResponses: new Map() } as AbuseHarness;
  const seen: RouteOptions[] = [];
  let base: Harness | undefined;
  beforeAll(async () => {
    const extra = typeof options.extra === "function" ? await options.extra() : (options.extra ?? {});
    // A fixed VAPID key, so GET /v1/push/public-key never makes development's pair in the repository's .data/.
    const push = { VAPID_PUBLIC_KEY: "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg" };
    privacyRules.point(PRECISE).actor(OWNER).actor(OTHER);
    for (const secret of [VERIFICATION_DETAIL, CONTACT, ...MICROCHIPS]) privacyRules.text(secret);
    base = await startHarness({ ...push, ...extra }, { onRoute: (route) => void seen.push(route) });
    Object.assign(harness, { db: base.db, bus: base.bus, app: base.api.app, pool: base.api.pool, storage: base.api.storage });
    // OPTIONS * is @fastify/cors's preflight handler, answered before auth; it is not an operation.
    harness.routes = seen.flatMap((route) =>
      [route.method].flat().filter((method) => method !== "OPTIONS").map((method) => ({
        method,
        url: route.url,
        // auth.ts's own onRoute hook has run by now: it mutates route.config.
        auth: route.config?.auth,
        hidden: Boolean((route.schema as { hide?: boolean } | undefined)?.hide),
      })),
    );
    harness.call = async (inject) => {
      const res = await harness.app.inject({ remoteAddress: freshAddress(), ...inject });
      const route = matchRoute(harness.routes, String(inject.method ?? "GET"), String(inject.url ?? inject.path));
      // Hidden public routes serve documents about the API (OpenAPI, docs, console, health, metrics), not records.
      if (route?.auth === "public" && !route.hidden && res.body !== "") {
        const key = `${route.method} ${route.url}`;
        harness.publicResponses.set(key, [...(harness.publicResponses.get(key) ?? []), res.statusCode]);
      }
      return res;
    };
  });
  afterAll(async () => {
    await base?.close();
  });
  return harness;
}

/** The registered route a concrete URL is served by (parameters match any non-empty segment). */
function matchRoute(routes: RegisteredRoute[], method: string, url: string): RegisteredRoute | null {
  const path = url.split("?")[0]!;
  return (
    routes.find((route) => {
      if (route.method !== method.toUpperCase()) return false;
      const pattern = route.url
        .split("/")
        .map((part) => (part.startsWith(":") ? "[^/]+" : part === "*" ? ".*" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
        .join("/");
      return new RegExp(`^${pattern}$`).test(path);
    }) ?? null
  );
}

/**
 * Records every committed row change in this file's own database: a row
 * trigger on every table of the public schema and on graphile-worker's jobs
 * appends to abuse_write_log. A rolled-back write leaves nothing there, so a
 * request that answered 4xx and grew the log wrote a row it must not have.
 * Stronger than comparing row counts: updates and deletes show up too.
 */
export class WriteLog {
  private constructor(private readonly pool: Pool) {}

  static async install(pool: Pool): Promise<WriteLog> {
    await pool.query(`
      create table abuse_write_log (id bigserial primary key, tbl text not null, op text not null);
      create function abuse_log_write() returns trigger language plpgsql as $$
      begin
        insert into abuse_write_log (tbl, op) values (tg_table_schema || '.' || tg_table_name, tg_op);
        return null;
      end $$;`);
    const { rows } = await pool.query<{ name: string }>(
      `select format('%I.%I', table_schema, table_name) as name from information_schema.tables
       where table_type = 'BASE TABLE'
         and ((table_schema = 'public' and table_name not in ('abuse_write_log', 'spatial_ref_sys'))
           or (table_schema = 'graphile_worker' and table_name = '_private_jobs'))
         -- A partition gets its parent's row trigger: one on the parent covers it.
         and not (format('%I.%I', table_schema, table_name)::regclass)::oid in (select inhrelid from pg_inherits)`,
    );
    for (const { name } of rows) {
      await pool.query(`create trigger abuse_log_write after insert or update or delete on ${name}
                        for each row execute function abuse_log_write()`);
    }
    return new WriteLog(pool);
  }

  private seen = 0;

  /** The row changes committed since the previous call, as "OP schema.table"; one query. */
  async takeNew(): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: number; w: string }>(
      `select id::int, op || ' ' || tbl as w from abuse_write_log where id > $1::bigint order by id`,
      [this.seen],
    );
    if (rows.length > 0) this.seen = rows.at(-1)!.id;
    return rows.map((r) => r.w);
  }
}

/** What no response body may carry: stack frames, SQL or Postgres error text, module paths. */
const LEAKS: [string, RegExp][] = [
  ["stack frame", /\n\s+at |\bat [\w.<>]+ \(|\.(?:ts|js|mjs):\d+:\d+/],
  ["node_modules path", /node_modules/],
  ["SQL text", /\b(?:select\s.+\sfrom|insert\s+into|update\s+\w+\s+set|delete\s+from)\b/i],
  ["Postgres error text", /\b(?:relation|column) "[^"]+"|syntax error at or near|violates (?:unique|foreign key|check|not-null) constraint|invalid input syntax for type|SQLSTATE/i],
  ["error class name", /\b(?:TypeError|ReferenceError|RangeError|DatabaseError|ZodError)\b/],
];

/** The first leak found in a body, or null. */
export function findLeak(body: string): string | null {
  for (const [name, pattern] of LEAKS) if (pattern.test(body)) return name;
  return null;
}

/** Why a 4xx/5xx body is not contract problem+json (type, title, status, detail), or null when it is. */
export function problemShapeError(res: LightMyRequestResponse): string | null {
  if (!String(res.headers["content-type"] ?? "").startsWith("application/problem+json")) {
    return `content-type ${String(res.headers["content-type"])}`;
  }
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    return "body is not JSON";
  }
  const problem = body as Record<string, unknown>;
  if (typeof problem.type !== "string" || !/\/[a-z-]+$/.test(problem.type)) return "no type";
  if (typeof problem.title !== "string" || problem.title === "") return "no title";
  if (problem.status !== res.statusCode) return `status ${String(problem.status)} != ${res.statusCode}`;
  if (typeof problem.detail !== "string") return "no detail";
  return null;
}

/** The problem slug of a response, from its type URI. */
export const slugOf = (res: LightMyRequestResponse): string | undefined => {
  try {
    return String(JSON.parse(res.body).type).split("/").pop();
  } catch {
    return undefined;
  }
};

export const OWNER = "owner-1";
export const OTHER = "other-1";
export const ADMIN = "admin-1";

export const PRECISE = { lat: 48.856613, lon: 2.352222 };
export const VERIFICATION_DETAIL = "scar under the left ear, known only to the owner";
export const CONTACT = "finder@example.com, +33 6 12 34 56 78";
export const MICROCHIPS = ["CHIP-0042-XYZ", "CHIP-0099-ABC"];

/** Real rows for every kind of path parameter, created through the API (notifications directly: only the notifier makes them). */
export interface World {
  lostReportId: string;
  /** A second open report of the owner's, for the routes that close one. */
  spareLostReportId: string;
  foundReportId: string;
  sightingId: string;
  contactMessageId: string;
  /** An open found report the matrix may resolve, so foundReportId stays open for contact messages. */
  spareFoundReportId: string;
  animalId: string;
  token: string;
  /** A second animal of the owner's with a profile, for the routes that replace or revoke its token. */
  spareAnimalId: string;
  moderationId: string;
  outboxId: string;
  notificationId: string;
  /** The owner's alert subscription. */
  alertSubscriptionId: string;
  /** The owner's push subscription (a browser's, on an https push service). */
  pushSubscriptionId: string;
  matchId: string;
  /** A ready photo of the lost report, public. */
  photoId: string;
  /** A second ready photo of it, for the routes that delete one. */
  sparePhotoId: string;
  /** A graphile-worker job due tomorrow (scheduled), for the admin job routes: retried, then failed. */
  jobId: string;
  /** The open lost report's short code (GET /s/{code}). */
  lostShortCode: string;
  /** A shelter partner, for the admin partner routes (rotated, suspended, then restored). */
  partnerId: string;
}

/** A small JPEG, a multipart/form-data body with it as the one file part `photo`. */
export async function photoUpload(): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: "#a0522d" } }).jpeg().toBuffer();
  const boundary = "----abuse-photo-boundary";
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="photo"; filename="rex.jpg"\r\ncontent-type: image/jpeg\r\n\r\n`),
    jpeg,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { payload, headers: { "content-type": `multipart/form-data; boundary=${boundary}` } };
}

export async function seedWorld(h: AbuseHarness): Promise<World> {
  const created = async (res: LightMyRequestResponse) => {
    if (res.statusCode >= 300) throw new Error(`seed failed: ${res.statusCode} ${res.body}`);
    return res.json() as Record<string, string>;
  };
  const owner = { "x-debug-actor": OWNER };
  const lost = await created(
    await h.call({
      method: "POST",
      url: "/v1/safety/lost-reports",
      headers: owner,
      payload: {
        animal: { name: "Rex", species: "dog", breed: "Beagle", colors: ["brown"], microchipId: MICROCHIPS[0] },
        lastSeenAt: "2025-11-20T08:00:00Z",
        location: PRECISE,
        description: "Red collar",
        verificationDetail: VERIFICATION_DETAIL,
      },
    }),
  );
  const spare = await created(
    await h.call({
      method: "POST",
      url: "/v1/safety/lost-reports",
      headers: owner,
      payload: { animal: { species: "cat" }, lastSeenAt: "2025-11-21T08:00:00Z", location: { lat: 48.85, lon: 2.34 } },
    }),
  );
  const found = await created(
    await h.call({
      method: "POST",
      url: "/v1/safety/found-reports",
      headers: owner,
      payload: { animal: { species: "cat", colors: ["black"], microchipId: MICROCHIPS[1] }, foundAt: "2025-11-20T09:00:00Z", location: { lat: 48.86012, lon: 2.34871 } },
    }),
  );
  const spareFound = await created(
    await h.call({
      method: "POST",
      url: "/v1/safety/found-reports",
      headers: owner,
      payload: { animal: { species: "dog" }, foundAt: "2025-11-21T09:00:00Z", location: { lat: 48.87, lon: 2.33 } },
    }),
  );
  const sighting = await created(
    await h.call({
      method: "POST",
      url: "/v1/safety/sightings",
      headers: { "x-debug-actor": OTHER },
      payload: { lostReportId: lost.id, location: { lat: 48.857123, lon: 2.353456 }, seenAt: "2025-11-20T10:00:00Z", note: "near the bakery" },
    }),
  );
  const contactMessage = await created(
    await h.call({
      method: "POST",
      url: `/v1/safety/lost-reports/${lost.id}/relay-message`,
      payload: { message: "I think I saw your dog", fromContact: CONTACT },
    }),
  );
  const animal = await created(
    await h.call({ method: "POST", url: "/v1/animals", headers: owner, payload: { name: "Rex", species: "dog", breed: "Beagle", colors: ["brown"] } }),
  );
  const profile = await created(
    await h.call({
      method: "PUT",
      url: `/v1/animals/${animal.id}/emergency-profile`,
      headers: owner,
      payload: { showName: true, medicalNotes: "diabetic", instructions: "call the vet" },
    }),
  );
  const spareAnimal = await created(
    await h.call({ method: "POST", url: "/v1/animals", headers: owner, payload: { name: "Tom", species: "cat" } }),
  );
  await created(
    await h.call({ method: "PUT", url: `/v1/animals/${spareAnimal.id}/emergency-profile`, headers: owner, payload: { showName: false } }),
  );
  const moderation = await created(
    await h.call({
      method: "POST",
      url: "/v1/moderation/reports",
      headers: { "x-debug-actor": OTHER },
      payload: { targetType: "found_report", targetId: found.id, reason: "spam" },
    }),
  );
  const subscription = await created(
    await h.call({
      method: "POST",
      url: "/v1/me/alert-subscriptions",
      headers: owner,
      payload: { location: { lat: 48.861234, lon: 2.337654 }, radiusKm: 3, species: ["dog"] },
    }),
  );
  const pushSubscription = await created(
    await h.call({
      method: "POST",
      url: "/v1/me/push-subscriptions",
      headers: owner,
      payload: {
        endpoint: "https://push.example.com/send/owner-phone",
        keys: { p256dh: "BLZYrF06hG5Jwxg-B9G9ma1qCwVeJtPrAsWUgbeMR4EjCm9jrrAYh7HuE7S37SxWLt8FAux1udaCH-Jfh2b7puE", auth: "YPIh5IXuF6Hm9XSwTiLGyg" },
      },
    }),
  );
  // A suggestion between the owner's lost report and found report, as the matcher leaves it.
  const { rows: match } = await h.pool.query<{ id: string }>(
    `insert into safety_match (lost_report_id, kind, target_id, score, reasons, distance_m)
     values ($1::uuid, 'found_report', $2::uuid, 0.8, '{breed,colors}', 1200) returning id`,
    [lost.id, found.id],
  );
  // Two photos of the lost report, made ready by the notifier's own processing code.
  const process = createPhotoProcessor({ pool: h.pool, storage: h.storage, logger: pino({ level: "silent" }) });
  const photos: string[] = [];
  for (let i = 0; i < 2; i++) {
    const body = await photoUpload();
    const photo = await created(
      await h.call({ method: "POST", url: `/v1/safety/lost-reports/${lost.id}/photos`, headers: { ...owner, ...body.headers }, payload: body.payload }),
    );
    await process(photo.id!, { attempt: 1, maxAttempts: 1 });
    photos.push(photo.id!);
  }
  // The seed spends the owner's report-creation tokens; the walks below need their own.
  await h.pool.query(`delete from rate_limit_bucket`);
  const { rows: outbox } = await h.pool.query<{ id: string }>(`select id from outbox_event order by occurred_at limit 1`);
  const { rows: notification } = await h.pool.query<{ id: string }>(
    `insert into notification (recipient_actor_id, channel, status, attempts, last_error, source_event_id, event_type, kind, subject, body)
     values ($1::text, 'email', 'failed', 3, 'connect ETIMEDOUT', $2::uuid, 'events.safety.relay_message_received.v1', 'relay_message', 'A message', 'I think I saw your dog')
     returning id`,
    [OWNER, outbox[0]!.id],
  );
  const { rows: job } = await h.pool.query<{ id: string }>(
    `select id::text from graphile_worker.add_job('matrix__probe', '{}'::json, run_at => now() + interval '1 day')`,
  );
  const { rows: short } = await h.pool.query<{ code: string }>(`select short_code as code from safety_lost_report where id = $1`, [lost.id]);
  const { rows: partner } = await h.pool.query<{ id: string }>(
    `insert into partner (name, kind, location, login_email, password_hash, created_by)
     values ('Matrix Shelter', 'shelter', 'SRID=4326;POINT(2.35 48.85)', 'matrix@shelter.example', 'scrypt$1$1$1$AA==$AA==', 'seed')
     returning id`,
  );
  return {
    partnerId: partner[0]!.id,
    lostShortCode: short[0]!.code,
    jobId: job[0]!.id,
    lostReportId: lost.id!,
    spareLostReportId: spare.id!,
    foundReportId: found.id!,
    spareFoundReportId: spareFound.id!,
    sightingId: sighting.id!,
    contactMessageId: contactMessage.id!,
    animalId: animal.id!,
    token: profile.token!,
    spareAnimalId: spareAnimal.id!,
    moderationId: moderation.id!,
    outboxId: outbox[0]!.id,
    notificationId: notification[0]!.id,
    alertSubscriptionId: subscription.id!,
    pushSubscriptionId: pushSubscription.id!,
    matchId: match[0]!.id,
    photoId: photos[0]!,
    sparePhotoId: photos[1]!,
  };
}

/** A concrete value for each path parameter of a route, pointing at a seeded row. */
export function pathValue(world: World, url: string, param: string): string {
  if (param === "userId") return "fuzz-target-1";
  if (param === "token") return world.token;
  if (param === "file") return TAG_CSS.name;
  if (param === "code") return world.lostShortCode;
  // The share pages, their cards, flyers and forms: the open lost and found reports.
  if (url.startsWith("/lost/")) return world.lostReportId;
  if (url.startsWith("/found/")) return world.foundReportId;
  if (param === "variant") return "thumb";
  // Serving reads the public photo; the status and delete routes act on the spare one.
  if (param === "photoId") return url.endsWith("/:variant") || url.endsWith("/{variant}") ? world.photoId : world.sparePhotoId;
  if (param === "animalId" || url.endsWith("/emergency-profile")) return world.spareAnimalId;
  if (url.startsWith("/v1/animals/")) return world.animalId;
  if (url.startsWith("/v1/safety/found-reports/")) return url.endsWith("/resolve") ? world.spareFoundReportId : world.foundReportId;
  if (url.endsWith("/resolve")) return world.spareLostReportId;
  if (url.startsWith("/v1/safety/lost-reports/")) return world.lostReportId;
  if (url.startsWith("/v1/admin/moderation/")) return world.moderationId;
  if (url.startsWith("/v1/admin/outbox/")) return world.outboxId;
  if (url.startsWith("/v1/admin/jobs/")) return world.jobId;
  if (url.startsWith("/v1/admin/notifications/")) return world.notificationId;
  if (url.startsWith("/v1/me/notifications/")) return world.notificationId;
  if (url.startsWith("/v1/me/alert-subscriptions/")) return world.alertSubscriptionId;
  if (url.startsWith("/v1/me/push-subscriptions/")) return world.pushSubscriptionId;
  if (url.startsWith("/v1/admin/lost-reports/")) return world.lostReportId;
  if (url.startsWith("/v1/safety/matches/")) return world.matchId;
  if (url.startsWith("/v1/admin/partners/")) return world.partnerId;
  // The partner API: any id (its callers here have no integration key, so the gate answers first).
  if (url.startsWith("/partners/")) return world.foundReportId;
  throw new Error(`no seeded value for ${param} in ${url}`);
}

/** A route pattern (Fastify :param or OpenAPI {param}) with every parameter filled. */
export function fillPath(world: World, url: string, override?: (param: string) => string | undefined): string {
  return url.replace(/:([A-Za-z0-9_]+)|\{([A-Za-z0-9_]+)\}/g, (_m, a?: string, b?: string) => {
    const param = (a ?? b)!;
    return override?.(param) ?? pathValue(world, url, param);
  });
}
