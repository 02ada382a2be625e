import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { AuditAction, AuditObject, writeAuditEvent } from "../../../lib/audit.js";
import { withTransaction } from "../../../lib/db.js";
import { hashPassword, newPartnerPassword } from "../../../lib/partners.js";
import { problems } from "../../../lib/problems.js";
import type { AppDeps } from "../../deps.js";
import { decodeTimeIdCursor, page, PageQuery, toPage } from "../../pagination.js";
import { requireActor } from "../../plugins/auth.js";
import { problemResponses } from "../../plugins/openapi.js";
import {
  CreatePartnerBody,
  Partner,
  PartnerIdParams,
  PartnerPassword,
  partnerView,
  RestorePartnerBody,
  SuspendPartnerBody,
  UpdatePartnerBody,
} from "./schemas.js";
import * as store from "./store.js";

/**
 * Shelter partners as an admin resource (contract parts 3 and 4). Every mutation
 * writes its audit event in the same transaction; a new password is shown
 * once and stored as an scrypt hash (lib/partners.ts).
 */
export const adminPartnerRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  app.post(
    "/v1/admin/partners",
    {
      schema: {
        tags: ["admin"],
        summary: "Create a shelter partner",
        description:
          "Answers its id and a password, shown this once. The partner's software logs in at POST /partners/v2/auth/login with " +
          "loginEmail and that password. A publicContact.email gets the partner's `match` email (an address an admin entered " +
          "counts as confirmed). A loginEmail already in use is 409. Audited as admin.partner.created.",
        body: CreatePartnerBody,
        response: { 201: PartnerPassword, ...problemResponses(400, 401, 403, 409) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const body = request.body;
      const password = newPartnerPassword();
      const passwordHash = await hashPassword(password);
      const row = await withTransaction(pool, async (client) => {
        const created = await store.insertPartner(client, { ...body, passwordHash, createdBy: actor.id });
        if (!created) throw problems.conflict("a partner already logs in with this email");
        await store.setPartnerNotificationEmail(client, created.id, body.publicContact.email);
        await writeAuditEvent(client, {
          actorId: actor.id,
          action: AuditAction.PartnerCreated,
          objectType: AuditObject.Partner,
          objectId: created.id,
          metadata: { name: created.name, kind: created.kind, dateFormat: created.dateFormat, strayHoldDays: created.strayHoldDays },
        });
        return created;
      });
      return reply.code(201).send({ id: row.id, password });
    },
  );

  app.get(
    "/v1/admin/partners",
    {
      schema: {
        tags: ["admin"],
        summary: "List shelter partners, newest first",
        querystring: PageQuery,
        response: { 200: page(Partner), ...problemResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query;
      const rows = await store.listPartners(pool, limit, decodeTimeIdCursor(cursor));
      return toPage(rows, limit, partnerView);
    },
  );

  app.patch(
    "/v1/admin/partners/:id",
    {
      schema: {
        tags: ["admin"],
        summary: "Edit a shelter partner",
        description:
          "Any of name, publicContact (replaced as a whole), location, dateFormat and strayHoldDays; at least one, and no other " +
          "field (400). Answers the partner as it is now. A new publicContact.email becomes its address for `match` email, and " +
          "none stops that email. strayHoldDays applies to the animals it holds now: their heldUntil moves with it. A new " +
          "location is where the animals it publishes from then on are found; those published already stay where they are. " +
          "Audited as admin.partner.updated, with each changed field's value before and after.",
        params: PartnerIdParams,
        body: UpdatePartnerBody,
        response: { 200: Partner, ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { id } = request.params;
      const body = request.body;
      const row = await withTransaction(pool, async (client) => {
        const previous = await store.lockPartner(client, id);
        if (!previous) throw problems.notFound("partner");
        const updated = await store.updatePartner(client, id, body);
        if (body.publicContact) await store.setPartnerNotificationEmail(client, id, body.publicContact.email);
        const before = partnerView(previous);
        const after = partnerView(updated);
        const fields = (["name", "location", "publicContact", "dateFormat", "strayHoldDays"] as const).filter(
          (field) => body[field] !== undefined && JSON.stringify(before[field]) !== JSON.stringify(after[field]),
        );
        await writeAuditEvent(client, {
          actorId: actor.id,
          action: AuditAction.PartnerUpdated,
          objectType: AuditObject.Partner,
          objectId: id,
          metadata: { changed: Object.fromEntries(fields.map((field) => [field, { from: before[field], to: after[field] }])) },
        });
        return updated;
      });
      return partnerView(row);
    },
  );

  app.post(
    "/v1/admin/partners/:id/rotate-password",
    {
      schema: {
        tags: ["admin"],
        summary: "Give a partner a new password",
        description:
          "The old password stops working at once, and every token issued under it dies. The new one is shown this once. " +
          "Audited as admin.partner.password_rotated.",
        params: PartnerIdParams,
        response: { 200: PartnerPassword, ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { id } = request.params;
      const password = newPartnerPassword();
      const passwordHash = await hashPassword(password);
      await withTransaction(pool, async (client) => {
        if (!(await store.lockPartner(client, id))) throw problems.notFound("partner");
        await store.setPassword(client, id, passwordHash);
        await writeAuditEvent(client, { actorId: actor.id, action: AuditAction.PartnerPasswordRotated, objectType: AuditObject.Partner, objectId: id });
      });
      return { id, password };
    },
  );

  app.post(
    "/v1/admin/partners/:id/suspend",
    {
      schema: {
        tags: ["admin"],
        summary: "Suspend a partner",
        description:
          "Every partner API call of the partner is 403 account-suspended from its next request on, and its tokens die. " +
          "Suspending a suspended partner replaces the reason and is audited again. Its animals stay as they are. " +
          "Audited as admin.partner.suspended.",
        params: PartnerIdParams,
        body: SuspendPartnerBody,
        response: { 200: Partner, ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { id } = request.params;
      const { reasonCode, reasonDetail } = request.body;
      const row = await withTransaction(pool, async (client) => {
        const previous = await store.lockPartner(client, id);
        if (!previous) throw problems.notFound("partner");
        const suspended = await store.suspendPartner(client, id, actor.id, `${reasonCode}: ${reasonDetail}`);
        await writeAuditEvent(client, {
          actorId: actor.id,
          action: AuditAction.PartnerSuspended,
          objectType: AuditObject.Partner,
          objectId: id,
          metadata: { reasonCode, reasonDetail, previousStatus: previous.suspendedAt ? "suspended" : "active" },
        });
        return suspended;
      });
      return partnerView(row);
    },
  );

  app.post(
    "/v1/admin/partners/:id/restore",
    {
      schema: {
        tags: ["admin"],
        summary: "Restore a suspended partner",
        description:
          "Its calls are accepted again; it logs in anew (its tokens died with the suspension). Restoring a partner that is " +
          "not suspended is 409 and changes nothing. Audited as admin.partner.restored.",
        params: PartnerIdParams,
        body: RestorePartnerBody,
        response: { 200: Partner, ...problemResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { id } = request.params;
      const row = await withTransaction(pool, async (client) => {
        const previous = await store.lockPartner(client, id);
        if (!previous) throw problems.notFound("partner");
        if (!previous.suspendedAt) throw problems.conflict("the partner is not suspended");
        const restored = await store.restorePartner(client, id, actor.id);
        await writeAuditEvent(client, {
          actorId: actor.id,
          action: AuditAction.PartnerRestored,
          objectType: AuditObject.Partner,
          objectId: id,
          metadata: { reason: request.body.reason, suspendedBy: previous.suspendedBy, suspensionReason: previous.suspensionReason },
        });
        return restored;
      });
      return partnerView(row);
    },
  );
};
