/**
 * The delivery statuses a provider reports for a text, in the order they
 * happen. Callbacks may arrive out of order (sent after delivered), so a
 * status is recorded only over one of a lower rank; the final ones share the
 * top rank.
 */
export const SMS_STATUSES = ["accepted", "scheduled", "queued", "sending", "sent", "delivered", "undelivered", "failed", "canceled", "read"] as const;
export type SmsStatus = (typeof SMS_STATUSES)[number];

const RANKS: Record<SmsStatus, number> = {
  accepted: 0,
  scheduled: 0,
  queued: 0,
  sending: 1,
  sent: 2,
  delivered: 3,
  undelivered: 3,
  failed: 3,
  canceled: 3,
  read: 3,
};

/** An SQL expression of a status column's rank (lowercase SQL; `column` is an already-escaped identifier or expression). */
export const statusRankSql = (column: string): string =>
  `case ${column} ${Object.entries(RANKS)
    .map(([status, rank]) => `when '${status}' then ${rank}`)
    .join(" ")} else -1 end`;

/** The provider's error code of an opted-out recipient: the number counts as stopped. */
export const OPTED_OUT_CODE = 21610;
