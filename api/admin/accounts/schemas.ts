import { z } from "zod";
import type { AccountRow } from "../../accounts/store.js";
import { ACTOR_ID } from "../../plugins/auth.js";
import { Timestamp } from "../../schemas.js";

const text = (max: number) => z.string().trim().min(1).max(max);

export const UserIdParams = z.object({
  userId: z.string().regex(ACTOR_ID, "must be an actor id (the identity provider's sub)"),
});

export const SuspendBody = z
  .object({
    reasonCode: z
      .string()
      .regex(/^[a-z][a-z0-9_]{1,63}$/, "must be a lowercase code such as spam, scam or abuse"),
    reasonDetail: text(2000),
    // Checked when the request arrives: a suspension that is already over would suspend nothing.
    expiresAt: Timestamp.refine((value) => Date.parse(value) > Date.now(), "must be in the future").optional(),
  })
  .meta({ id: "SuspendAccount" });

export type SuspendBody = z.output<typeof SuspendBody>;

export const RestoreBody = z.object({ reason: text(2000) }).meta({ id: "RestoreAccount" });

export const SuspensionState = z
  .object({
    userId: z.string(),
    status: z.enum(["active", "suspended"]),
    reasonCode: z.string().optional(),
    reasonDetail: z.string().optional(),
    expiresAt: z.string().optional(),
    suspendedBy: z.string().optional(),
    suspendedAt: z.string().optional(),
    restoredBy: z.string().optional(),
    restoredAt: z.string().optional(),
    restoreReason: z.string().optional(),
  })
  .meta({ id: "SuspensionState" });

export type SuspensionState = z.output<typeof SuspensionState>;

/** Suspension fields only while suspended; the last restore only while active. */
export function toSuspensionState(userId: string, row: AccountRow | null): SuspensionState {
  if (!row) return { userId, status: "active" };
  if (row.suspended) {
    return {
      userId,
      status: "suspended",
      reasonCode: row.reasonCode ?? undefined,
      reasonDetail: row.reasonDetail ?? undefined,
      expiresAt: row.expiresAt?.toISOString(),
      suspendedBy: row.suspendedBy ?? undefined,
      suspendedAt: row.suspendedAt?.toISOString(),
    };
  }
  return {
    userId,
    status: "active",
    restoredBy: row.restoredBy ?? undefined,
    restoredAt: row.restoredAt?.toISOString(),
    restoreReason: row.restoreReason ?? undefined,
  };
}
