import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { as, buildTestApi, devEnv } from "../helpers/app.js";
import { partialUpload as partialUploadTo } from "../helpers/partial-upload.js";
import { problemShapeError, seedWorld, slugOf, useAbuseHarness, WriteLog, type World } from "./harness.js";

const h = useAbuseHarness();
let world: World;
let writes: WriteLog;
let port: number;
let limit: number;

beforeAll(async () => {
  world = await seedWorld(h);
  writes = await WriteLog.install(h.pool);
  limit = h.app.initialConfig.bodyLimit!;
  await h.app.listen({ host: "127.0.0.1", port: 0 });
  port = (h.app.server.address() as { port: number }).port;
});

afterAll(async () => {
  h.app?.server.closeAllConnections();
});

/** An upload that never finishes: an answer can only come from a server that decided without reading it all. */
const partialUpload = (path: string, headers: Record<string, string>, send: number) => partialUploadTo(port, path, headers, send);

const TEN_MB = 10 * 1024 * 1024;

const healthy = async () => {
  expect((await h.call({ url: "/healthz" })).statusCode).toBe(200);
  const res = await h.call({ url: `/v1/safety/lost-reports/${world.lostReportId}` });
  expect(res.statusCode).toBe(200);
};

describe("a body over API_BODY_LIMIT_BYTES is refused with 413 before it is read or parsed", () => {
  it("answers a declared 10 MB body with 413 payload-too-large after only part of it was sent", async () => {
    await writes.takeNew();
    const res = await partialUpload(
      `/v1/safety/lost-reports/${world.lostReportId}/relay-message`,
      { "content-type": "application/json", "content-length": String(TEN_MB) },
      limit * 2,
    );
    console.log(`oversized: declared ${TEN_MB} bytes, sent ${res.bytesSent}, got ${res.status}`);
    expect(res.status).toBe(413);
    expect(res.bytesSent).toBeLessThan(TEN_MB);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(res.body)).toMatchObject({ type: expect.stringMatching(/\/payload-too-large$/), status: 413, title: expect.any(String) });
    expect(await writes.takeNew()).toEqual([]);
    await healthy();
  });

  it("stops reading a chunked upload with no declared length once it passes the limit", async () => {
    const res = await partialUpload(
      "/v1/safety/lost-reports",
      { ...as("big-uploader"), "content-type": "application/json", "transfer-encoding": "chunked" },
      limit * 4,
    );
    console.log(`oversized: chunked upload, sent ${res.bytesSent} of a never-ending body, got ${res.status}`);
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toMatchObject({ type: expect.stringMatching(/\/payload-too-large$/), status: 413 });
    expect(await writes.takeNew()).toEqual([]);
    await healthy();
  });

  it("refuses an anonymous oversized upload to an authenticated route with 401 before reading it", async () => {
    const res = await partialUpload("/v1/safety/lost-reports", { "content-type": "application/json", "content-length": String(TEN_MB) }, limit * 2);
    expect(res.status).toBe(401);
    expect(await writes.takeNew()).toEqual([]);
  });

  it("draws the line at exactly the limit: one byte over is 413, a body at the limit is parsed and validated", async () => {
    const padded = (size: number) => {
      const base = JSON.stringify({ message: "hi", fromContact: "x", pad: "" });
      return base.replace('"pad":""', `"pad":"${"p".repeat(size - base.length)}"`);
    };
    const url = `/v1/safety/lost-reports/${world.lostReportId}/relay-message`;
    const over = await h.call({ method: "POST", url, headers: { "content-type": "application/json" }, payload: padded(limit + 1) });
    expect(over.statusCode).toBe(413);
    expect(problemShapeError(over)).toBeNull();
    const atLimit = await h.call({ method: "POST", url, headers: { "content-type": "application/json" }, payload: padded(limit) });
    // Parsed: the unknown `pad` property is dropped and the message accepted.
    expect(atLimit.statusCode, atLimit.body).toBe(202);
  });
});

describe("deeply nested JSON is a 400, never a crash", () => {
  const depth = (open: string, close: string, inner = "") => {
    const levels = Math.floor((limit - inner.length - 16) / (open.length + close.length));
    return { levels, body: `${open.repeat(levels)}${inner}${close.repeat(levels)}` };
  };

  it.each([
    ["arrays as the whole body", () => depth("[", "]")],
    ["arrays inside a field", () => {
      const nested = depth("[", "]", "");
      return { levels: nested.levels - 20, body: `{"message":${"[".repeat(nested.levels - 20)}${"]".repeat(nested.levels - 20)},"fromContact":"x"}` };
    }],
    ["objects", () => depth('{"a":', "}", "1")],
    ["objects next to a __proto__ key", () => {
      const nested = depth('{"a":', "}", "1");
      const levels = nested.levels - 10;
      return { levels, body: `{"__proto__":{"x":1},"message":${'{"a":'.repeat(levels)}1${"}".repeat(levels)}}` };
    }],
  ])("%s: 400 validation-failed and the process stays healthy", async (_name, make) => {
    const { levels, body } = make();
    expect(body.length).toBeLessThanOrEqual(limit);
    await writes.takeNew();
    const res = await h.call({
      method: "POST",
      url: `/v1/safety/lost-reports/${world.lostReportId}/relay-message`,
      headers: { "content-type": "application/json" },
      payload: body,
    });
    console.log(`oversized: ${levels} levels of nesting (${body.length} bytes) → ${res.statusCode}`);
    expect(res.statusCode, res.body.slice(0, 300)).toBe(400);
    expect(slugOf(res)).toBe("validation-failed");
    expect(problemShapeError(res)).toBeNull();
    expect(await writes.takeNew()).toEqual([]);
    await healthy();
  });
});

describe("deep nesting stays a 400 when an operator raises the body limit", () => {
  it("answers 100,000 nested arrays and 100,000 nested objects beside a __proto__ key with 400 under a 1 MiB limit", async () => {
    const big = await buildTestApi(devEnv(h.db.url, h.bus.url, { API_BODY_LIMIT_BYTES: String(1024 * 1024) }));
    try {
      const levels = 100_000;
      const bodies = [
        `${"[".repeat(levels)}${"]".repeat(levels)}`,
        `{"__proto__":{"x":1},"message":${'{"a":'.repeat(levels)}1${"}".repeat(levels)}}`,
      ];
      for (const payload of bodies) {
        const res = await big.app.inject({
          method: "POST",
          url: `/v1/safety/lost-reports/${world.lostReportId}/relay-message`,
          headers: { "content-type": "application/json" },
          payload,
        });
        console.log(`oversized: ${levels} levels of nesting (${payload.length} bytes) under a 1 MiB limit → ${res.statusCode}`);
        expect(res.statusCode, res.body.slice(0, 300)).toBe(400);
        expect(problemShapeError(res)).toBeNull();
      }
      expect((await big.app.inject({ url: "/healthz" })).statusCode).toBe(200);
    } finally {
      await big.close();
    }
  });
});
