import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import type { TestApi } from "../helpers/app.js";
import { call } from "../safety/helpers.js";

/** What a browser sends with a share page's form: urlencoded fields, HTML accepted. */
export function postShareForm(
  api: TestApi,
  url: string,
  fields: Record<string, string>,
  options: Partial<InjectOptions> = {},
): Promise<LightMyRequestResponse> {
  return call(api, {
    method: "POST",
    url,
    payload: new URLSearchParams(fields).toString(),
    ...options,
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "text/html", ...options.headers },
  });
}

/** GET as a browser does: HTML accepted, in the given language. */
export const browse = (api: TestApi, url: string, headers: Record<string, string> = {}) =>
  call(api, { url, headers: { accept: "text/html", ...headers } });

/** The report's short code, as the owner's views carry it in shortUrl. */
export async function shortCodeOf(api: TestApi, kind: "lost" | "found", id: string): Promise<string> {
  const res = await call(api, { url: `/v1/safety/${kind}-reports/${id}` });
  expect(res.statusCode, res.body).toBe(200);
  const code = /\/s\/([^/]+)$/.exec(res.json().shortUrl as string)?.[1];
  if (!code) throw new Error(`no short code in ${res.body}`);
  return code;
}
