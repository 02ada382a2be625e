import webpush from "web-push";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestPushService, type TestSubscription } from "../helpers/push-service.js";

/**
 * The local push service the push tests and the bench rely on keeps checking
 * every request while it verifies a JWT's signature once per distinct token:
 * a token it verified before does not let another key, audience or a
 * tampered token through.
 */

const served = webpush.generateVAPIDKeys();
const other = webpush.generateVAPIDKeys();
let service: TestPushService;
let subscription: TestSubscription;

beforeAll(async () => {
  service = await TestPushService.start();
  service.expectVapidKey(served.publicKey);
  subscription = service.subscribe();
});
afterAll(() => service.close());

function authorization(keys: { publicKey: string; privateKey: string }, audience = service.origin): string {
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  return webpush.getVapidHeaders(audience, "mailto:tests@animal-safety.example", keys.publicKey, keys.privateKey, "aes128gcm", expiresAt).Authorization;
}

/** Sends "hello" with this Authorization header; the status and what the service recorded. */
async function send(header: string) {
  const details = webpush.generateRequestDetails(subscription, "hello", {
    TTL: 60,
    vapidDetails: null as unknown as undefined,
    headers: { Authorization: header },
  });
  const headers = Object.fromEntries(
    Object.entries(details.headers)
      .filter(([name]) => name.toLowerCase() !== "content-length")
      .map(([name, value]) => [name, String(value)]),
  );
  const before = service.requests.length;
  const res = await fetch(details.endpoint, { method: "POST", headers, body: new Uint8Array(details.body!) });
  return { status: res.status, record: service.requests[before]! };
}

/** `vapid t=<token>, k=<key>` split into its two parts. */
function parts(header: string): { token: string; key: string } {
  const [, token, key] = /^vapid t=([^,\s]+),\s*k=(\S+)$/.exec(header)!;
  return { token: token!, key: key! };
}

describe("the local push service checks each request's VAPID header", () => {
  it("takes a token signed by the served key, again and again, decrypting each body", async () => {
    const header = authorization(served);
    for (let i = 0; i < 2; i++) {
      const { status, record } = await send(header);
      expect(status).toBe(201);
      expect(record.error).toBeUndefined();
      expect(record.text).toBe("hello");
      expect(record.claims?.aud).toBe(service.origin);
    }
  });

  it("refuses a token it verified before when k is another key", async () => {
    const { token } = parts(authorization(served));
    expect((await send(`vapid t=${token}, k=${served.publicKey}`)).status).toBe(201);
    const { status, record } = await send(`vapid t=${token}, k=${other.publicKey}`);
    expect(status).toBe(400);
    expect(record.error).toMatch(/public key/);
  });

  it("refuses a token signed by another key under the served key's k", async () => {
    const { token } = parts(authorization(other));
    const { status, record } = await send(`vapid t=${token}, k=${served.publicKey}`);
    expect(status).toBe(400);
    expect(record.error).toBeDefined();
  });

  it("refuses a token for another audience", async () => {
    const { status, record } = await send(authorization(served, "https://push.example.org"));
    expect(status).toBe(400);
    expect(record.error).toBeDefined();
  });

  it("refuses a verified token whose claims were changed, its signature kept", async () => {
    const header = authorization(served);
    expect((await send(header)).status).toBe(201);
    const { token, key } = parts(header);
    const [head, claims, signature] = token.split(".") as [string, string, string];
    const changed = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(claims, "base64url").toString("utf8")), sub: "mailto:someone-else@example.org" }),
    ).toString("base64url");
    const { status, record } = await send(`vapid t=${head}.${changed}.${signature}, k=${key}`);
    expect(status).toBe(400);
    expect(record.error).toBeDefined();
  });
});
