import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CELL_DEGREES_LAT, coarsen, type LatLon } from "../../lib/geo.js";
import { alertsSqlFor, alertsValues } from "../../api/safety/alerts/store.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, expectProblem, freshActor, moderate } from "./helpers.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

interface AlertItem {
  id: string;
  kind: string;
  species: string;
  animalName?: string;
  location: { lat: number; lon: number; precisionMeters: number };
  distanceKm: number;
  createdAt: string;
}

const EARTH_RADIUS_KM = 6371.0088;
function haversineKm(a: LatLon, b: LatLon): number {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLon = (b.lon - a.lon) * rad;
  const s = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.sqrt(s));
}

/** A point `km` kilometres north (dLat) and east (dLon) of origin. */
function offset(origin: LatLon, northKm: number, eastKm: number): LatLon {
  const lat = origin.lat + northKm / 111.195;
  const lon = origin.lon + eastKm / (111.195 * Math.cos((origin.lat * Math.PI) / 180));
  return { lat, lon };
}

async function alerts(query: string): Promise<{ items: AlertItem[]; nextCursor: string | null }> {
  const res = await call(h.api, { method: "GET", url: `/v1/safety/alerts?${query}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function distanceTo(observer: LatLon, id: string): Promise<number | undefined> {
  const { items } = await alerts(`lat=${observer.lat}&lon=${observer.lon}&radiusKm=100&kind=lost&limit=200`);
  return items.find((a) => a.id === id)?.distanceKm;
}

// Each describe works in its own region, far from the others.
const HELSINKI = { lat: 60.17, lon: 24.94 };

describe("GET /v1/safety/alerts lists open reports within the radius, nearest first, with no auth", () => {
  let near: string, mid: string, far: string, found: string, cat: string;

  beforeAll(async () => {
    far = await createLostReport(h.api, freshActor(), { location: offset(HELSINKI, 6, 0) });
    near = await createLostReport(h.api, freshActor(), { location: offset(HELSINKI, 1, 0) });
    mid = await createLostReport(h.api, freshActor(), { location: offset(HELSINKI, 0, 3) });
    found = await createFoundReport(h.api, freshActor(), { location: offset(HELSINKI, -2, 0), animal: { species: "dog" } });
    cat = await createLostReport(h.api, freshActor(), { location: offset(HELSINKI, 0, -4), animal: { species: "cat", name: "Tom" } });
  });

  it("returns lost and found reports nearest first with the contract's item shape", async () => {
    const { items, nextCursor } = await alerts(`lat=${HELSINKI.lat}&lon=${HELSINKI.lon}`);
    expect(items.map((a) => a.id)).toEqual([near, found, mid, cat, far]);
    expect(nextCursor).toBeNull();
    const first = items[0]!;
    expect(Object.keys(first).sort()).toEqual(["animalName", "createdAt", "distanceKm", "id", "kind", "location", "species"]);
    expect(first).toMatchObject({ kind: "lost", species: "dog", animalName: "Rex", location: { precisionMeters: 1000 } });
    expect(items[1]).toMatchObject({ kind: "found", species: "dog" });
    for (const item of items) expect(item.distanceKm).toBe(Math.round(item.distanceKm * 10) / 10);
  });

  it("leaves out reports beyond radiusKm", async () => {
    const { items } = await alerts(`lat=${HELSINKI.lat}&lon=${HELSINKI.lon}&radiusKm=3.6`);
    expect(items.map((a) => a.id)).toEqual([near, found, mid]);
  });

  it("filters by kind and by species", async () => {
    expect((await alerts(`lat=${HELSINKI.lat}&lon=${HELSINKI.lon}&kind=found`)).items.map((a) => a.id)).toEqual([found]);
    expect((await alerts(`lat=${HELSINKI.lat}&lon=${HELSINKI.lon}&kind=lost`)).items.map((a) => a.id)).toEqual([near, mid, cat, far]);
    expect((await alerts(`lat=${HELSINKI.lat}&lon=${HELSINKI.lon}&species=cat`)).items.map((a) => a.id)).toEqual([cat]);
  });

  it("pages with ?limit= and an opaque cursor, in the same order and without repeats", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: AlertItem[]; nextCursor: string | null } = await alerts(
        `lat=${HELSINKI.lat}&lon=${HELSINKI.lon}&limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((a) => a.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([near, found, mid, cat, far]);
  });
});

