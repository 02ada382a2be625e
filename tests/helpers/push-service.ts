import { createECDH, randomBytes, type ECDH } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { importJWK, jwtVerify, type JWTPayload } from "jose";
import { trickleBody } from "./trickle.js";

/**
 * A real Web Push service (RFC 8030) for tests, over http on 127.0.0.1 (an
 * allow-listed host: PUSH_ENDPOINT_ALLOW). It plays both ends a browser and
 * its push service would: it makes each subscription's key pair and auth
 * secret (as PushManager.subscribe does), and for each POST to an endpoint it
 *
 * - checks the VAPID Authorization header (RFC 8292): `vapid t=<jwt>, k=<key>`,
 *   `k` the public key the API serves, the JWT ES256-signed by it, with `aud`
 *   this service's origin, `exp` within 24 h and a `sub`;
 * - decrypts the body (RFC 8291, aes128gcm) with the subscription's private
 *   key and auth secret, using http_ece;
 * - records the request (headers, claims, decrypted payload);
 * - answers what the test told it for that endpoint: 201 by default, or a
 *   queue of answers (404, 410, 413, 429 with Retry-After, 503, …), or a
 *   status whose body then comes one byte every `trickleEveryMs` for ever
 *   (a push service that stalls: tests/helpers/trickle.ts).
 *
 * A request that fails a check gets 400 (VAPID) and is recorded with `error`.
 * A JWT's ES256 signature is verified once per distinct token (a notifier
 * reuses one for hours), and its claims (aud, exp, sub) and `k` on every
 * request: the signature of the same bytes cannot change, and verifying it
 * again cost the bench's push drain CPU on the cores the notifier needs
 * (docs/decisions/0080).
 */

const ece = createRequire(import.meta.url)("http_ece") as {
  decrypt(buffer: Buffer, params: { version: "aes128gcm"; privateKey: ECDH; authSecret: Buffer }): Buffer;
};

export interface PushAnswer {
  status: number;
  retryAfter?: string;
  /** The status and headers at once, then a body of one byte this often that never ends. */
  trickleEveryMs?: number;
}

export interface PushRequest {
  endpoint: string;
  at: number;
  headers: http.IncomingHttpHeaders;
  claims?: JWTPayload;
  /** The decrypted body as text, and parsed when it is JSON. */
  text?: string;
  payload?: unknown;
  status: number;
  error?: string;
}

export interface TestSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export class TestPushService {
  readonly requests: PushRequest[] = [];
  private readonly server: http.Server;
  private readonly receivers = new Map<string, { ecdh: ECDH; auth: Buffer }>();
  private readonly answers = new Map<string, PushAnswer[]>();
  private vapidKey: string | null = null;
  private stallingEveryMs: number | null = null;
  /** Tokens whose signature verified, by `k` and token: their claims and header. */
  private readonly verifiedTokens = new Map<string, { payload: JWTPayload; alg: string | undefined }>();
  origin = "";
  /** TCP connections the service accepted: far fewer than requests when the notifier keeps connections alive. */
  connections = 0;

  private constructor() {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.on("connection", () => this.connections++);
  }

  /** Listens on 127.0.0.1; its endpoints name `host` (a name a test's resolver maps to 127.0.0.1, or the address itself). */
  static async start(host = "127.0.0.1"): Promise<TestPushService> {
    const service = new TestPushService();
    service.server.listen(0, "127.0.0.1");
    await once(service.server, "listening");
    service.origin = `http://${host}:${(service.server.address() as AddressInfo).port}`;
    return service;
  }

  /** The VAPID public key the API serves (GET /v1/push/public-key): requests must be signed by it. */
  expectVapidKey(publicKey: string): void {
    this.vapidKey = publicKey;
  }

  /** A new browser subscription on this service: what PushSubscription.toJSON() gives. */
  subscribe(): TestSubscription {
    const ecdh = createECDH("prime256v1");
    ecdh.generateKeys();
    const auth = randomBytes(16);
    const endpoint = `${this.origin}/push/${randomBytes(12).toString("base64url")}`;
    this.receivers.set(new URL(endpoint).pathname, { ecdh, auth });
    return { endpoint, keys: { p256dh: ecdh.getPublicKey().toString("base64url"), auth: auth.toString("base64url") } };
  }

