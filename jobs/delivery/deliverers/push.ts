import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import webpush from "web-push";
import { AddressRefused, checkedLookup, refusedAddress, systemResolver, type Resolver } from "../../../lib/checked-lookup.js";
import type { Pool, Queryable } from "../../../lib/db.js";
import { ANSWER_BODY_LIMIT_BYTES, DEFAULT_DEADLINES_MS, DeadlineExceeded, withDeadline } from "../../../lib/deadline.js";
import { HIGH_URGENCY_KINDS, NO_PUSH_SUBSCRIPTION, PROVIDER_REJECTED, PUSH_ENDPOINT_REFUSED } from "../../../lib/notifications.js";
import type { VapidKeys } from "../../../lib/push.js";
import { sharePath, type ReportKind } from "../../../lib/report-lifecycle.js";
import type { DeliverableNotification, PushSubscriptionRow } from "../store.js";
import { createOriginPauses, originOf, type OriginPauses } from "./origin-pause.js";
import { DeliveryError, type Deliverer } from "./types.js";

/**
 * The push channel (contract part 3, "Push to phones"): each notification is
 * sent to every push subscription of its recipient, encrypted (RFC 8291,
 * aes128gcm) and signed (VAPID, RFC 8292) by web-push's
 * generateRequestDetails. The request itself is sent here, with node:http(s) on
 * keep-alive agents: web-push's sendNotification speaks https only, and tests
 * run a local push service over http on an allow-listed host
 * (PUSH_ENDPOINT_ALLOW; docs/decisions/0074); and fetch builds a Request,
 * Headers and web streams per push, CPU the drain needs (docs/decisions/0080,
 * `npx tsx bench/push-drain.ts`, notifierCpuMs).
 *
 * Outcomes per subscription: 2xx took it; 404 and 410 mean it is gone, and its
 * row is deleted; 429 and 5xx (and a network error, or a timeout) may succeed
 * later; any other answer (400, 413, …) refuses this message only. The
 * notification is sent when any subscription took it; else it is retried when
 * any may succeed later (with the push service's Retry-After); else
 * dead-lettered, as permanent: "provider rejected" when one refused it (the
 * next notification still goes to that subscription), "push endpoint refused"
 * when its address is refused, "no push subscription" when none is left.
 *
 * Nothing stalls (contract part 4, docs/decisions/0090-0092):
 * - each request has a total deadline (PUSH_DEADLINE_MS, 10 s) from its start
 *   to the answer's last byte, and reads at most 4 KB of the answer's body;
 * - an origin that timed out 3 times in a row is paused (origin-pause.ts):
 *   heldUntil tells the delivery job to put the notification back;
 * - a connection goes only to an address its own lookup checked, as a
 *   partner photo fetch's (lib/checked-lookup.ts): a name that now resolves
 *   to a private address is refused at connect time, and the refusal does not
 *   say which address that was.
 */

/** The largest payload, in bytes of JSON: well under the 4 KB a push service must take (RFC 8291 section 4). */
export const MAX_PUSH_PAYLOAD_BYTES = 3 * 1024;
/** How long a push service keeps an undelivered message for a phone that is off: one day. */
export const PUSH_TTL_SECONDS = 86_400;
/** Connections open at once to one push service (`npx tsx bench/push-drain.ts`, connections and the drain rate). */
export const MAX_SOCKETS_PER_ORIGIN = 32;
/** A VAPID JWT's lifetime (RFC 8292 allows up to 24 h) and how long one is reused. */
const VAPID_TOKEN_SECONDS = 12 * 3600;
const VAPID_TOKEN_REUSE_MS = 3600_000;

export interface PushDelivererOptions {
  /** Used when a caller gives no client of its own (the delivery job always does). */
  pool: Pool;
  /** The VAPID pair, or a function giving it (development makes its pair on first use: lib/push.ts). */
  vapid: VapidKeys | (() => VapidKeys);
  /** The VAPID `sub`: a mailto: or https: contact. */
  subject: string;
  /** Where the pages a push opens live: the share pages of the API. */
  publicBaseUrl: string;
  /** Hosts whose endpoints may be http and on any address (tests' loopback peers). Endpoints were checked when subscribed (api/push). */
  allowHosts?: readonly string[];
  /** The total deadline of one push request (PUSH_DEADLINE_MS). */
  deadlineMs?: number;
  /** How long an origin that keeps timing out is paused (PUSH_ORIGIN_PAUSE_MS). */
  originPauseMs?: number;
  /** Resolves endpoint host names for the checked lookup (the system's DNS; tests map names of their own). */
  resolve?: Resolver;
}

