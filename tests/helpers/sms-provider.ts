import { randomBytes } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { getExpectedTwilioSignature } from "twilio/lib/webhooks/webhooks.js";

/**
 * A real SMS provider for tests, speaking the Twilio-compatible REST API on
 * 127.0.0.1, and the phones on the other end of it:
 *
 * - `POST /2010-04-01/Accounts/{sid}/Messages.json` checks the basic auth
 *   (`sid:token`) and the form (To, From, Body, StatusCallback), records the
 *   text, and answers 201 `{sid, status: "queued"}`, or what the test queued
 *   for that number: an error JSON (`{code: 21610, …}` with 400), a 429 or
 *   5xx, a huge body, or no answer at all;
 * - `statusCallback(text, status)` posts the status of a text it took to the
 *   text's StatusCallback, as the provider does, signed (X-Twilio-Signature)
 *   by the twilio package's own getExpectedTwilioSignature;
 * - `textFrom(phone, body)` posts a text from a phone to the service's inbound
 *   webhook, signed the same way.
 *
 * The webhooks are signed over the URL the provider was given (the API's
 * PUBLIC_BASE_URL), and sent to where the API really listens: a proxy's work.
 */

export interface ProviderAnswer {
  status: number;
  json?: Record<string, unknown>;
  /** A raw body instead of JSON (an oversized or unreadable answer). */
  raw?: string;
  retryAfter?: string;
  /** Never answers: the sender's deadline must cut it. */
  hang?: boolean;
}

export interface ReceivedText {
  sid: string;
  to: string;
  from: string;
  body: string;
  statusCallback: string;
  at: number;
}

export interface SmsProviderOptions {
  accountSid: string;
  authToken: string;
  /** The service's number, To of inbound texts. */
  serviceNumber: string;
  /** Where the API's webhooks are, as the provider was told (PUBLIC_BASE_URL). */
  publicBaseUrl: string;
  /** Where the API really listens: the webhooks are posted there. */
  apiBaseUrl: () => string;
}

export interface WebhookAnswer {
  status: number;
  contentType: string | undefined;
  body: string;
}

export class TestSmsProvider {
  /** Texts the provider took (answered 2xx). */
  readonly texts: ReceivedText[] = [];
  /** Every send request, taken or not, with its answer's status; `auth` false when its credentials were wrong. */
  readonly attempts: Array<{ to: string; status: number; auth: boolean }> = [];
  private readonly answers = new Map<string, ProviderAnswer[]>();
  private readonly hanging = new Set<http.ServerResponse>();
  private constructor(
    private readonly server: http.Server,
    readonly options: SmsProviderOptions,
  ) {}

  static async start(options: SmsProviderOptions): Promise<TestSmsProvider> {
    const server = http.createServer();
    const provider = new TestSmsProvider(server, options);
    server.on("request", (req, res) => void provider.handle(req, res));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return provider;
  }

  /** SMS_API_BASE_URL for the notifier. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The next answers for texts to `to`, in order; afterwards 201 again. */
  answer(to: string, ...answers: ProviderAnswer[]): void {
    this.answers.set(to, [...(this.answers.get(to) ?? []), ...answers]);
  }

  textsTo(to: string): ReceivedText[] {
    return this.texts.filter((t) => t.to === to);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const { accountSid, authToken } = this.options;
    if (req.method !== "POST" || req.url !== `/2010-04-01/Accounts/${accountSid}/Messages.json`) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ code: 20404, message: "not found", status: 404 }));
      return;
    }
    const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
    const to = form.get("To") ?? "";
    const expected = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString("base64")}`;
    if (req.headers.authorization !== expected) {
      this.attempts.push({ to, status: 401, auth: false });
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ code: 20003, message: "Authenticate", status: 401 }));
      return;
    }
    const missing = ["To", "From", "Body"].filter((field) => !form.get(field));
    if (missing.length > 0 || req.headers["content-type"] !== "application/x-www-form-urlencoded") {
      this.attempts.push({ to, status: 400, auth: true });
      res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ code: 21604, message: `missing ${missing.join(", ")}`, status: 400 }));
      return;
    }
    const queued = this.answers.get(to);
    const next = queued?.shift();
    if (next?.hang) {
      this.attempts.push({ to, status: 0, auth: true });
      this.hanging.add(res);
      res.on("close", () => this.hanging.delete(res));
      return;
    }
    if (next && (next.status < 200 || next.status >= 300)) {
      this.attempts.push({ to, status: next.status, auth: true });
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (next.retryAfter) headers["retry-after"] = next.retryAfter;
      res.writeHead(next.status, headers).end(next.raw ?? JSON.stringify(next.json ?? { status: next.status, message: "error" }));
      return;
    }
    const sid = `SM${randomBytes(16).toString("hex")}`;
    this.attempts.push({ to, status: next?.status ?? 201, auth: true });
    this.texts.push({ sid, to, from: form.get("From")!, body: form.get("Body")!, statusCallback: form.get("StatusCallback") ?? "", at: Date.now() });
    const answer = { sid, status: "queued", to, from: form.get("From"), body: form.get("Body"), account_sid: accountSid, num_segments: "1" };
    res.writeHead(next?.status ?? 201, { "content-type": "application/json" }).end(next?.raw ?? JSON.stringify(answer));
  }

  /** Posts a signed form to a webhook path, as the provider does; `sign` false sends it unsigned, a string sends that signature. */
  async post(path: string, params: Record<string, string>, sign: boolean | string = true): Promise<WebhookAnswer> {
    const signedUrl = `${this.options.publicBaseUrl.replace(/\/+$/, "")}${path}`;
    const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded; charset=utf-8" };
    if (sign !== false) headers["x-twilio-signature"] = typeof sign === "string" ? sign : getExpectedTwilioSignature(this.options.authToken, signedUrl, params);
    const res = await fetch(`${this.options.apiBaseUrl()}${path}`, { method: "POST", headers, body: new URLSearchParams(params).toString() });
    return { status: res.status, contentType: res.headers.get("content-type") ?? undefined, body: await res.text() };
  }

  /** The provider's status callback of a text it took: to the StatusCallback the text named. */
  async statusCallback(text: ReceivedText, status: string, errorCode?: number): Promise<WebhookAnswer> {
    const path = new URL(text.statusCallback).pathname;
    const params: Record<string, string> = {
      AccountSid: this.options.accountSid,
      MessageSid: text.sid,
      SmsSid: text.sid,
      MessageStatus: status,
      SmsStatus: status,
      To: text.to,
      From: text.from,
      ApiVersion: "2010-04-01",
    };
    if (errorCode !== undefined) params.ErrorCode = String(errorCode);
    return this.post(path, params);
  }

  /** A phone texting the service's number. */
  async textFrom(phone: string, body: string, messageSid = `SM${randomBytes(16).toString("hex")}`): Promise<WebhookAnswer & { messageSid: string }> {
    const params = {
      AccountSid: this.options.accountSid,
      MessageSid: messageSid,
      SmsMessageSid: messageSid,
      From: phone,
      To: this.options.serviceNumber,
      Body: body,
      NumMedia: "0",
      ApiVersion: "2010-04-01",
    };
    return { ...(await this.post("/v1/sms/inbound", params)), messageSid };
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
