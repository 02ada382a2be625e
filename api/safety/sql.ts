import type { ModerationTargetType } from "../../lib/moderation.js";
import { outerValue, type SqlColumn } from "../../lib/sql.js";

/** SQL fragments shared by the safety stores. */

/**
 * A moderation_content_state row makes content invisible on public reads:
 * its state, or null, for the caller's row whose id is `idColumn`
 * (alias-qualified, `r.id`; not `m.`, the fragment's own alias).
 */
export const moderationStateOf = (targetType: ModerationTargetType, idColumn: SqlColumn) =>
  `(select m.state from moderation_content_state m
    where m.target_type = '${targetType}' and m.target_id = ${outerValue(idColumn, "m")})`;

/** The stored coarse point as the row fields views read. */
export const coarseColumns = (column: string) =>
  `st_y(${column}::geometry) as "coarseLat", st_x(${column}::geometry) as "coarseLon"`;