export interface PushPayload {
  kind: string;
  subject: string;
  body: string;
  url: string;
  data: Record<string, string>;
}

/** The report a notification is about, if any. */
export function reportOf(data: DeliverableNotification["data"]): { kind: ReportKind; id: string } | null {
  if (data.lostReportId) return { kind: "lost", id: data.lostReportId };
  if (data.foundReportId) return { kind: "found", id: data.foundReportId };
  if (data.reportId && (data.reportKind === "lost" || data.reportKind === "found")) return { kind: data.reportKind, id: data.reportId };
  return null;
}

/** The page a notification opens: the report's share page when it is about one, else the site's front page. */
export function pushUrl(notification: Pick<DeliverableNotification, "data">, publicBaseUrl: string): string {
  const base = publicBaseUrl.replace(/\/+$/, "");
  const report = reportOf(notification.data);
  return report ? `${base}${sharePath(report.kind, encodeURIComponent(report.id))}` : `${base}/`;
}

/** The payload JSON, its body cut (on a code point, with an ellipsis) until the whole is at most MAX_PUSH_PAYLOAD_BYTES. */
export function pushPayload(notification: DeliverableNotification, publicBaseUrl: string): string {
  const payload: PushPayload = {
    kind: notification.kind,
    subject: notification.subject,
    body: notification.body,
    url: pushUrl(notification, publicBaseUrl),
    data: { ...notification.data, notificationId: notification.id },
  };
  let json = JSON.stringify(payload);
  if (Buffer.byteLength(json) <= MAX_PUSH_PAYLOAD_BYTES) return json;
  // The longest prefix (in code points) that fits, by bisection: at most a dozen JSON.stringify of 3 KB.
  const chars = [...notification.body];
  const withBody = (keep: number) => JSON.stringify({ ...payload, body: `${chars.slice(0, keep).join("")}…` });
  let [fits, tooLong] = [-1, chars.length];
  while (tooLong - fits > 1) {
    const mid = (fits + tooLong) >> 1;
    if (Buffer.byteLength(withBody(mid)) <= MAX_PUSH_PAYLOAD_BYTES) fits = mid;
    else tooLong = mid;
  }
  if (fits >= 0) return withBody(fits);
  // A subject or data too large on their own: the body goes entirely, the subject is cut.
  return JSON.stringify({ ...payload, body: "", subject: payload.subject.slice(0, 200), data: { notificationId: notification.id } });
}

/** A Retry-After header (seconds or an HTTP date) in ms, or undefined. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

type Subscription = PushSubscriptionRow;

interface Answer {
  status: number;
  retryAfter: string | null;
}

/** A push cut at its deadline; `connected` false when it never got a connection from the agent (our queue, not the origin). */
class PushTimedOut extends Error {
  constructor(
    message: string,
    readonly connected: boolean,
  ) {
    super(message);
  }
}

/**
 * One POST, at most ANSWER_BODY_LIMIT_BYTES of its answer's body read and dropped. No redirect is followed (a 3xx
 * refuses the message). The deadline is one plain timer, cleared with the answer: AbortSignal.timeout left a timer per
 * push that fired 10 s later and built a DOMException each time (bench CPU profile, docs/decisions/0080).
 */
