import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventCatalogue, EventType, InvalidEventError, parseEventData } from "../../lib/events.js";
import { recordEvent, recordEventBatch } from "../../lib/outbox.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createFoundReport, createLostReport, freshActor } from "../safety/helpers.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const outboxPayload = async (type: string, field: string, id: string) =>
  (await h.db.pool.query(`select payload from outbox_event where type = $1 and payload->>$2 = $3`, [type, field, id])).rows;

describe("the event catalogue maps every event type to its payload schema", () => {
  it("has a schema for every type and nothing else", () => {
    expect(Object.keys(eventCatalogue).sort()).toEqual(Object.values(EventType).sort());
  });

  it("parses an event's data with its type's schema and names the first bad field", () => {
    expect(() =>
      parseEventData(EventType.LostReportCancelled, { reportId: "not-a-uuid", previousStatus: "open" }, "evt-1"),
    ).toThrow(/events\.safety\.lost_report_cancelled\.v1 evt-1: data\.reportId/);
    expect(() => parseEventData(EventType.LostReportCancelled, {}, "evt-2")).toThrow(InvalidEventError);
  });
});

describe("the outbox writer accepts only a payload that fits its type", () => {
  it("refuses a payload that does not fit at run time, and writes nothing", async () => {
    const before = (await h.db.pool.query(`select count(*)::int as n from outbox_event`)).rows[0].n;
    const bad = { reportId: crypto.randomUUID() } as unknown as { reportId: string; previousStatus: string };
    await expect(recordEvent(h.db.pool, EventType.LostReportCancelled, bad)).rejects.toThrow(InvalidEventError);
    // @ts-expect-error -- a payload of another type does not compile (the typecheck fails if this line stops erroring)
    await expect(recordEvent(h.db.pool, EventType.LostReportCancelled, { lostReportId: "x", outcome: "reunited" })).rejects.toThrow();
    expect((await h.db.pool.query(`select count(*)::int as n from outbox_event`)).rows[0].n).toBe(before);
  });

  it("checks every payload of a batch before writing any of them", async () => {
    const before = (await h.db.pool.query(`select count(*)::int as n from outbox_event`)).rows[0].n;
    const good = { reportId: crypto.randomUUID(), previousStatus: "open" };
    const bad = { reportId: "nope", previousStatus: "open" };
    await expect(recordEventBatch(h.db.pool, EventType.LostReportCancelled, [good, bad])).rejects.toThrow(InvalidEventError);
    expect((await h.db.pool.query(`select count(*)::int as n from outbox_event`)).rows[0].n).toBe(before);
    const written = await recordEventBatch(h.db.pool, EventType.LostReportCancelled, [good, { ...good, reportId: crypto.randomUUID() }]);
    expect(written).toHaveLength(2);
    expect(await outboxPayload(EventType.LostReportCancelled, "reportId", good.reportId)).toEqual([{ payload: good }]);
  });

  it("stores a fitting payload as given", async () => {
    const reportId = crypto.randomUUID();
    await recordEvent(h.db.pool, EventType.LostReportCancelled, { reportId, previousStatus: "open" });
    expect(await outboxPayload(EventType.LostReportCancelled, "reportId", reportId)).toEqual([
      { payload: { reportId, previousStatus: "open" } },
    ]);
  });
});

describe("an event's coarse location is the stored row's", () => {
  it("lost and found report events carry the same point as the stored coarse_location and the public view", async () => {
    const actor = freshActor("catalogue");
    const location = { lat: 52.520008, lon: 13.404954 };
    for (const [create, path, type] of [
      [createLostReport, "lost-reports", EventType.AnimalLostReported],
      [createFoundReport, "found-reports", EventType.AnimalFoundReported],
    ] as const) {
      const id = await create(h.api, actor, { location });
      const [event] = await outboxPayload(type, "reportId", id);
      const table = path === "lost-reports" ? "safety_lost_report" : "safety_found_report";
      const { rows } = await h.db.pool.query(
        `select st_y(coarse_location::geometry) as lat, st_x(coarse_location::geometry) as lon from ${table} where id = $1`,
        [id],
      );
      expect(event.payload.location).toEqual({ lat: rows[0].lat, lon: rows[0].lon });
      expect(event.payload.location).not.toEqual(location);
      const view = (await call(h.api, { method: "GET", url: `/v1/safety/${path}/${id}`, headers: as(actor) })).json();
      expect({ lat: view.location.lat, lon: view.location.lon }).toEqual(event.payload.location);
    }
  });

  it("a sighting event carries the stored coarse point", async () => {
    const actor = freshActor("catalogue-sighting");
    const res = await call(h.api, {
      method: "POST",
      url: "/v1/safety/sightings",
      headers: as(actor),
      payload: { location: { lat: 48.137154, lon: 11.576124 }, seenAt: new Date().toISOString() },
    });
    expect(res.statusCode).toBe(201);
    const [event] = await outboxPayload(EventType.SightingReported, "sightingId", res.json().id);
    const { rows } = await h.db.pool.query(
      `select st_y(coarse_location::geometry) as lat, st_x(coarse_location::geometry) as lon from safety_sighting where id = $1`,
      [res.json().id],
    );
    expect(event.payload.location).toEqual({ lat: rows[0].lat, lon: rows[0].lon });
  });
});
