import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../deps.js";
import { adminAccountRoutes } from "./accounts/routes.js";
import { adminAlertRoutes } from "./alerts/routes.js";
import { adminAuditRoutes } from "./audit/routes.js";
import { adminEmergencyRoutes } from "./emergency/routes.js";
import { adminJobRoutes } from "./jobs/routes.js";
import { adminModerationRoutes } from "./moderation/routes.js";
import { adminNotificationRoutes } from "./notifications/routes.js";
import { adminOutboxRoutes } from "./outbox/routes.js";
import { adminPartnerRoutes } from "./partners/routes.js";

/**
 * The admin console. Every /v1/admin route is gated to platform_admin by
 * api/plugins/auth.ts whatever it declares, so none of these sets `auth`.
 */
export const adminRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(adminAccountRoutes, deps);
  await app.register(adminAlertRoutes, deps);
  await app.register(adminAuditRoutes, deps);
  await app.register(adminEmergencyRoutes, deps);
  await app.register(adminJobRoutes, deps);
  await app.register(adminModerationRoutes, deps);
  await app.register(adminNotificationRoutes, deps);
  await app.register(adminOutboxRoutes, deps);
  await app.register(adminPartnerRoutes, deps);
};
