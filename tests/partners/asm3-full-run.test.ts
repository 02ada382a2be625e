import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Harness } from "../helpers/harness.js";
import { Asm3Shelter, IDTYPE_PETCOLOVELOST, stray } from "./asm3-publisher.js";
import { API_KEY, createPartner, startPartnerHarness } from "./support.js";

/**
 * A shelter's first publish of 300 animals with a photo each, from one
 * address, as ASM3's publisher sends it (tests/partners/asm3-publisher.ts):
 * 901 calls one after the other, past the per-address limiter's burst and
 * past the partner's 600 a minute. The publisher retries nothing, so a 429
 * would lose an animal for the run: none comes. Past its bucket the
 * partner's calls wait for their tokens instead (api/partners/access.ts).
 * `npm run bench:partners` times the same run.
 */

let h: Harness;
let shelter: Asm3Shelter;
const statuses: number[] = [];

beforeAll(async () => {
  h = await startPartnerHarness();
  const partner = await createPartner(h, { name: "Big City Shelter", dateFormat: "YYYY-MM-DD" });
  shelter = new Asm3Shelter(
    { email: partner.loginEmail, password: partner.password, apiKey: API_KEY, shelterId: "big-city" },
    "https://photos.shelter.example/service",
    "bigcity",
    "kg",
    async (request) => {
      const res = await h.api.app.inject({ method: request.method, url: `/partners${request.path}`, headers: request.headers, payload: request.body, remoteAddress: "198.51.100.7" });
      statuses.push(res.statusCode);
      return { status: res.statusCode, body: res.body };
    },
  );
  const intake = new Date(new Date().toISOString().slice(0, 10));
  for (let i = 0; i < 300; i++) shelter.animals.push(stray(i, intake));
});
afterAll(() => h?.close());

describe("300 animals with photos in one run", () => {
  it("get no 429 and no error: every animal created, its photos accepted, and recorded as published", async () => {
    const { processed } = await shelter.run(new Date());
    expect(shelter.log.errors).toEqual([]);
    expect(statuses).toHaveLength(901);
    expect(statuses.filter((s) => s === 429)).toEqual([]);
    expect(new Set(statuses)).toEqual(new Set([200, 201, 202, 204]));
    expect(processed).toHaveLength(300);
    expect(shelter.published.size).toBe(300);
    expect(shelter.animals.every((an) => /^[0-9a-f-]{36}$/.test(an.EXTRAIDS[IDTYPE_PETCOLOVELOST] ?? ""))).toBe(true);
    const { rows } = await h.db.pool.query(
      `select (select count(*)::int from safety_found_report where status = 'open') as reports, (select count(*)::int from partner_photo_fetch) as fetches`,
    );
    expect(rows[0]).toEqual({ reports: 300, fetches: 300 });
  });
});
