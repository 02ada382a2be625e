import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadApiConfig } from "../../lib/config.js";
import { as, devEnv, TEST_PHOTO_DIR } from "../helpers/app.js";
import { openSlowClient, requestHead, type RawAnswer } from "../helpers/slow-client.js";
import { closeServed, multipart, paddedJpeg, photoPart, serveApi, type Served } from "../photos/support.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { createLostReport, freshActor, lostReportBody } from "../safety/helpers.js";

/**
 * Every request has a time limit: a body that trickles in is answered 408 and
 * its connection closed once API_REQUEST_TIMEOUT_MS (2 s here) has passed
 * since its headers, and headers that trickle in are answered 408 by Node's
 * headers timeout. The photo upload keeps its own, longer limits. Real
 * sockets, one byte at a time. The trickles would take minutes to finish, so
 * an answer, or the server closing the connection, is the limit at work;
 * only "not before the limit" is a time the tests check.
 */
const LIMIT_MS = 2_000;
let h: Harness;
let served: Served;

beforeAll(async () => {
  h = await startHarness();
  served = await serveApi(devEnv(h.db.url, h.bus.url, { API_REQUEST_TIMEOUT_MS: String(LIMIT_MS) }));
});
afterAll(async () => {
  await closeServed(served);
  await h?.close();
  rmSync(TEST_PHOTO_DIR, { recursive: true, force: true });
});

function expectTimeoutProblem(answer: RawAnswer): void {
  expect(answer.status, answer.body).toBe(408);
  expect(answer.headers["content-type"]).toMatch(/^application\/problem\+json/);
  expect(JSON.parse(answer.body)).toMatchObject({ status: 408, type: expect.stringMatching(/\/request-timeout$/) });
}

describe("request time limits", () => {
  it("takes API_REQUEST_TIMEOUT_MS as 30 s unless set, and gives Node's server the limits", () => {
    const env = devEnv(h.db.url, h.bus.url);
    expect(loadApiConfig(env).API_REQUEST_TIMEOUT_MS).toBe(30_000);
    expect(() => loadApiConfig({ ...env, API_REQUEST_TIMEOUT_MS: "0" })).toThrow(expect.objectContaining({ setting: "API_REQUEST_TIMEOUT_MS" }));
    const { api } = served;
    const server = api.app.server;
    // Node's own request limit is the outer bound: the upload's wait and body time on top of the ordinary limit.
    expect(server.requestTimeout).toBe(LIMIT_MS + api.config.API_PHOTO_UPLOAD_WAIT_MS + api.config.API_PHOTO_UPLOAD_BODY_TIMEOUT_MS);
    expect(server.headersTimeout).toBe(LIMIT_MS);
    expect(server.timeout).toBe(60_000);
    expect(server.maxRequestsPerSocket).toBe(1_000);
  });

  it("states the rule in the OpenAPI document", async () => {
    const doc = (await served.api.app.inject({ url: "/openapi.json" })).json();
    expect(doc.info.description).toMatch(/API_REQUEST_TIMEOUT_MS \(30 s\)[^.]*408 request-timeout/);
  });

  it("answers a JSON body that trickles in, one byte every 1.5 s, with 408 problem+json at the limit and closes its connection", async () => {
    const body = JSON.stringify(lostReportBody());
    const trickler = freshActor("trickler");
    const client = await openSlowClient(served.port);
    client.send(requestHead("POST", "/v1/safety/lost-reports", { ...as(trickler), "content-type": "application/json", "content-length": String(body.length) }));
    client.trickle(body, 1_500);
    const answer = await client.answer;
    expectTimeoutProblem(answer);
    expect(JSON.parse(answer.body).detail).toMatch(/did not arrive within 2 s/);
    expect(answer.headers.connection).toBe("close");
    expect(answer.answeredAtMs).toBeGreaterThanOrEqual(LIMIT_MS - 100);
    await client.closed;
    const { rows } = await h.db.pool.query(`select count(*)::int as n from safety_lost_report where reporter_id = $1`, [trickler]);
    expect(rows[0].n).toBe(0);
  });

  it("closes the connection of a body still trickling in after an early answer (401 before the body was read)", async () => {
    const client = await openSlowClient(served.port);
    client.send(requestHead("POST", "/v1/safety/lost-reports", { "content-type": "application/json", "content-length": "500" }));
    client.trickle("{".padEnd(500, " "), 1_500);
    const answer = await client.answer;
    expect(answer.status, answer.body).toBe(401);
    await client.closed;
  });

  it("answers headers that trickle in with 408 problem+json and closes their connection", async () => {
    const client = await openSlowClient(served.port);
    client.send("POST /v1/safety/lost-reports HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    client.trickle("x-slow-header: " + "a".repeat(50), 500);
    const answer = await client.answer;
    expectTimeoutProblem(answer);
    await client.closed;
  });

  it("leaves the photo upload its own limits: a body sent over 4 s in pieces, each within the idle limit, is taken", async () => {
    const owner = freshActor("slow-uploader");
    const reportId = await createLostReport(h.api, owner);
    const form = multipart([photoPart(await paddedJpeg(200 * 1024))]);
    const client = await openSlowClient(served.port);
    client.send(requestHead("POST", `/v1/safety/lost-reports/${reportId}/photos`, { ...as(owner), ...form.headers, "content-length": String(form.payload.length) }));
    await client.sendInPieces(form.payload, 5, 1_000);
    const answer = await client.answer;
    expect(answer.status, answer.body).toBe(202);
    expect(answer.answeredAtMs).toBeGreaterThan(LIMIT_MS + 1_000);
    client.destroy();
  });
});
