import type { Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { OUTBOX_WAKE_SUBJECT } from "../../lib/outbox.js";
import { as } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, count, createLostReport, expectProblem, freshActor, lostReportBody } from "../safety/helpers.js";
import { animalWithTag } from "../tag/helpers.js";

// Nothing in Postgres wakes the relay: the API publishes a wake-up on the bus after each write.
let h: Harness;
let wakeUps: Subscription;
let received = 0;

beforeAll(async () => {
  h = await startHarness();
  wakeUps = h.api.nc.subscribe(OUTBOX_WAKE_SUBJECT, { callback: () => void (received += 1) });
  await h.api.nc.flush();
});
afterAll(async () => {
  wakeUps?.unsubscribe();
  await h?.close();
});

/**
 * Lets the last response's onResponse hook run (inject resolves before it),
 * then a round trip on the same connection brings back what it published.
 */
async function settled(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await h.api.nc.flush();
}

/** Wake-ups published for `request`, not for what ran before it. */
async function wakeUpsDuring(request: () => Promise<unknown>): Promise<number> {
  await settled();
  const before = received;
  await request();
  await settled();
  return received - before;
}

describe("the API wakes the relay over the bus after a request that may have written events", () => {
  it("a created report wakes it once, and its event row is committed", async () => {
    let id = "";
    expect(await wakeUpsDuring(async () => (id = await createLostReport(h.api, freshActor())))).toBe(1);
    expect(await count(h.db, `select 1 from outbox_event where type = $1 and payload->>'reportId' = $2`, [EventType.AnimalLostReported, id])).toBe(1);
  });

  it("a refused write wakes nobody: it wrote nothing", async () => {
    const refused = await wakeUpsDuring(async () => {
      const res = await call(h.api, {
        method: "POST",
        url: "/v1/safety/lost-reports",
        headers: as(freshActor()),
        payload: lostReportBody({ location: { lat: 91, lon: 0 } }),
      });
      expectProblem(res, 400, "validation-failed");
    });
    expect(refused).toBe(0);
  });

  it("a read wakes nobody", async () => {
    const id = await createLostReport(h.api, freshActor());
    const read = await wakeUpsDuring(async () => {
      const res = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}` });
      expect(res.statusCode).toBe(200);
    });
    expect(read).toBe(0);
  });

  it("the tag page's GET, a read that records a scan, wakes it; its HEAD does not", async () => {
    const { token } = await animalWithTag(h.api, freshActor("owner"));
    const viewed = await wakeUpsDuring(async () => {
      const res = await call(h.api, { method: "GET", url: `/t/${token}`, headers: { accept: "text/html" } });
      expect(res.statusCode).toBe(200);
    });
    expect(viewed).toBe(1);
    // HEAD shows the page but records no view, so it writes nothing.
    const probed = await wakeUpsDuring(async () => {
      const res = await call(h.api, { method: "HEAD", url: `/t/${token}`, headers: { accept: "text/html" } });
      expect(res.statusCode).toBe(200);
    });
    expect(probed).toBe(0);
  });
});
