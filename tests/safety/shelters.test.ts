import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, as } from "../helpers/app.js";
import { asm3Animal, createPartner, login, partnerCall, publish, startPartnerHarness, type TestPartner } from "../partners/support.js";
import type { Harness } from "../helpers/harness.js";
import { call, createLostReport, expectProblem, freshActor, moderate } from "./helpers.js";

/**
 * GET /v1/safety/shelters (contract part 4): shelter partners near a point,
 * nearest first, with their public contact, distance, stray hold and the
 * animals they hold now; and the first five within 25 km on the owner's view
 * of a lost report.
 */

let h: Harness;
// Around the Louvre: three partners at about 1, 5 and 20 km, one 60 km away, and a suspended one at 2 km.
const here = { lat: 48.8606, lon: 2.3376 };
const places = {
  near: { lat: 48.8666, lon: 2.3436 },
  mid: { lat: 48.9006, lon: 2.3376 },
  far: { lat: 48.8606, lon: 2.6106 },
  away: { lat: 49.3996, lon: 2.3376 },
  suspended: { lat: 48.8786, lon: 2.3376 },
};
const partners: Record<keyof typeof places, TestPartner> = {} as never;

beforeAll(async () => {
  h = await startPartnerHarness();
  for (const [key, location] of Object.entries(places) as [keyof typeof places, { lat: number; lon: number }][]) {
    partners[key] = await createPartner(h, {
      name: `Shelter ${key}`,
      kind: key === "far" ? "vet" : "shelter",
      location,
      ...(key === "mid" ? { publicContact: { phone: "+33 1 11 22 33 44" }, strayHoldDays: 8 } : {}),
    });
  }
  const suspended = await call(h.api, {
    method: "POST",
    url: `/v1/admin/partners/${partners.suspended.id}/suspend`,
    headers: admin(),
    payload: { reasonCode: "abuse", reasonDetail: "test" },
  });
  expect(suspended.statusCode, suspended.body).toBe(200);
  // The near shelter holds two dogs and a cat (one more dog hidden by a moderator, one that left): its inCustody.
  const token = await login(h, partners.near);
  const ids: string[] = [];
  for (const species of ["dog", "dog", "cat", "rabbit", "dog", "dog"]) ids.push((await publish(h, token, asm3Animal({ species }))).json().id);
  await moderate(h.db, "found_report", ids[4]!);
  const gone = await partnerCall(h, { method: "DELETE", url: `/partners/v2/animals/${ids[5]}`, token });
  expect(gone.statusCode, gone.body).toBe(204);
});
afterAll(() => h?.close());

const shelters = (query: string) => call(h.api, { method: "GET", url: `/v1/safety/shelters?${query}` });

