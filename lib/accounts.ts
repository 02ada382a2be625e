import { outerValue, type SqlValue } from "./sql.js";

/**
 * An account's suspension, as the API enforces it and the notifier honours
 * it (no neighbourhood alerts to a suspended subscriber). The row is the
 * service's own record (table `account`, written by the admin routes); no
 * row means active.
 */

/**
 * The condition on an `account` row that its suspension is in force. An
 * expired suspension counts as active: the expiry itself is the restore, with
 * no job that has to run first.
 */
export const ACTIVE_SUSPENSION_SQL = `suspended_at is not null
  and (suspension_expires_at is null or suspension_expires_at > now())`;

/**
 * SQL: true while the actor `actorId` is suspended: a parameter (`$5::text`)
 * or a column of the caller's query qualified by its alias (`l.actor_id`),
 * never a bare name, which `account`'s own columns would capture.
 */
export const actorSuspendedSql = (actorId: SqlValue) =>
  `exists (select 1 from account where account.user_id = ${outerValue(actorId, "account")} and ${ACTIVE_SUSPENSION_SQL})`;
