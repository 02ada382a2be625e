import type { IncomingMessage } from "node:http";
import { PassThrough } from "node:stream";
import type { FastifyInstance, FastifyServerOptions } from "fastify";
import type { ApiConfig } from "../../lib/config.js";
import { problems } from "../../lib/problems.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * "own": the route bounds the time of its body itself (the photo upload:
     * its slot wait, idle and body timeouts), so API_REQUEST_TIMEOUT_MS and the
     * idle socket timeout leave it alone.
     */
    timeLimits?: "own";
  }
}

/** Any real client sends its headers in one go; a slower one is holding a socket open. */
const HEADERS_TIMEOUT_MS = 10_000;
/** A socket silent both ways this long is closed: far above any handler's statements (10 s each) and a client reading its answer. */
const IDLE_SOCKET_MS = 60_000;
/** As nginx's keepalive_requests: a keep-alive connection is closed after this many, so none lives for ever and load spreads again. */
const MAX_REQUESTS_PER_SOCKET = 1_000;
/** How often Node checks its header and request deadlines (30 s by default, which would let a deadline run 30 s late). */
const DEADLINE_CHECK_MS = 1_000;

/**
 * Fastify's server options for the time limits. Node's requestTimeout is one
 * value for the whole server and cannot be lifted for one route, so it is
 * only the outer bound here: the longest any route lets a request take to
 * arrive, which is the photo upload's (its slot wait and body time, plus the
 * ordinary allowance). API_REQUEST_TIMEOUT_MS itself is applied per request by
 * registerRequestTimeLimit.
 */
export function serverTimeLimits(
  config: ApiConfig,
): Pick<FastifyServerOptions, "requestTimeout" | "connectionTimeout" | "maxRequestsPerSocket"> & { http: { headersTimeout: number; connectionsCheckingInterval: number } } {
  return {
    requestTimeout: config.API_REQUEST_TIMEOUT_MS + config.API_PHOTO_UPLOAD_WAIT_MS + config.API_PHOTO_UPLOAD_BODY_TIMEOUT_MS,
    connectionTimeout: IDLE_SOCKET_MS,
    maxRequestsPerSocket: MAX_REQUESTS_PER_SOCKET,
    http: { headersTimeout: Math.min(HEADERS_TIMEOUT_MS, config.API_REQUEST_TIMEOUT_MS), connectionsCheckingInterval: DEADLINE_CHECK_MS },
  };
}

const seconds = (ms: number) => `${ms / 1000} s`;

/** A request whose headers say it has no body arrives whole with them. */
const hasBody = (raw: IncomingMessage) =>
  raw.headers["transfer-encoding"] !== undefined || (raw.headers["content-length"] !== undefined && raw.headers["content-length"] !== "0");

/**
 * Every request's body must have arrived within `limitMs` of its headers, or
 * it is answered 408 request-timeout (problem+json, through the error
 * handler) and its connection closed; a body still arriving after another
 * answer is cut off then too. The body stream the parser reads is failed at
 * the deadline, so the answer goes out once, the ordinary way. A route marked
 * `timeLimits: "own"` bounds its body itself and has no idle socket timeout
 * either: its slot wait leaves the socket unread on purpose.
 */
export function registerRequestTimeLimit(app: FastifyInstance, limitMs: number): void {
  const deadlines = new WeakMap<IncomingMessage, { at: number; fail?: () => void }>();

  app.addHook("onRequest", (request, reply, done) => {
    const raw = request.raw;
    if (request.routeOptions.config.timeLimits === "own") {
      // inject()'s stand-in request has no socket to time.
      if (typeof raw.setTimeout === "function") raw.setTimeout(0);
      return done();
    }
    if (!hasBody(raw) || raw.complete) return done();
    const deadline: { at: number; fail?: () => void } = { at: performance.now() + limitMs };
    deadlines.set(raw, deadline);
    const timer = setTimeout(() => {
      if (raw.complete || raw.destroyed) return;
      // Answered already (a refusal before the body was read): nothing will read the rest.
      if (reply.sent) return void raw.destroy();
      deadline.fail?.();
    }, limitMs);
    const settle = () => clearTimeout(timer);
    raw.once("end", settle);
    raw.once("close", settle);
    done();
  });

  app.addHook("preParsing", async (request, reply, payload) => {
    const deadline = deadlines.get(request.raw);
    if (!deadline || request.raw.complete) return payload;
    const limited = new PassThrough();
    deadline.fail = () => {
      reply.header("connection", "close");
      limited.destroy(problems.requestTimeout(`the request did not arrive within ${seconds(limitMs)}`));
      // Read and dropped until the answer has gone and the connection closes, so no unread bytes reset it first.
      payload.unpipe(limited);
      payload.resume();
    };
    // The parser listens for the failure; this keeps a body nobody reads (a route without a parser of it) from throwing it.
    limited.on("error", () => undefined);
    payload.pipe(limited);
    if (performance.now() >= deadline.at) deadline.fail();
    return limited;
  });
}