describe("GET /v1/safety/shelters", () => {
  it("lists the partners within 25 km by default, nearest first, each with its contact, distance, hold and animals; no suspended one", async () => {
    const res = await shelters(`lat=${here.lat}&lon=${here.lon}`);
    expect(res.statusCode, res.body).toBe(200);
    const { items, nextCursor } = res.json();
    expect(nextCursor).toBeNull();
    expect(items.map((s: { name: string }) => s.name)).toEqual(["Shelter near", "Shelter mid", "Shelter far"]);
    expect(items[0]).toEqual({
      id: partners.near.id,
      name: "Shelter near",
      kind: "shelter",
      publicContact: { phone: "+33 1 23 45 67 89", email: expect.stringMatching(/@riverside-shelter\.example$/), address: "1 Quai Branly, Paris", website: "https://riverside-shelter.example" },
      distanceKm: 0.8,
      strayHoldDays: 5,
      inCustody: { dog: 2, cat: 1, other: 1 },
    });
    expect(items[1]).toMatchObject({ kind: "shelter", publicContact: { phone: "+33 1 11 22 33 44" }, distanceKm: 4.4, strayHoldDays: 8, inCustody: { dog: 0, cat: 0, other: 0 } });
    expect(items[2]).toMatchObject({ kind: "vet", distanceKm: 20 });
    // Nothing of the partner but its public side: no location, login or actor id.
    expect(res.body).not.toContain(partners.near.loginEmail);
    expect(res.body).not.toContain("partner:");
    expect(res.body).not.toContain(String(places.near.lat));
  });

  it("takes radiusKm up to 100, and pages with limit and cursor", async () => {
    const wide = await shelters(`lat=${here.lat}&lon=${here.lon}&radiusKm=100`);
    expect(wide.json().items.map((s: { name: string }) => s.name)).toEqual(["Shelter near", "Shelter mid", "Shelter far", "Shelter away"]);
    const narrow = await shelters(`lat=${here.lat}&lon=${here.lon}&radiusKm=2`);
    expect(narrow.json().items.map((s: { name: string }) => s.name)).toEqual(["Shelter near"]);
    const first = await shelters(`lat=${here.lat}&lon=${here.lon}&radiusKm=100&limit=2`);
    expect(first.json().items.map((s: { name: string }) => s.name)).toEqual(["Shelter near", "Shelter mid"]);
    const next = await shelters(`lat=${here.lat}&lon=${here.lon}&radiusKm=100&limit=2&cursor=${first.json().nextCursor}`);
    expect(next.json().items.map((s: { name: string }) => s.name)).toEqual(["Shelter far", "Shelter away"]);
    expect(next.json().nextCursor).toBeNull();
  });

  it("refuses a point or radius out of range, a missing point and a bad cursor (400)", async () => {
    for (const query of [
      `lat=91&lon=2`,
      `lat=48&lon=181`,
      `lon=2`,
      `lat=48&lon=2&radiusKm=101`,
      `lat=48&lon=2&radiusKm=0`,
      `lat=48&lon=2&radiusKm=`,
      `lat=48&lon=2&cursor=nope`,
      `lat=48&lon=2&limit=201`,
    ]) {
      expectProblem(await shelters(query), 400, "validation-failed");
    }
  });

  it("stops listing a suspended partner and lists it again once restored", async () => {
    const restored = await call(h.api, { method: "POST", url: `/v1/admin/partners/${partners.suspended.id}/restore`, headers: admin(), payload: { reason: "checked" } });
    expect(restored.statusCode, restored.body).toBe(200);
    const res = await shelters(`lat=${here.lat}&lon=${here.lon}`);
    expect(res.json().items.map((s: { name: string }) => s.name)).toEqual(["Shelter near", "Shelter suspended", "Shelter mid", "Shelter far"]);
    await call(h.api, { method: "POST", url: `/v1/admin/partners/${partners.suspended.id}/suspend`, headers: admin(), payload: { reasonCode: "abuse", reasonDetail: "again" } });
  });
});

describe("the owner's view of a lost report", () => {
  it("carries nearbyShelters: the first 5 within 25 km of where the animal was last seen", async () => {
    const owner = freshActor("owner");
    const id = await createLostReport(h.api, owner, { location: here });
    const res = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}/private`, headers: as(owner) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().nearbyShelters.map((s: { name: string }) => s.name)).toEqual(["Shelter near", "Shelter mid", "Shelter far"]);
    expect(res.json().nearbyShelters[0]).toMatchObject({ id: partners.near.id, distanceKm: 0.8, inCustody: { dog: 2, cat: 1, other: 1 } });
    // None far from everyone.
    const lonely = await createLostReport(h.api, owner, { location: { lat: 45.764, lon: 4.8357 } });
    const alone = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${lonely}/private`, headers: as(owner) });
    expect(alone.json().nearbyShelters).toEqual([]);
    // The PATCH answers the same view.
    const patched = await call(h.api, { method: "PATCH", url: `/v1/safety/lost-reports/${id}`, headers: as(owner), payload: { description: "Red collar" } });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().nearbyShelters).toHaveLength(3);
  });
});
