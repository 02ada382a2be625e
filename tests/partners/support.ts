import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import { admin } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, expectProblem } from "../safety/helpers.js";

/** Shelter partners: a harness with integration keys, partners made through the admin API, and calls as ASM3 makes them. */

export const API_KEY = "test-integration-key-asm3-0123456789";
export const OTHER_KEY = "test-integration-key-other-program";

export function startPartnerHarness(extra: Record<string, string> = {}): Promise<Harness> {
  return startHarness({ PARTNER_API_KEYS: `${API_KEY},${OTHER_KEY}`, ...extra });
}

let partners = 0;

export interface TestPartner {
  id: string;
  password: string;
  loginEmail: string;
  name: string;
}

export const partnerBody = (overrides: Record<string, unknown> = {}) => {
  partners += 1;
  return {
    name: `Riverside Animal Shelter ${partners}`,
    kind: "shelter",
    location: { lat: 48.8584, lon: 2.2945 },
    publicContact: { phone: "+33 1 23 45 67 89", email: `desk${partners}@riverside-shelter.example`, address: "1 Quai Branly, Paris", website: "https://riverside-shelter.example" },
    loginEmail: `asm3-${partners}-${Date.now()}@riverside-shelter.example`,
    // A US shelter whose software writes its locale's dates (ASM3 itself sends ISO: asm3.i18n.format_date).
    dateFormat: "MM/DD/YYYY",
    ...overrides,
  };
};

export async function createPartner(h: Harness, overrides: Record<string, unknown> = {}): Promise<TestPartner> {
  const body = partnerBody(overrides);
  const res = await call(h.api, { method: "POST", url: "/v1/admin/partners", headers: admin(), payload: body });
  expect(res.statusCode, res.body).toBe(201);
  return { ...res.json(), loginEmail: body.loginEmail as string, name: body.name as string };
}

/** A call to the partner API with the integration key, and a bearer token when given. */
export function partnerCall(h: Harness, options: InjectOptions & { token?: string; key?: string | null; ip?: string }): Promise<LightMyRequestResponse> {
  const { token, key = API_KEY, ip, headers, ...rest } = options;
  return call(h.api, {
    ...rest,
    ...(ip ? { remoteAddress: ip } : {}),
    headers: {
      ...(key !== null ? { "x-api-key": key } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
  });
}

export async function login(h: Harness, partner: TestPartner): Promise<string> {
  const res = await partnerCall(h, {
    method: "POST",
    url: "/partners/v2/auth/login",
    headers: { "content-type": "application/json" },
    payload: { email: partner.loginEmail, password: partner.password },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().accessToken;
}

let animals = 0;

/** The body ASM3's processAnimal builds, field for field (src/asm3/publishers/petcolovelost.py). */
export function asm3Animal(overrides: Record<string, unknown> = {}) {
  animals += 1;
  return {
    externalId: `D2025${String(animals).padStart(4, "0")}`,
    displayId: `D2025${String(animals).padStart(4, "0")}`,
    birthDate: "03/14/2021",
    description: "Friendly, came in without a collar.",
    address: { city: "", country: "", line1: "12 Rue Cler, 75007", line2: "", postalCode: "", state: "" },
    intakeDate: "11/20/2025",
    name: "Biscuit",
    metadata: { system_animal_id: 1000 + animals },
    microchip: "250268500123456 981020000654321",
    shelterId: "66113416-090e-468b-b484-043cd4d8413d",
    species: "dog",
    status: "found",
    size: "MEDIUM",
    altered: true,
    breed: "Beagle Labrador Retriever",
    weight: 423,
    sex: "male",
    ...overrides,
  };
}

export async function publish(h: Harness, token: string, body: object): Promise<LightMyRequestResponse> {
  return partnerCall(h, { method: "POST", url: "/partners/v2/animals", token, payload: body });
}

/** A partner API error: problem+json whose `message` repeats `detail`, which is where ASM3's publisher reads it. */
export function expectPartnerProblem(res: LightMyRequestResponse, status: number, slug: string): void {
  expectProblem(res, status, slug);
  const body = res.json();
  expect(body.message, res.body).toBe(body.detail);
  expect(typeof body.message).toBe("string");
}
