import type { Queryable } from "../db.js";
import { statusRankSql, type SmsStatus } from "./status.js";

/**
 * The SMS rows both the API (webhooks) and the notifier (the sms deliverer)
 * write: the numbers the service texts or hears from, and the texts the
 * provider took with their delivery status. Numbers are E.164 strings.
 */

export interface SmsNumber {
  id: string;
  phone: string;
  stopped: boolean;
  /** It has written to the service at least once. */
  wrote: boolean;
  /** The service has texted it at least once. */
  texted: boolean;
}

/** The recipient of a notification to a number no actor has (a finder's, a keyword's answer): its sms_number row, never the number. */
export const phoneRecipient = (numberId: string): string => `phone:${numberId}`;

/** The sms_number id of a phoneRecipient, or null for an actor. */
export const numberIdOf = (recipient: string): string | null => /^phone:([0-9a-f-]{36})$/i.exec(recipient)?.[1] ?? null;

const NUMBER_COLUMNS = `id, phone, stopped_at is not null as stopped, wrote_at is not null as wrote, texted_at is not null as texted`;

/** The number's row, made when it has none. */
export async function upsertNumber(client: Queryable, phone: string): Promise<SmsNumber> {
  const { rows } = await client.query<SmsNumber>(
    `with made as (
       insert into sms_number (phone) values ($1::text) on conflict (phone) do nothing returning ${NUMBER_COLUMNS}
     )
     select * from made
     union all
     select ${NUMBER_COLUMNS} from sms_number where phone = $1::text and not exists (select 1 from made)`,
    [phone],
  );
  return rows[0]!;
}

export async function numberById(client: Queryable, id: string): Promise<SmsNumber | null> {
  const { rows } = await client.query<SmsNumber>(`select ${NUMBER_COLUMNS} from sms_number where id = $1::uuid`, [id]);
  return rows[0] ?? null;
}

/** STOP (or the provider's opted-out code): no text of any kind goes to it until START. True when it was not stopped before. */
export async function stopNumber(client: Queryable, phone: string): Promise<boolean> {
  // A number stopped before keeps its earlier time; one stopped now has the transaction's now().
  const { rows } = await client.query<{ newly: boolean }>(
    `insert into sms_number (phone, stopped_at) values ($1::text, now())
     on conflict (phone) do update set stopped_at = coalesce(sms_number.stopped_at, excluded.stopped_at)
     returning stopped_at = now() as newly`,
    [phone],
  );
  return rows[0]!.newly;
}

export interface SmsSendUpdate {
  sid: string;
  status: SmsStatus;
  errorCode?: number | null;
  /** Set by the delivery that sent it; a callback that arrives first leaves them for it. */
  notificationId?: string;
  kind?: string;
  segments?: number;
}

/**
 * Records a text the provider took, or a status its callback reported: a
 * status replaces only one of a lower rank (lib/sms/status.ts), so a late
 * `sent` never hides `delivered`. Either may come first. Returns the status recorded now.
 */
export async function recordSmsSend(client: Queryable, update: SmsSendUpdate): Promise<SmsStatus> {
  const { rows } = await client.query<{ status: SmsStatus }>(
    `insert into sms_send (sid, status, error_code, notification_id, kind, segments)
     values ($1::text, $2::text, $3::int, $4::uuid, $5::text, $6::int)
     on conflict (sid) do update set
       status = case when ${statusRankSql("excluded.status")} > ${statusRankSql("sms_send.status")} then excluded.status else sms_send.status end,
       error_code = coalesce(excluded.error_code, sms_send.error_code),
       notification_id = coalesce(excluded.notification_id, sms_send.notification_id),
       kind = coalesce(excluded.kind, sms_send.kind),
       segments = coalesce(excluded.segments, sms_send.segments),
       updated_at = now()
     returning status`,
    [update.sid, update.status, update.errorCode ?? null, update.notificationId ?? null, update.kind ?? null, update.segments ?? null],
  );
  return rows[0]!.status;
}
