import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { TEST_STREAM } from "../helpers/app.js";
import { useTestStack } from "../helpers/harness.js";
import { canStartNatsServer, TestNatsServer } from "../helpers/nats-server.js";
import type { ServiceProcess } from "../helpers/processes.js";
import { createLostReport } from "../helpers/stack.js";
import { eventually } from "../helpers/stream.js";

/**
 * The relay is woken one way: a writer publishes on `outbox.wake` after its
 * commit (the API, the notifier's jobs). Its poll is the safety net. With the
 * poll a minute away, only a wake-up can publish a row well before it:
 * WAIT_MS is a deadline to wait on, not a speed to meet.
 */
const POLL_MS = 60_000;
const WAIT_MS = 20_000;
const h = useTestStack({ RELAY_POLL_INTERVAL_MS: String(POLL_MS) });

let nc: NatsConnection;
let jsm: JetStreamManager;
let otherBus: TestNatsServer | null = null;
beforeAll(async () => {
  nc = await connect({ servers: h.bus.url });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc?.close();
  // The processes on it stop first (the stack's own afterAll runs after this one).
  await h.stack?.stopAll();
  await otherBus?.dispose();
});

/** Waits for the outbox row of `type` whose payload has `key` = `value` to be published, and checks the stream holds it. */
async function published(type: EventType, key: string, value: string, timeoutMs: number): Promise<void> {
  const row = await eventually(async () => {
    const { rows } = await h.db.pool.query<{ id: string }>(
      `select id from outbox_event where type = $1 and payload->>$2 = $3 and published_at is not null`,
      [type, key, value],
    );
    return rows[0];
  }, timeoutMs, 20);
  const stored = await jsm.streams.getMessage(TEST_STREAM, { last_by_subj: type });
  expect(stored?.header.get("Nats-Msg-Id")).toBe(row.id);
}

/** An outbox row committed as an operator task commits one: with no wake-up. */
async function insertQuietly(payload: Record<string, string> = {}): Promise<string> {
  const { rows } = await h.db.pool.query<{ id: string }>(`insert into outbox_event (type, payload) values ($1, $2) returning id`, [
    EventType.AnimalLostReported,
    payload,
  ]);
  return rows[0]!.id;
}

async function isPublished(id: string): Promise<boolean> {
  const { rows } = await h.db.pool.query(`select 1 from outbox_event where id = $1 and published_at is not null`, [id]);
  return rows.length === 1;
}

let forwardedFor = 0;
async function post(path: string, actor: string, body: object): Promise<string> {
  forwardedFor += 1;
  const res = await fetch(`${h.stack.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-debug-actor": actor, "x-forwarded-for": `10.8.0.${forwardedFor}` },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.status, text).toBe(201);
  return (JSON.parse(text) as { id: string }).id;
}

/** Stops a process and takes it off the stack's list. */
async function retire(process: ServiceProcess): Promise<void> {
  await process.stop();
  h.stack.processes.splice(h.stack.processes.indexOf(process), 1);
}

let relay: ServiceProcess;

describe("writers wake the relay over the bus after their commits", () => {
  it("leaves a row committed without a wake-up for the poll, and publishes a report the API created well within it", async () => {
    // Published by the relay's first drain, at its start: once it is, that drain is over.
    const first = await insertQuietly({ marker: "first drain" });
    relay = await h.stack.start("relay");
    await eventually(async () => ((await isPublished(first)) ? true : undefined), WAIT_MS);
    // Committed with no wake-up, as an operator task commits: nothing in Postgres wakes the relay,
    // for as long as the API takes to start (the window this check needs, and no extra wait).
    const quiet = await insertQuietly();
    await h.stack.start("api");
    expect(await isPublished(quiet)).toBe(false);

    const created = await createLostReport(h.stack.baseUrl, "bus-wake");
    expect(created.status).toBe(201);
    await published(EventType.AnimalLostReported, "reportId", created.id!, WAIT_MS);
    // The drain the API's wake-up started took the quiet row along.
    expect(await isPublished(quiet)).toBe(true);
  });

  it("publishes a match suggestion the notifier's matching job recorded, woken by the notifier", async () => {
    const notifier = await h.stack.start("notifier");
    await notifier.waitForLog((l) => l.msg === "notifier: started");
    const day = 86_400_000;
    const at = { lat: 43.3, lon: -1.9 };
    const beagle = { species: "dog", breed: "Beagle", colors: ["brown", "white"], sex: "male", distinguishingMarks: "notch in the left ear" };
    const lostId = await post("/v1/safety/lost-reports", "wake-owner", {
      animal: { name: "Rex", ...beagle },
      lastSeenAt: new Date(Date.now() - 3 * day).toISOString(),
      location: at,
      description: "red collar",
    });
    // The found report's event reaches the notifier through the relay (woken by the API); its
    // matching job commits the suggestion afterwards, and only the notifier's wake-up announces it.
    await post("/v1/safety/found-reports", "wake-finder", {
      animal: { ...beagle, breed: "beagle", colors: ["tan", "white"] },
      foundAt: new Date(Date.now() - 2 * day).toISOString(),
      location: { lat: at.lat + 1 / 111, lon: at.lon },
      description: "friendly, notched ear",
    });
    await published(EventType.MatchSuggested, "lostReportId", lostId, WAIT_MS);
    // The job logs this line right after its commit and its wake-up.
    await notifier.waitForLog((l) => l.msg === "matching: subject matched" && (l.suggested as number) > 0);
    await retire(notifier);
  });
});

describe("the relay's poll publishes what no wake-up announced", () => {
  it.skipIf(!canStartNatsServer())("publishes, on its next poll, a write whose wake-up was lost (no relay on its writer's bus)", async () => {
    await retire(relay);
    relay = await h.stack.start("relay", { RELAY_POLL_INTERVAL_MS: "1000" });
    // An API on a bus of its own: its wake-ups reach no relay.
    otherBus = await TestNatsServer.start();
    await h.stack.start("api", { NATS_URL: otherBus.url });
    await relay.waitForLog((l) => l.msg === "relay: started");
    const created = await createLostReport(h.stack.baseUrl, "lost-wake");
    expect(created.status).toBe(201);
    await published(EventType.AnimalLostReported, "reportId", created.id!, WAIT_MS);
    // And a row committed with no wake-up at all, as an operator task commits one.
    const quiet = await insertQuietly();
    await eventually(async () => ((await isPublished(quiet)) ? true : undefined), WAIT_MS, 20);
    expect(relay.child.exitCode).toBeNull();
  });
});
