import swagger from "@fastify/swagger";
import apiReference from "@scalar/fastify-api-reference";
import type { FastifyInstance } from "fastify";
import { jsonSchemaTransform, jsonSchemaTransformObject } from "fastify-type-provider-zod";
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
          "Errors are RFC 7807 application/problem+json. Listings take ?limit= (default 50, max 200) and an opaque ?cursor=.",
      },
      components: {
        securitySchemes: {
          bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" },
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
    transformObject: jsonSchemaTransformObject,
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

const problemDescriptions: Record<number, string> = {
  400: "validation-failed: body, query or params fail their schema, or malformed JSON",
  401: "unauthenticated: no or invalid credential",
  403: "forbidden (missing role, not the owner) or account-suspended",
  404: "not-found",
  409: "conflict with the resource's current state",
  429: "rate-limited, with a Retry-After header",
};

/** Documents a route's problem+json answers in its `response` schema (error bodies are rendered by the error handler). */
export function problemResponses<S extends number>(...statuses: S[]): Record<S, typeof Problem> {
  return Object.fromEntries(
    statuses.map((status) => [status, Problem.describe(problemDescriptions[status] ?? "problem")]),
  ) as Record<S, typeof Problem>;
}