  /** The answers for an endpoint's next requests, in order; 201 once they are used up. */
  answer(endpoint: string, ...answers: PushAnswer[]): void {
    this.answers.set(new URL(endpoint).pathname, answers);
  }

  /** Every endpoint's answer from now on, whatever answer() queued: a body of one byte every `everyMs` (null: back to normal). */
  stall(everyMs: number | null): void {
    this.stallingEveryMs = everyMs;
  }

  requestsTo(endpoint: string): PushRequest[] {
    return this.requests.filter((r) => r.endpoint === endpoint);
  }

  private async verifyVapid(header: string | undefined): Promise<JWTPayload> {
    const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(header ?? "");
    if (!match) throw new Error(`Authorization is not "vapid t=…, k=…": ${header}`);
    const [, token, key] = match as unknown as [string, string, string];
    if (this.vapidKey !== null && key !== this.vapidKey) throw new Error("k is not the API's public key");
    const cacheKey = `${key} ${token}`;
    let verified = this.verifiedTokens.get(cacheKey);
    if (!verified) {
      const point = Buffer.from(key, "base64url");
      if (point.length !== 65 || point[0] !== 4) throw new Error("k is not an uncompressed P-256 point");
      const jwk = { kty: "EC", crv: "P-256", x: point.subarray(1, 33).toString("base64url"), y: point.subarray(33).toString("base64url") };
      const { payload, protectedHeader } = await jwtVerify(token, await importJWK(jwk, "ES256"), { audience: this.origin, algorithms: ["ES256"] });
      verified = { payload, alg: protectedHeader.alg };
      this.verifiedTokens.set(cacheKey, verified);
    }
    const { payload, alg } = verified;
    if (alg !== "ES256") throw new Error("not ES256");
    const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    if (!audiences.includes(this.origin)) throw new Error("aud is not this push service's origin");
    const now = Math.floor(Date.now() / 1000);
    if (typeof payload.exp !== "number" || payload.exp <= now) throw new Error("exp missing or past");
    if (payload.exp > now + 24 * 3600) throw new Error("exp missing or more than 24 h away");
    if (typeof payload.sub !== "string" || !/^(mailto:|https:)/.test(payload.sub)) throw new Error("sub is not a mailto: or https: URL");
    return payload;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const path = new URL(req.url ?? "/", this.origin).pathname;
    const record: PushRequest = { endpoint: `${this.origin}${path}`, at: Date.now(), headers: req.headers, status: 0 };
    this.requests.push(record);
    const send = (status: number, headers: Record<string, string> = {}) => {
      record.status = status;
      res.writeHead(status, headers).end();
    };
    const receiver = this.receivers.get(path);
    if (req.method !== "POST" || !receiver) return send(404);
    try {
      record.claims = await this.verifyVapid(req.headers.authorization);
      if (req.headers["content-encoding"] !== "aes128gcm") throw new Error(`Content-Encoding ${req.headers["content-encoding"]}`);
      record.text = ece.decrypt(body, { version: "aes128gcm", privateKey: receiver.ecdh, authSecret: receiver.auth }).toString("utf8");
      try {
        record.payload = JSON.parse(record.text);
      } catch {
        record.payload = undefined;
      }
    } catch (err) {
      record.error = (err as Error).message;
      return send(400);
    }
    const answer = this.stallingEveryMs !== null ? { status: 201, trickleEveryMs: this.stallingEveryMs } : (this.answers.get(path)?.shift() ?? { status: 201 });
    if (answer.trickleEveryMs !== undefined) {
      record.status = answer.status;
      return trickleBody(res, answer.status, answer.trickleEveryMs);
    }
    if (answer.status === 404 || answer.status === 410) this.receivers.delete(path);
    send(answer.status, answer.retryAfter !== undefined ? { "retry-after": answer.retryAfter } : { location: `${this.origin}/message/${randomBytes(6).toString("hex")}` });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
