import swagger from "@fastify/swagger";
import apiReference from "@scalar/fastify-api-reference";
import type { FastifyInstance } from "fastify";
import { jsonSchemaTransform, jsonSchemaTransformObject } from "fastify-type-provider-zod";
import type { z } from "zod";
import { Problem } from "../schemas.js";

/** The OpenAPI 3.1 document at /openapi.json, generated from the routes' zod schemas, and a reference page at /docs. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Animal Safety Service API",
        version: "1.0.0",
        description:
          "Lost and found reports, nearby alerts, sightings, a contact relay, emergency profiles, moderation, admin and notifications. " +
          "Errors are RFC 7807 application/problem+json. Listings take ?limit= (default 50, max 200) and an opaque ?cursor=. " +
          "Every request has a time limit: headers must arrive within 10 s and a body within API_REQUEST_TIMEOUT_MS (30 s) of " +
          "its headers, or the answer is 408 request-timeout and the connection is closed (photo uploads have their own limits, " +
          "given on their routes).",
      },
      components: {
        securitySchemes: {
          bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" },
          // The partner API (/partners, tag partners): an integration key, then a token from its own login.
          partnerKey: { type: "apiKey", in: "header", name: "x-api-key", description: "A partner integration key (PARTNER_API_KEYS)." },
          partnerToken: { type: "http", scheme: "bearer", description: "An accessToken from POST /partners/v2/auth/login; one hour." },
          debugActor: {
            type: "apiKey",
            in: "header",
            name: "X-Debug-Actor",
            description: "Development only (API_ENV=development and API_DEV_AUTH_BYPASS=true). Roles from X-Debug-Roles.",
          },
        },
      },
      security: [{ bearer: [] }, { debugActor: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: (document) => tidyComponents(jsonSchemaTransformObject(document)),
  });
  app.get("/openapi.json", { config: { auth: "public" }, schema: { hide: true } }, async () => app.swagger());
  // The reference page and its assets are public, like the document they render.
  await app.register(async (docs) => {
    docs.addHook("onRoute", (route) => {
      route.config = { ...(route.config ?? {}), auth: "public" };
    });
    await docs.register(apiReference, {
      routePrefix: "/docs",
      configuration: { url: "/openapi.json" },
      hooks: {},
    });
  });
}

const SCHEMA_REF = /"#\/components\/schemas\/([^"]+)"/g;

/**
 * fastify-type-provider-zod emits every registered schema twice, `X` as
 * responses see it and `XInput` as requests see it (objects differ only in
 * `additionalProperties`), whether or not both are used. This keeps the
 * components the paths reach and drops the suffix where only the input is
 * used or both render the same, so `XInput` remains only beside an `X` that
 * truly differs.
 */
export function tidyComponents<T extends object>(doc: T): T {
  const schemas = (doc as { components?: { schemas?: Record<string, unknown> } }).components?.schemas ?? {};
  const refsIn = (node: unknown) => [...JSON.stringify(node ?? null).matchAll(SCHEMA_REF)].map((m) => m[1]!);
  const used = new Set<string>();
  const visit = (names: string[]) => {
    for (const name of names) {
      if (used.has(name) || !(name in schemas)) continue;
      used.add(name);
      visit(refsIn(schemas[name]));
    }
  };
  visit(refsIn((doc as { paths?: unknown }).paths));

  const renames = new Map<string, string>();
  let pairs: [string, string][] = [];
  for (const name of used) {
    const base = name.slice(0, -"Input".length);
    if (!name.endsWith("Input") || !(base in schemas)) continue;
    if (used.has(base)) pairs.push([name, base]);
    else renames.set(name, base);
  }
  const rewrite = (node: unknown, map: Map<string, string>) =>
    JSON.stringify(node).replace(SCHEMA_REF, (_, name: string) => `"#/components/schemas/${map.get(name) ?? name}"`);
  // Assume every pair merges, then split the ones that differ under that assumption, until none does.
  for (;;) {
    const map = new Map([...renames, ...pairs]);
    const kept = pairs.filter(([input, base]) => rewrite(schemas[input], map) === rewrite(schemas[base], map));
    if (kept.length === pairs.length) break;
    pairs = kept;
  }
  const map = new Map([...renames, ...pairs]);

  const tidied: Record<string, unknown> = {};
  for (const name of [...used].sort()) {
    const target = map.get(name) ?? name;
    if (!(target in tidied)) tidied[target] = JSON.parse(rewrite(schemas[name], map));
  }
  const result = JSON.parse(rewrite({ ...doc, components: { ...(doc as { components?: object }).components } }, map));
  result.components.schemas = tidied;
  return result as T;
}

const problemDescriptions: Record<number, string> = {
  400: "validation-failed: body, query or params fail their schema, or malformed JSON",
  401: "unauthenticated: no or invalid credential",
  403: "forbidden (missing role, not the owner) or account-suspended",
  404: "not-found",
  408: "request-timeout: the body did not arrive in time",
  409: "conflict with the resource's current state",
  413: "payload-too-large: the body (or an uploaded file) is over its limit",
  415: "unsupported-media-type: a body of a type the route does not take",
  422: "validation-failed: well-formed but unusable content (an image truncated or over 40 megapixels)",
  429: "rate-limited, with a Retry-After header",
  503: "service-unavailable, with a Retry-After header: a dependency is down or the server is busy",
};

/** Documents a route's problem+json answers in its `response` schema (error bodies are rendered by the error handler). */
export function problemResponses<S extends number>(...statuses: S[]): Record<S, typeof Problem> {
  return problemResponsesAs(Problem, ...statuses);
}

/** The same, with a problem schema of the route's own (the partner API's carries `message`). */
export function problemResponsesAs<P extends z.ZodType, S extends number>(schema: P, ...statuses: S[]): Record<S, P> {
  return Object.fromEntries(statuses.map((status) => [status, schema.describe(problemDescriptions[status] ?? "problem")])) as Record<S, P>;
}