function post(url: URL, headers: Record<string, string | number>, body: Buffer | null, agent: http.Agent, deadlineMs: number): Promise<Answer> {
  let request!: http.ClientRequest;
  let connected = false;
  const answer = new Promise<Answer>((resolve, reject) => {
    request = (url.protocol === "https:" ? https : http).request(url, { method: "POST", headers, agent }, (response) => {
      const answered = () => ({ status: response.statusCode ?? 0, retryAfter: (response.headers["retry-after"] as string | undefined) ?? null });
      let read = 0;
      response.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read <= ANSWER_BODY_LIMIT_BYTES) return;
        // Enough: the status is all a push needs. The connection goes with the rest of the body.
        resolve(answered());
        response.destroy();
      });
      response.on("error", reject);
      response.on("end", () => resolve(answered()));
    });
    request.once("socket", () => (connected = true));
    request.on("error", reject);
    request.end(body ?? undefined);
  });
  return withDeadline(deadlineMs, "the push", answer, () => request.destroy()).catch((err: unknown) => {
    throw err instanceof DeadlineExceeded ? new PushTimedOut(err.message, connected) : err;
  });
}

type Outcome =
  | { kind: "sent" }
  | { kind: "gone"; status: number }
  | { kind: "retry"; why: string; retryAfterMs?: number }
  | { kind: "rejected"; status: number }
  | { kind: "refused"; why: string };