describe("alerts show only open, unmoderated reports", () => {
  const OSLO = { lat: 59.91, lon: 10.75 };

  it("drops a report once it is resolved, quarantined or removed", async () => {
    const owner = freshActor();
    const finder = freshActor();
    const resolved = await createLostReport(h.api, owner, { location: offset(OSLO, 1, 1) });
    const resolvedFound = await createFoundReport(h.api, finder, { location: offset(OSLO, 1, 3) });
    const quarantined = await createLostReport(h.api, freshActor(), { location: offset(OSLO, 1, 2) });
    const removedFound = await createFoundReport(h.api, freshActor(), { location: offset(OSLO, 2, 1) });
    const visible = await createLostReport(h.api, freshActor(), { location: offset(OSLO, 2, 2) });
    const before = (await alerts(`lat=${OSLO.lat}&lon=${OSLO.lon}`)).items.map((a) => a.id);
    expect(before.sort()).toEqual([resolved, resolvedFound, quarantined, removedFound, visible].sort());

    const resolve = (path: string, by: string) =>
      call(h.api, { method: "POST", url: `/v1/safety/${path}/resolve`, headers: as(by), payload: { outcome: "closed" } });
    expect((await resolve(`lost-reports/${resolved}`, owner)).statusCode).toBe(200);
    expect((await resolve(`found-reports/${resolvedFound}`, finder)).statusCode).toBe(200);
    await moderate(h.db, "lost_report", quarantined, "quarantined");
    await moderate(h.db, "found_report", removedFound, "removed");
    expect((await alerts(`lat=${OSLO.lat}&lon=${OSLO.lon}`)).items.map((a) => a.id)).toEqual([visible]);
  });
});

