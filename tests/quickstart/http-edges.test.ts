import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tidyComponents } from "../../api/plugins/openapi.js";
import { as, type TestApi } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";

let h: Harness;
let api: TestApi;
let port: number;

beforeAll(async () => {
  h = await startHarness();
  api = h.api;
  await api.app.listen({ host: "127.0.0.1", port: 0 });
  port = (api.app.server.address() as { port: number }).port;
});

afterAll(async () => {
  await h?.close();
});

/** Sends raw bytes and reads until the server closes the connection. */
function rawRequest(bytes: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const [head = "", body = ""] = text.split("\r\n\r\n");
      const [statusLine = "", ...lines] = head.split("\r\n");
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body });
    });
    socket.write(bytes);
  });
}

describe("requests Node's HTTP parser refuses are answered with problem+json", () => {
  it("answers headers over the size limit with 431 request-header-fields-too-large", async () => {
    const res = await rawRequest(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.headers["content-type"]).toBe("application/problem+json");
    expect(JSON.parse(res.body)).toMatchObject({ type: expect.stringMatching(/\/request-header-fields-too-large$/), status: 431 });
    expect(Number(res.headers["content-length"])).toBe(Buffer.byteLength(res.body));
  });

  it("answers a malformed request line with 400 validation-failed", async () => {
    const res = await rawRequest("NOT A REQUEST\r\n\r\n");
    expect(res.status).toBe(400);
    expect(res.headers["content-type"]).toBe("application/problem+json");
    expect(JSON.parse(res.body)).toMatchObject({ type: expect.stringMatching(/\/validation-failed$/), title: "Validation failed", status: 400, detail: expect.any(String) });
  });
});

describe("only JSON bodies are parsed", () => {
  it("answers a text/plain body with 415 unsupported-media-type", async () => {
    const res = await api.app.inject({
      method: "POST",
      url: "/v1/safety/lost-reports",
      headers: { ...as("owner-1"), "content-type": "text/plain" },
      payload: '{"a":1}',
    });
    expect(res.statusCode).toBe(415);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/unsupported-media-type$/), status: 415 });
  });
});

describe("the OpenAPI document lists each schema once", () => {
  it("has no component ending in Input unless its plain twin is also used and differs, and every $ref resolves", async () => {
    const doc = (await api.app.inject({ method: "GET", url: "/openapi.json" })).json() as { components: { schemas: Record<string, unknown> } };
    const schemas = doc.components.schemas;
    for (const name of Object.keys(schemas).filter((n) => n.endsWith("Input"))) {
      const twin = name.slice(0, -"Input".length);
      expect(schemas[twin], `${name} has no twin`).toBeDefined();
      expect(schemas[name], `${name} repeats ${twin}`).not.toEqual(schemas[twin]);
    }
    const refs = new Set([...JSON.stringify(doc).matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!));
    expect([...refs].filter((r) => !(r in schemas))).toEqual([]);
    // Nothing unreferenced is listed either.
    expect(Object.keys(schemas).filter((n) => !refs.has(n))).toEqual([]);
    expect(schemas).toHaveProperty("CreateLostReport");
    expect(schemas).toHaveProperty("LostReportPublic");
  });

  it("keeps XInput beside X when both are used and differ, merges them when equal", () => {
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    const doc = {
      paths: { "/a": { post: { body: ref("UserInput"), response: ref("User") }, put: { body: ref("TagInput"), response: ref("Tag") } } },
      components: {
        schemas: {
          User: { type: "object", additionalProperties: false },
          UserInput: { type: "object" },
          Tag: { type: "string" },
          TagInput: { type: "string" },
          Unused: { type: "number" },
          UnusedInput: { type: "number" },
        },
      },
    };
    const tidied = tidyComponents(doc);
    expect(Object.keys(tidied.components.schemas).sort()).toEqual(["Tag", "User", "UserInput"]);
    expect(tidied.paths["/a"].put.body).toEqual(ref("Tag"));
    expect(tidied.paths["/a"].post.body).toEqual(ref("UserInput"));
  });
});