export function createPushDeliverer(options: PushDelivererOptions): Deliverer {
  const { pool, subject, publicBaseUrl, allowHosts = [], deadlineMs = DEFAULT_DEADLINES_MS.push } = options;
  const vapidKeys = typeof options.vapid === "function" ? options.vapid : () => options.vapid as VapidKeys;
  const pauses: OriginPauses = createOriginPauses({ pauseMs: options.originPauseMs });
  const allowed = (host: string) => allowHosts.includes(host);
  // Connections kept alive per origin. A batch delivery job sends its notifications at once, so the job slots
  // times the batch could each open one; MAX_SOCKETS_PER_ORIGIN bounds them, the rest wait for a free one.
  // Each new connection resolves its host once and connects only to the addresses it checked.
  const agentOptions = { keepAlive: true, maxSockets: MAX_SOCKETS_PER_ORIGIN, lookup: checkedLookup(options.resolve ?? systemResolver, allowed) };
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };

  // One VAPID JWT per push service origin, signed for 12 h and reused for an hour: an ES256 signature per push
  // would be the same token again (ALERTS_BENCH_PARTS=push npx tsx bench/alerts-fanout.ts, pushesPerSecond).
  const authorizations = new Map<string, { value: string; until: number }>();
  function authorizationFor(endpoint: URL): string {
    const now = Date.now();
    const cached = authorizations.get(endpoint.origin);
    if (cached && cached.until > now) return cached.value;
    const vapid = vapidKeys();
    const expiresAt = Math.floor(now / 1000) + VAPID_TOKEN_SECONDS;
    const { Authorization } = webpush.getVapidHeaders(endpoint.origin, subject, vapid.publicKey, vapid.privateKey, "aes128gcm", expiresAt);
    authorizations.set(endpoint.origin, { value: Authorization, until: now + VAPID_TOKEN_REUSE_MS });
    return Authorization;
  }

  async function sendOne(client: Queryable, subscription: Subscription, payload: string, urgency: "high" | "normal"): Promise<Outcome> {
    const url = new URL(subscription.endpoint);
    const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
    // Checked when subscribed; checked again, so a row written another way never sends a payload in clear text.
    if (url.protocol !== "https:" && !(url.protocol === "http:" && allowed(host))) {
      return { kind: "rejected", status: 0 };
    }
    // An IP literal is connected to without a lookup: checked here as the lookup checks a name's addresses.
    const literalRefusal = isIP(host) && !allowed(host) ? refusedAddress(host) : null;
    if (literalRefusal) return { kind: "refused", why: `refused address: ${literalRefusal}` };
    // Paused since the delivery job looked (heldUntil): this one waits for the pause's end.
    const pausedMs = pauses.pausedForMs(url.origin);
    if (pausedMs > 0) return { kind: "retry", why: "push origin paused after repeated timeouts", retryAfterMs: pausedMs };
    // vapidDetails null: the Authorization header (`vapid t=…, k=…`) is the cached one above.
    const details = webpush.generateRequestDetails(
      { endpoint: subscription.endpoint, keys: { p256dh: subscription.p256dh, auth: subscription.auth } },
      payload,
      { TTL: PUSH_TTL_SECONDS, urgency, vapidDetails: null as unknown as undefined, headers: { Authorization: authorizationFor(url) } },
    );
    let answer: Answer;
    try {
      // details.headers: Content-Length, Content-Type, Content-Encoding, TTL, Urgency and the Authorization above.
      answer = await post(url, details.headers, details.body ?? null, url.protocol === "https:" ? agents.https : agents.http, deadlineMs);
    } catch (err) {
      if (err instanceof AddressRefused) return { kind: "refused", why: err.message };
      if (err instanceof PushTimedOut) {
        // Only the origin's own slowness counts towards its pause, not a wait for one of our connections.
        if (err.connected) await pauses.recordTimeout(client, url.origin);
        return { kind: "retry", why: `push service timed out: ${err.message}${err.connected ? "" : " (no connection was free)"}` };
      }
      // The code only: an error's message may name the address the endpoint's name resolved to.
      const code = (err as NodeJS.ErrnoException).code;
      return { kind: "retry", why: `push service unreachable${code ? ` (${code})` : ""}` };
    }
    await pauses.recordAnswer(client, url.origin);
    const { status } = answer;
    if (status >= 200 && status < 300) return { kind: "sent" };
    if (status === 404 || status === 410) return { kind: "gone", status };
    if (status === 429 || status >= 500) {
      return { kind: "retry", why: `push service ${status}`, retryAfterMs: retryAfterMs(answer.retryAfter) };
    }
    return { kind: "rejected", status };
  }

  return {
    async deliver(notification, client = pool) {
      // The delivery job reads them with the row (jobs/delivery/store.ts loadForDelivery); other callers do not.
      const subscriptions =
        notification.pushSubscriptions ??
        (
          await client.query<Subscription>(
            `select id, endpoint, p256dh, auth from push_subscription where actor_id = $1::text order by created_at`,
            [notification.recipientActorId],
          )
        ).rows;
      if (subscriptions.length === 0) throw new DeliveryError(NO_PUSH_SUBSCRIPTION);
      const payload = pushPayload(notification, publicBaseUrl);
      const urgency = HIGH_URGENCY_KINDS.includes(notification.kind) ? "high" : "normal";
      const outcomes = await Promise.all(subscriptions.map((s) => sendOne(client, s, payload, urgency)));

      const gone = subscriptions.filter((_, i) => outcomes[i]!.kind === "gone").map((s) => s.id);
      if (gone.length > 0) await client.query(`delete from push_subscription where id = any($1::uuid[])`, [gone]);
      if (outcomes.some((o) => o.kind === "sent")) return;

      const retries = outcomes.filter((o): o is Extract<Outcome, { kind: "retry" }> => o.kind === "retry");
      if (retries.length > 0) {
        const waits = retries.map((r) => r.retryAfterMs).filter((ms): ms is number => ms !== undefined);
        throw new DeliveryError(retries.map((r) => r.why).join("; "), waits.length > 0 ? { retryAfterMs: Math.max(...waits) } : {});
      }
      const rejected = outcomes.filter((o): o is Extract<Outcome, { kind: "rejected" }> => o.kind === "rejected");
      if (rejected.length > 0) throw new DeliveryError(`${PROVIDER_REJECTED} the push: ${rejected.map((r) => r.status).join(", ")}`);
      const refused = outcomes.filter((o): o is Extract<Outcome, { kind: "refused" }> => o.kind === "refused");
      if (refused.length > 0) throw new DeliveryError(`${PUSH_ENDPOINT_REFUSED}: ${[...new Set(refused.map((r) => r.why))].join("; ")}`);
      throw new DeliveryError(NO_PUSH_SUBSCRIPTION);
    },
    async heldUntil(notification, client) {
      // Every subscription's origin paused: the notification waits for the first pause to end, with no attempt.
      const subscriptions = notification.pushSubscriptions ?? [];
      if (subscriptions.length === 0) return null;
      let first: Date | null = null;
      for (const subscription of subscriptions) {
        const origin = originOf(subscription.endpoint);
        const until = origin === null ? null : await pauses.pausedUntil(client, origin);
        if (until === null) return null;
        if (first === null || until < first) first = until;
      }
      return first;
    },
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
