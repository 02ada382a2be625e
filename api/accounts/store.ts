import { ACTIVE_SUSPENSION_SQL as activeSuspension } from "../../lib/accounts.js";
import type { Queryable } from "../../lib/db.js";

/**
 * The service's own record about an identity: its suspension. The identity
 * itself lives at the identity provider, so a row exists only once an admin
 * acted on the account; no row means active.
 */

/** True while the account has a suspension that has not been restored or expired. Uncached on purpose. */
export async function isSuspended(client: Queryable, userId: string): Promise<boolean> {
  const { rows } = await client.query({
    name: "account-is-suspended",
    text: `select 1 from account
     where user_id = $1::text
       and ${activeSuspension}`,
    values: [userId],
  });
  return rows.length > 0;
}

export interface AccountRow {
  userId: string;
  suspended: boolean;
  suspendedAt: Date | null;
  suspendedBy: string | null;
  reasonCode: string | null;
  reasonDetail: string | null;
  expiresAt: Date | null;
  restoredAt: Date | null;
  restoredBy: string | null;
  restoreReason: string | null;
}

const accountColumns = `user_id as "userId",
  (${activeSuspension}) as suspended,
  suspended_at as "suspendedAt", suspended_by as "suspendedBy",
  suspension_reason_code as "reasonCode", suspension_reason_detail as "reasonDetail",
  suspension_expires_at as "expiresAt",
  restored_at as "restoredAt", restored_by as "restoredBy", restore_reason as "restoreReason"`;

/** The account row, locked for the caller's transaction; null when no admin ever acted on it. */
export async function lockAccount(client: Queryable, userId: string): Promise<AccountRow | null> {
  const { rows } = await client.query<AccountRow>(
    `select ${accountColumns} from account where user_id = $1::text for update`,
    [userId],
  );
  return rows[0] ?? null;
}

export async function getAccount(client: Queryable, userId: string): Promise<AccountRow | null> {
  const { rows } = await client.query<AccountRow>(`select ${accountColumns} from account where user_id = $1::text`, [
    userId,
  ]);
  return rows[0] ?? null;
}

export interface Suspension {
  reasonCode: string;
  reasonDetail: string;
  expiresAt: string | null;
}

/** Creates or overwrites the suspension; a previous restore is cleared so the row describes one state. */
export async function suspendAccount(
  client: Queryable,
  userId: string,
  suspendedBy: string,
  suspension: Suspension,
): Promise<AccountRow> {
  const { rows } = await client.query<AccountRow>(
    `insert into account (user_id, suspended_at, suspended_by, suspension_reason_code,
                          suspension_reason_detail, suspension_expires_at)
     values ($1::text, now(), $2::text, $3::text, $4::text, $5::timestamptz)
     on conflict (user_id) do update set
       suspended_at = excluded.suspended_at,
       suspended_by = excluded.suspended_by,
       suspension_reason_code = excluded.suspension_reason_code,
       suspension_reason_detail = excluded.suspension_reason_detail,
       suspension_expires_at = excluded.suspension_expires_at,
       restored_at = null,
       restored_by = null,
       restore_reason = null,
       updated_at = now()
     returning ${accountColumns}`,
    [userId, suspendedBy, suspension.reasonCode, suspension.reasonDetail, suspension.expiresAt],
  );
  return rows[0]!;
}

/** Ends the suspension; the reason code and detail stay for the record until the next suspension. */
export async function restoreAccount(
  client: Queryable,
  userId: string,
  restoredBy: string,
  reason: string,
): Promise<AccountRow> {
  const { rows } = await client.query<AccountRow>(
    `update account set
       suspended_at = null,
       restored_at = now(),
       restored_by = $2::text,
       restore_reason = $3::text,
       updated_at = now()
     where user_id = $1::text
     returning ${accountColumns}`,
    [userId, restoredBy, reason],
  );
  return rows[0]!;
}