describe("alert defaults: radiusKm 10, limit 50 (max 200)", () => {
  const MADRID = { lat: 40.42, lon: -3.7 };

  it("leaves out a report ~11 km away by default and includes it with radiusKm=12", async () => {
    const at = offset(MADRID, 11, 0);
    // The radius is measured to the coarse point, which is within ~0.7 km of the precise one.
    const coarseKm = haversineKm(MADRID, coarsen(at));
    expect(coarseKm).toBeGreaterThan(10.2);
    expect(coarseKm).toBeLessThan(11.8);
    const id = await createLostReport(h.api, freshActor(), { location: at });
    expect((await alerts(`lat=${MADRID.lat}&lon=${MADRID.lon}&limit=200`)).items.map((a) => a.id)).not.toContain(id);
    expect((await alerts(`lat=${MADRID.lat}&lon=${MADRID.lon}&radiusKm=12&limit=200`)).items.map((a) => a.id)).toContain(id);
  });

  it("gives 50 items and a cursor by default when 51 match, takes limit=200 and refuses limit=201", async () => {
    const centre = offset(MADRID, -30, 0);
    for (let i = 0; i < 51; i++) {
      // Every actor may create 5 reports an hour; spread the 51 across cells within ~3 km.
      await createLostReport(h.api, freshActor(), { location: offset(centre, (i % 7) * 0.4, Math.floor(i / 7) * 0.4) });
    }
    const near = `lat=${centre.lat}&lon=${centre.lon}`;
    const first = await alerts(near);
    expect(first.items).toHaveLength(50);
    expect(first.nextCursor).not.toBeNull();
    const rest = await alerts(`${near}&cursor=${first.nextCursor}`);
    expect(rest.items).toHaveLength(1);
    expect(rest.nextCursor).toBeNull();
    const all = await alerts(`${near}&limit=200`);
    expect(all.items).toHaveLength(51);
    expect(all.nextCursor).toBeNull();
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/alerts?${near}&limit=201` }), 400, "validation-failed");
  });
});

describe("alert queries are validated", () => {
  it.each([
    ["a latitude over 90", "lat=91&lon=0"],
    ["a longitude below -180", "lat=0&lon=-181"],
    ["a missing longitude", "lat=10"],
    ["a non-numeric latitude", "lat=north&lon=0"],
    ["a radius over 100 km", "lat=0&lon=0&radiusKm=101"],
    ["a zero radius", "lat=0&lon=0&radiusKm=0"],
    ["an unknown kind", "lat=0&lon=0&kind=stolen"],
    ["an unknown species", "lat=0&lon=0&species=dragon"],
    ["a limit over 200", "lat=0&lon=0&limit=201"],
    // Plain coercion reads a blank value as 0: lat= would search around (0, lon).
    ["a blank latitude", "lat=&lon=0"],
    ["a blank longitude", "lat=0&lon="],
    ["a whitespace latitude", "lat=%20&lon=0"],
    ["a blank radius", "lat=0&lon=0&radiusKm="],
    ["a blank limit", "lat=0&lon=0&limit="],
    ["a cursor this listing never issued", "lat=0&lon=0&cursor=bm90LWEtY3Vyc29y"],
  ])("refuses %s with 400 validation-failed", async (_name, query) => {
    expectProblem(await call(h.api, { method: "GET", url: `/v1/safety/alerts?${query}` }), 400, "validation-failed");
  });
});

describe("alerts never reveal more than the public ~1 km cell: distances and the radius use the coarse point", () => {
  // A precise home location in the far south-west corner of its grid cell, ~690 m from the cell centre.
  const centre = coarsen({ lat: 52.52, lon: 13.405 });
  const lonStep = CELL_DEGREES_LAT / Math.cos((centre.lat * Math.PI) / 180);
  const home = { lat: centre.lat - CELL_DEGREES_LAT * 0.49, lon: centre.lon - lonStep * 0.49 };
  let id: string;

  beforeAll(async () => {
    expect(coarsen(home)).toEqual(centre);
    expect(haversineKm(home, centre)).toBeGreaterThan(0.6);
    id = await createLostReport(h.api, freshActor(), { location: home });
  });

  it("trilaterating distanceKm from 16 observers lands on the cell centre, hundreds of metres from the real point", async () => {
    const observers = Array.from({ length: 16 }, (_, i) => {
      const angle = (2 * Math.PI * i) / 16;
      const ring = i % 2 === 0 ? 2 : 5;
      return offset(home, ring * Math.cos(angle), ring * Math.sin(angle));
    });
    const measured: Array<{ at: LatLon; km: number }> = [];
    for (const at of observers) {
      const km = await distanceTo(at, id);
      expect(km).toBeDefined();
      measured.push({ at, km: km! });
    }
    // The attacker's best fit: grid search (10 m steps, ±1.5 km around the real point) minimising squared error.
    let best = { point: home, error: Infinity };
    for (let north = -1.5; north <= 1.5; north += 0.01) {
      for (let east = -1.5; east <= 1.5; east += 0.01) {
        const candidate = offset(home, north, east);
        let error = 0;
        for (const m of measured) error += (haversineKm(candidate, m.at) - m.km) ** 2;
        if (error < best.error) best = { point: candidate, error };
      }
    }
    expect(haversineKm(best.point, centre)).toBeLessThan(0.15);
    expect(haversineKm(best.point, home)).toBeGreaterThan(0.5);
  });

  it("bisecting radiusKm converges on the distance to the cell centre, not to the real point", async () => {
    // An observer 3 km south-west, on the line through the real point and the centre: the two distances differ most.
    const observer = offset(home, -2.1, -2.1);
    let inside = 10;
    let outside = 0.01;
    for (let i = 0; i < 25; i++) {
      const radius = (inside + outside) / 2;
      const { items } = await alerts(`lat=${observer.lat}&lon=${observer.lon}&radiusKm=${radius}&kind=lost&limit=200`);
      if (items.some((a) => a.id === id)) inside = radius;
      else outside = radius;
    }
    expect(Math.abs(inside - haversineKm(observer, centre))).toBeLessThan(0.03);
    expect(Math.abs(inside - haversineKm(observer, home))).toBeGreaterThan(0.5);
  });
});

describe("the nearby search uses the partial GiST indexes on the coarse point", () => {
  it("plans index scans on both tables' open-report indexes for the store's own alerts query", async () => {
    const client = await h.db.pool.connect();
    try {
      await client.query("begin");
      // The test database holds a few dozen rows, where a sequential scan is cheaper; the question is whether the
      // query's shape lets the planner use the indexes at all.
      await client.query("set local enable_seqscan = off");
      for (const species of [undefined, "dog" as const]) {
        const query = { lat: 52.5, lon: 13.4, radiusKm: 10, kind: "all" as const, limit: 50, species };
        const { rows } = await client.query({ text: `explain ${alertsSqlFor(query)}`, values: alertsValues(query, null, query.limit + 1) });
        const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
        // Either open-report GiST index serves: the point index, or matching's species-led one (migration 000007).
        expect(plan).toMatch(/Index Scan using safety_lost_report_open_(coarse|match)_idx/);
        expect(plan).toMatch(/Index Scan using safety_found_report_open_(coarse|match)_idx/);
        // The page bound comes from a nearest-first walk of the index, one per table, so the cost follows the page.
        expect(plan.match(/Order By: \(coarse_location <-> /g)).toHaveLength(2);
      }
      await client.query("rollback");
    } finally {
      client.release();
    }
  });
});
