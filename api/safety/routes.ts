import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../deps.js";
import { alertRoutes } from "./alerts/routes.js";
import { contactMessageRoutes } from "./contact-messages/routes.js";
import { flagRoutes } from "./flags/routes.js";
import { matchRoutes } from "./matches/routes.js";
import { reportOwnerRoutes } from "./reports/owner-routes.js";
import { reportRoutes } from "./reports/routes.js";
import { shelterRoutes } from "./shelters/routes.js";
import { sightingRoutes } from "./sightings/routes.js";

/** /v1/safety: one module per resource. */
export const safetyRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(reportRoutes, deps);
  await app.register(reportOwnerRoutes, deps);
  await app.register(flagRoutes, deps);
  await app.register(contactMessageRoutes, deps);
  await app.register(alertRoutes, deps);
  await app.register(sightingRoutes, deps);
  await app.register(matchRoutes, deps);
  await app.register(shelterRoutes, deps);
};
