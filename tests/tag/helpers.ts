import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import { as, type TestApi } from "../helpers/app.js";
import { call } from "../safety/helpers.js";

/** An animal with a live tag (emergency profile), registered through the API. */
export async function animalWithTag(
  api: TestApi,
  owner: string,
  animal: Record<string, unknown> = { name: "Rex", species: "dog", breed: "Beagle", colors: ["brown", "white"] },
  profile: Record<string, unknown> = { showName: true, medicalNotes: "Diabetic: insulin twice a day", instructions: "Please keep him on a lead" },
): Promise<{ animalId: string; token: string }> {
  const created = await call(api, { method: "POST", url: "/v1/animals", headers: as(owner), payload: animal });
  expect(created.statusCode, created.body).toBe(201);
  const animalId = created.json().id as string;
  const put = await call(api, { method: "PUT", url: `/v1/animals/${animalId}/emergency-profile`, headers: as(owner), payload: profile });
  expect(put.statusCode, put.body).toBe(200);
  return { animalId, token: put.json().token as string };
}

/** Reports the animal lost from its profile (POST /v1/animals/{id}/lost); the report id. */
export async function reportAnimalLost(api: TestApi, owner: string, animalId: string, overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await call(api, {
    method: "POST",
    url: `/v1/animals/${animalId}/lost`,
    headers: as(owner),
    payload: { lastSeenAt: "2025-11-20T08:00:00Z", location: { lat: 48.8566, lon: 2.3522 }, ...overrides },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id as string;
}

/** What a browser sends with the tag page's form: urlencoded fields, HTML accepted. */
export function postTagForm(
  api: TestApi,
  token: string,
  fields: Record<string, string>,
  options: Partial<InjectOptions> = {},
): Promise<LightMyRequestResponse> {
  return call(api, {
    method: "POST",
    url: `/t/${token}/message`,
    payload: new URLSearchParams(fields).toString(),
    ...options,
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "text/html", ...options.headers },
  });
}

/** The scan id the page's form carries (a hidden field). */
export function scanIdOf(html: string): string {
  const match = /name="scan" value="([0-9a-f-]{36})"/.exec(html);
  if (!match) throw new Error("no scan id in the page");
  return match[1]!;
}
