import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { AuditAction, AuditObject, writeAuditEvent } from "../../../lib/audit.js";
import { withTransaction } from "../../../lib/db.js";
import { EventType } from "../../../lib/events.js";
import { recordEvent } from "../../../lib/outbox.js";
import { problems } from "../../../lib/problems.js";
import { getAccount, lockAccount, restoreAccount, suspendAccount } from "../../accounts/store.js";
import type { AppDeps } from "../../deps.js";
import { requireActor } from "../../plugins/auth.js";
import { problemResponses } from "../../plugins/openapi.js";
import { RestoreBody, SuspendBody, SuspensionState, toSuspensionState, UserIdParams } from "./schemas.js";

export const adminAccountRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  app.get(
    "/v1/admin/accounts/:userId",
    {
      schema: {
        tags: ["admin"],
        summary: "Read an account's suspension state",
        description: "An account no admin has acted on is active. An expired suspension reads as active.",
        params: UserIdParams,
        response: { 200: SuspensionState, ...problemResponses(400, 401, 403) },
      },
    },
    async (request) => toSuspensionState(request.params.userId, await getAccount(pool, request.params.userId)),
  );

  app.post(
    "/v1/admin/accounts/:userId/suspend",
    {
      schema: {
        tags: ["admin"],
        summary: "Suspend an account",
        description:
          "Rejects the account on every endpoint from its next request on (403 account-suspended). " +
          "Without expiresAt the suspension lasts until a restore; with it, the account is active again once expiresAt passes. " +
          "Suspending an already suspended account replaces the suspension (new reason and expiry) and is audited again. " +
          "An admin cannot suspend their own account (409 self-suspension). Audited as admin.account_suspended in the same transaction.",
        params: UserIdParams,
        body: SuspendBody,
        response: { 200: SuspensionState, ...problemResponses(400, 401, 403, 409) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { userId } = request.params;
      if (userId === actor.id) throw problems.selfSuspension();
      const { reasonCode, reasonDetail, expiresAt = null } = request.body;
      const account = await withTransaction(pool, async (client) => {
        const previous = await lockAccount(client, userId);
        const suspended = await suspendAccount(client, userId, actor.id, { reasonCode, reasonDetail, expiresAt });
        await writeAuditEvent(client, {
          actorId: actor.id,
          action: AuditAction.AccountSuspended,
          objectType: AuditObject.Account,
          objectId: userId,
          metadata: { reasonCode, reasonDetail, expiresAt, previousStatus: previous?.suspended ? "suspended" : "active" },
        });
        await recordEvent(client, EventType.AccountSuspended, { userId, reasonCode, expiresAt }, request.log);
        return suspended;
      });
      return toSuspensionState(userId, account);
    },
  );

  app.post(
    "/v1/admin/accounts/:userId/restore",
    {
      schema: {
        tags: ["admin"],
        summary: "Restore a suspended account",
        description:
          "Ends the suspension at once. Restoring an account that is not suspended (never suspended, already restored, " +
          "or its suspension expired) is refused with 409 conflict and changes nothing, so the audit log only records real restores. " +
          "Audited as admin.account_restored in the same transaction.",
        params: UserIdParams,
        body: RestoreBody,
        response: { 200: SuspensionState, ...problemResponses(400, 401, 403, 409) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { userId } = request.params;
      const { reason } = request.body;
      const account = await withTransaction(pool, async (client) => {
        const previous = await lockAccount(client, userId);
        if (!previous?.suspended) throw problems.conflict("the account is not suspended");
        const restored = await restoreAccount(client, userId, actor.id, reason);
        await writeAuditEvent(client, {
          actorId: actor.id,
          action: AuditAction.AccountRestored,
          objectType: AuditObject.Account,
          objectId: userId,
          metadata: { reason, suspendedBy: previous.suspendedBy, suspensionReasonCode: previous.reasonCode },
        });
        return restored;
      });
      return toSuspensionState(userId, account);
    },
  );
};
