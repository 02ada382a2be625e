import { beforeAll, describe, expect, it } from "vitest";
import { PLATFORM_ADMIN } from "../../api/plugins/auth.js";
import { coarsen } from "../../lib/geo.js";
import { as } from "../helpers/app.js";
import { CONTACT, OTHER, OWNER, PRECISE, SECRETS, seedWorld, useAbuseHarness, VERIFICATION_DETAIL, type World } from "./harness.js";
import { privacyViolations } from "./privacy.js";

const h = useAbuseHarness();
let world: World;

beforeAll(async () => {
  world = await seedWorld(h);
});

const viewers: [string, Record<string, string>][] = [
  ["anonymous", {}],
  ["another actor", as(OTHER)],
  ["the reporter", as(OWNER)],
  ["an admin", as("privacy-admin", [PLATFORM_ADMIN])],
];

describe("the privacy checker catches what a public response must not carry", () => {
  it("flags a precise point, a reporter id, contact data, verificationDetail and a microchip id, and passes a coarse view", () => {
    const leaky = {
      location: PRECISE,
      reporterId: OWNER,
      fromContact: CONTACT,
      verificationDetail: VERIFICATION_DETAIL,
      animal: { microchipId: "CHIP-0042-XYZ" },
      note: "ring me on +33 6 12 34 56 78 or mail a@b.example",
    };
    const found = privacyViolations(leaky, SECRETS);
    for (const expected of ["precise point", "reporterId", "fromContact", "verificationDetail", "microchipId", "a phone number", "an email address"]) {
      expect(found.join("\n")).toContain(expected);
    }
    expect(privacyViolations({ location: { ...coarsen(PRECISE), precisionMeters: 1000 }, createdAt: "2025-11-20T08:00:00.000Z" }, SECRETS)).toEqual([]);
  });

  it("looks inside opaque cursors", () => {
    const cursor = Buffer.from(JSON.stringify({ lat: PRECISE.lat, lon: PRECISE.lon })).toString("base64url");
    expect(privacyViolations({ items: [], nextCursor: cursor }, SECRETS)).toEqual([expect.stringContaining("precise point")]);
  });
});

describe("no public response carries a precise location, a reporter id, contact data or owner-only details", () => {
  it("walks a realistic scenario through every public route, as every kind of viewer", async () => {
    // A second sighting, so the listing pages and hands out a cursor.
    const second = await h.call({
      method: "POST",
      url: "/v1/safety/sightings",
      headers: as("spotter-2"),
      payload: { lostReportId: world.lostReportId, location: { lat: 48.858011, lon: 2.351234 }, seenAt: "2025-11-20T11:00:00Z", note: "by the river" },
    });
    expect(second.statusCode).toBe(201);

    const near = `lat=${PRECISE.lat}&lon=${PRECISE.lon}`;
    for (const [viewer, headers] of viewers) {
      const reads = [
        `/v1/safety/lost-reports/${world.lostReportId}`,
        `/v1/safety/found-reports/${world.foundReportId}`,
        `/v1/safety/alerts?${near}`,
        `/v1/safety/alerts?${near}&kind=lost&radiusKm=1`,
        `/v1/safety/alerts?${near}&kind=found&species=cat`,
        `/v1/safety/alerts?${near}&limit=1`,
        `/v1/safety/lost-reports/${world.lostReportId}/sightings`,
        `/v1/safety/lost-reports/${world.lostReportId}/sightings?limit=1`,
        `/emergency/${world.token}`,
      ];
      for (const url of reads) {
        const res = await h.call({ url, headers });
        expect(res.statusCode, `${viewer} ${url}`).toBe(200);
      }
      const relay = await h.call({
        method: "POST",
        url: `/v1/safety/lost-reports/${world.lostReportId}/relay-message`,
        headers,
        payload: { message: "Is this your dog?", fromContact: CONTACT },
      });
      expect(relay.statusCode, viewer).toBe(202);
    }

    // The alerts pages really did go on, so the cursors were checked too.
    const paged = await h.call({ url: `/v1/safety/alerts?${near}&limit=1` });
    expect(paged.json().nextCursor).toEqual(expect.any(String));
    const next = await h.call({ url: `/v1/safety/alerts?${near}&limit=1&cursor=${paged.json().nextCursor}` });
    expect(next.statusCode).toBe(200);
  });

  it("covered every public API route with a successful response", () => {
    const publicRoutes = h.routes
      .filter((r) => r.auth === "public" && !r.hidden && r.method !== "HEAD")
      .map((r) => `${r.method} ${r.url}`);
    expect(publicRoutes.length).toBeGreaterThanOrEqual(6);
    const unexercised = publicRoutes.filter((key) => !(h.publicResponses.get(key) ?? []).some((status) => status < 300));
    console.log(
      `privacy: ${[...h.publicResponses.values()].reduce((n, s) => n + s.length, 0)} public responses walked over ${publicRoutes.length} public routes`,
    );
    expect(unexercised).toEqual([]);
  });
});
