import diagnostics from "node:diagnostics_channel";
import type { FastifyInstance, RouteOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApi } from "./helpers/app.js";
import { startHarness, type Harness } from "./helpers/harness.js";

let h: Harness;
let api: TestApi;
const routes: RouteOptions[] = [];

// Operational endpoints and pages (the console, the app, the tag page, the share pages and their short links, the push
// service worker) that are deliberately not part of the API document.
const UNDOCUMENTED = /^\/(healthz|readyz|metrics|openapi\.json|docs|admin|app|t|lost|found|s|sw\.js)(\/|$)/;

beforeAll(async () => {
  // Fastify announces each new instance here before any plugin runs: collect every route the real app registers.
  const collect = (message: unknown) => {
    (message as { fastify: FastifyInstance }).fastify.addHook("onRoute", (route) => {
      routes.push(route);
    });
  };
  diagnostics.subscribe("fastify.initialization", collect);
  try {
    h = await startHarness();
    api = h.api;
  } finally {
    diagnostics.unsubscribe("fastify.initialization", collect);
  }
});

afterAll(async () => {
  await h?.close();
});

type Operation = {
  tags?: string[];
  summary?: string;
  parameters?: Array<{ in: string; name: string; required?: boolean }>;
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
};

async function openapi(): Promise<{
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
}> {
  const res = await api.app.inject({ method: "GET", url: "/openapi.json" });
  expect(res.statusCode).toBe(200);
  return res.json();
}

const documentedRoutes = () =>
  routes.flatMap((route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter((m) => m !== "HEAD" && m !== "OPTIONS"); // OPTIONS * is the CORS preflight, not an operation
    if (UNDOCUMENTED.test(route.url)) return [];
    return methods.map((method) => ({ method: method.toLowerCase(), url: route.url, route }));
  });

describe("GET /openapi.json serves an OpenAPI 3.1 document generated from the routes' zod schemas", () => {
  it("is served without auth as OpenAPI 3.1.x", async () => {
    const doc = await openapi();
    expect(doc.openapi).toMatch(/^3\.1\./);
  });

  it("documents every registered route (except health, metrics, openapi and docs) with its request and response schemas", async () => {
    const doc = await openapi();
    const list = documentedRoutes();
    expect(list.length).toBeGreaterThan(15);
    const missing: string[] = [];
    for (const { method, url, route } of list) {
      const path = url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
      const op = doc.paths[path]?.[method];
      if (!op) {
        missing.push(`${method.toUpperCase()} ${url}: not in the document`);
        continue;
      }
      const schema = (route.schema ?? {}) as Record<string, unknown>;
      // A photo upload documents its form under multipart/form-data (schema.consumes); every other body is JSON.
      const bodyType = (schema.consumes as string[] | undefined)?.[0] ?? "application/json";
      if (schema.body && !op.requestBody?.content[bodyType]?.schema) missing.push(`${method} ${url}: request body`);
      for (const param of url.match(/:([A-Za-z0-9_]+)/g) ?? []) {
        if (!op.parameters?.some((p) => p.in === "path" && p.name === param.slice(1))) missing.push(`${method} ${url}: path param ${param}`);
      }
      if (schema.querystring && !op.parameters?.some((p) => p.in === "query")) missing.push(`${method} ${url}: query parameters`);
      const success = Object.keys(op.responses).filter((code) => code.startsWith("2"));
      if (success.length === 0) missing.push(`${method} ${url}: no 2xx response`);
      if (!op.summary || !op.tags?.length) missing.push(`${method} ${url}: summary and tags`);
    }
    expect(missing).toEqual([]);
  });

  it("uses zod schemas for every documented route's request and response", () => {
    const isZod = (value: unknown) => typeof value === "object" && value !== null && "_zod" in value;
    const notZod: string[] = [];
    for (const { method, url, route } of documentedRoutes()) {
      const schema = (route.schema ?? {}) as Record<string, unknown>;
      for (const part of ["body", "querystring", "params"] as const) {
        if (schema[part] !== undefined && !isZod(schema[part])) notZod.push(`${method} ${url} ${part}`);
      }
      const responses = (schema.response ?? {}) as Record<string, unknown>;
      if (Object.keys(responses).length === 0) notZod.push(`${method} ${url}: no response schema`);
      for (const [code, value] of Object.entries(responses)) {
        // A binary response (a photo variant) gives a zod schema per content type.
        const content = (value as { content?: Record<string, { schema: unknown }> }).content;
        const zod = content ? Object.values(content).every((c) => isZod(c.schema)) : isZod(value);
        if (!zod) notZod.push(`${method} ${url} response ${code}`);
      }
    }
    expect(notZod).toEqual([]);
  });

  it("documents the safety routes' bounds: coordinate ranges, radius limit and body lengths", async () => {
    const doc = await openapi();
    const alerts = doc.paths["/v1/safety/alerts"]!.get!;
    const param = (name: string) => alerts.parameters!.find((p) => p.name === name) as unknown as { schema: Record<string, unknown> };
    expect(param("lat").schema).toMatchObject({ minimum: -90, maximum: 90 });
    expect(param("radiusKm").schema).toMatchObject({ maximum: 100, default: 10 });
    const ref = (doc.paths["/v1/safety/lost-reports/{id}/relay-message"]!.post!.requestBody!.content["application/json"]!.schema as {
      $ref: string;
    }).$ref;
    const relay = doc.components.schemas[ref.split("/").at(-1)!] as { properties: Record<string, Record<string, unknown>> };
    expect(relay.properties.message).toMatchObject({ minLength: 1, maxLength: 2000 });
    expect(relay.properties.fromContact).toMatchObject({ minLength: 1, maxLength: 200 });
  });
});

describe("the photo routes' documentation", () => {
  it("documents the upload as multipart/form-data with a binary part photo, and the variant as image/webp", async () => {
    const doc = await openapi();
    const upload = doc.paths["/v1/safety/lost-reports/{id}/photos"]!.post!;
    expect(Object.keys(upload.requestBody!.content)).toEqual(["multipart/form-data"]);
    const ref = (upload.requestBody!.content["multipart/form-data"]!.schema as { $ref: string }).$ref;
    const form = doc.components.schemas[ref.split("/").at(-1)!] as { properties: Record<string, Record<string, unknown>>; required: string[] };
    expect(form.properties.photo).toMatchObject({ type: "string", format: "binary" });
    expect(form.required).toEqual(["photo"]);
    expect(Object.keys(upload.responses)).toEqual(expect.arrayContaining(["202", "413", "415", "422", "409", "403", "404"]));
    const variant = doc.paths["/v1/photos/{photoId}/{variant}"]!.get! as unknown as { responses: Record<string, { content?: Record<string, unknown> }> };
    expect(Object.keys(variant.responses["200"]!.content!)).toEqual(["image/webp"]);
  });
});

describe("GET /docs renders a readable API reference without auth", () => {
  it("serves an HTML page that loads /openapi.json", async () => {
    const res = await api.app.inject({ method: "GET", url: "/docs" });
    const page = [301, 302].includes(res.statusCode) ? await api.app.inject({ method: "GET", url: res.headers.location as string }) : res;
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toMatch(/text\/html/);
    expect(page.body).toContain("/openapi.json");
  });
});
