import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUnsubscribeToken } from "../../lib/alert-unsubscribe.js";
import { maskUrl, REDACTED } from "../../lib/logger.js";
import type { TestApi } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, freshActor } from "../safety/helpers.js";
import { animalWithTag, postTagForm } from "../tag/helpers.js";

/**
 * The tag and emergency tokens in a path and a token in a query string are
 * bearer secrets: the API's request log lines carry them masked. The app logs
 * into a stream here, at info, as api/main.ts's logger does to stdout.
 */
let h: Harness;
let api: TestApi;
const lines: string[] = [];

beforeAll(async () => {
  const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(line) });
  h = await startHarness({ LOG_LEVEL: "info" }, { logger });
  api = h.api;
});
afterAll(async () => {
  await h?.close();
});

/** The log lines written while `run` ran, parsed. */
async function logged(run: () => Promise<unknown>): Promise<{ text: string; urls: string[] }> {
  const from = lines.length;
  await run();
  const written = lines.slice(from);
  const urls = written.map((line) => JSON.parse(line) as { req?: { url?: string } }).flatMap((line) => (line.req?.url ? [line.req.url] : []));
  return { text: written.join(""), urls };
}

describe("request log lines mask the tokens in a URL", () => {
  it("masks the token of /t/{token}, /t/{token}/message and /emergency/{token}, for a live token and a malformed one", async () => {
    const owner = freshActor("log-owner");
    const { token } = await animalWithTag(api, owner);
    const malformed = "not-a-token-but-still-a-secret-to-whoever-sent-it";
    const { text, urls } = await logged(async () => {
      for (const secret of [token, malformed]) {
        expect((await call(api, { url: `/t/${secret}` })).statusCode).toBeLessThan(500);
        expect((await call(api, { url: `/emergency/${secret}` })).statusCode).toBeLessThan(500);
        expect((await call(api, { url: `/emergency/${secret}`, headers: { accept: "text/html" } })).statusCode).toBe(303);
        expect((await postTagForm(api, secret, { message: "I found your dog near the park", contact: "555-0100" })).statusCode).toBeLessThan(500);
      }
    });
    expect(urls.length).toBeGreaterThanOrEqual(8);
    expect(text).not.toContain(token);
    expect(text).not.toContain(malformed);
    expect(urls).toContain(`/t/${REDACTED}`);
    expect(urls).toContain(`/t/${REDACTED}/message`);
    expect(urls).toContain(`/emergency/${REDACTED}`);
  });

  it("masks a token= query parameter, whatever the route, and keeps the rest of the URL", async () => {
    const unsubscribe = signUnsubscribeToken(api.config.ALERT_UNSUBSCRIBE_SECRET, [crypto.randomUUID()]);
    const confirm = "a-confirmation-token-from-an-email-link";
    const { text, urls } = await logged(async () => {
      await call(api, { method: "POST", url: `/v1/alert-subscriptions/unsubscribe?token=${unsubscribe}` });
      await call(api, { url: `/v1/me/email/confirm?token=${confirm}&lang=de` });
      await call(api, { url: `/nowhere?Token=${confirm}` });
    });
    expect(text).not.toContain(unsubscribe);
    expect(text).not.toContain(confirm);
    expect(urls).toContain(`/v1/alert-subscriptions/unsubscribe?token=${REDACTED}`);
    expect(urls).toContain(`/v1/me/email/confirm?token=${REDACTED}&lang=de`);
    expect(urls).toContain(`/nowhere?Token=${REDACTED}`);
  });

  it("leaves URLs without a secret as they are", () => {
    for (const url of ["/v1/safety/lost-reports?limit=5", "/t/assets/tag.css", "/healthz", "/v1/photos/3f0c/thumb"]) expect(maskUrl(url)).toBe(url);
    expect(maskUrl("//t/abc?x=1&access_token=s3cret#frag")).toBe(`//t/${REDACTED}?x=1&access_token=${REDACTED}#frag`);
  });
});
