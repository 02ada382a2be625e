/** SQL fragments shared by the safety stores. */

/** A moderation_content_state row makes content invisible on public reads. */
export const moderationStateOf = (targetType: string, idColumn: string) =>
  `(select m.state from moderation_content_state m
    where m.target_type = '${targetType}' and m.target_id = ${idColumn})`;

/** The stored coarse point as the row fields views read. */
export const coarseColumns = (column: string) =>
  `st_y(${column}::geometry) as "coarseLat", st_x(${column}::geometry) as "coarseLon"`;
