import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import type { ModerationTargetType } from "../../lib/moderation.js";
import type { TestApi } from "../helpers/app.js";
import type { TestDatabase } from "../helpers/db.js";

/** Requests and records the safety, emergency and moderation test files share (their harness: tests/helpers/harness.ts). */

let ipCounter = 0;

/** A client address of its own, so the in-memory per-IP limiter (tested in tests/plugins) stays out of the way. */
export function freshIp(): string {
  ipCounter += 1;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
}

export function call(api: TestApi, options: InjectOptions): Promise<LightMyRequestResponse> {
  return api.app.inject({ remoteAddress: freshIp(), ...options });
}

export function expectProblem(res: LightMyRequestResponse, status: number, slug: string): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
  expect(res.json().type).toMatch(new RegExp(`/${slug}$`));
}

export const lostReportBody = (overrides: Record<string, unknown> = {}) => ({
  animal: { name: "Rex", species: "dog", breed: "Beagle", colors: ["brown", "white"], microchipId: "CHIP-12345" },
  lastSeenAt: "2025-11-20T08:00:00Z",
  location: { lat: 48.8566, lon: 2.3522 },
  description: "Wearing a red collar",
  verificationDetail: "scar under the left ear",
  ...overrides,
});

export const foundReportBody = (overrides: Record<string, unknown> = {}) => ({
  animal: { species: "cat", colors: ["black"] },
  foundAt: "2025-11-20T09:00:00Z",
  location: { lat: 48.86, lon: 2.35 },
  ...overrides,
});

let actorCounter = 0;
/** A new actor id: report creation is throttled per actor. */
export function freshActor(prefix = "user"): string {
  actorCounter += 1;
  return `${prefix}-${actorCounter}`;
}

async function createReport(api: TestApi, path: string, actor: string, payload: object): Promise<string> {
  const res = await call(api, { method: "POST", url: path, headers: { "x-debug-actor": actor }, payload });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

export const createLostReport = (api: TestApi, actor: string, overrides: Record<string, unknown> = {}) =>
  createReport(api, "/v1/safety/lost-reports", actor, lostReportBody(overrides));

export const createFoundReport = (api: TestApi, actor: string, overrides: Record<string, unknown> = {}) =>
  createReport(api, "/v1/safety/found-reports", actor, foundReportBody(overrides));

/** What an admin's quarantine or remove action leaves behind (that endpoint belongs to the admin module). */
export async function moderate(
  db: TestDatabase,
  targetType: ModerationTargetType,
  targetId: string,
  state: "quarantined" | "removed" = "quarantined",
): Promise<void> {
  await db.pool.query(
    `insert into moderation_content_state (target_type, target_id, state, applied_by) values ($1, $2, $3, 'admin-1')`,
    [targetType, targetId, state],
  );
}

export async function count(db: TestDatabase, sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await db.pool.query(`select count(*)::int as n from (${sql}) q`, params);
  return rows[0].n;
}
