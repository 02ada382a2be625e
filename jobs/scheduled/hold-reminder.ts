import { withTransaction, type Pool, type Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { heldUntilSql, type HoldingPartner } from "../../lib/partners.js";
import { enqueueDeliveries } from "../queue.js";
import { holdEndText } from "../../lib/hold-text.js";
import { channelsFor, emailPreferences, insertNotifications, needingDelivery, type NotificationDraft } from "../../lib/notification-rows.js";
import { derivedSourceId } from "../../lib/source-id.js";

/**
 * The stray hold's reminder (contract part 4, "Stray holds"): a suggestion
 * of a found animal a shelter partner holds, neither confirmed nor dismissed
 * 24 hours before the hold ends, gets its lost report's owner one more
 * `match` notification: the hold ends, with the shelter's contact. Run by
 * the notifier's cron (jobs/scheduled/task.ts), every few minutes.
 *
 * At most once per suggestion, whatever runs, retries or restarts: the
 * suggestions due are taken `for update skip locked` and marked
 * hold_reminded_at in the transaction that writes their notifications, and
 * each notification's source id is derived from the suggestion, so even a
 * second writer would meet the unique (source, recipient, channel). A run
 * that comes late still reminds while the hold lasts; once it has ended, a
 * reminder is no use and none is sent.
 */

/** How long before the hold's end the owner is reminded. */
export const HOLD_REMINDER_LEAD_HOURS = 24;
/** Suggestions reminded in one transaction; a run goes on until none is due. */
const BATCH = 200;

/** A suggestion whose hold ends within the lead time. */
export interface DueReminder {
  matchId: string;
  lostReportId: string;
  foundReportId: string;
  ownerId: string;
  /** When the suggestion was made: the notification's source time, fixed with it. */
  suggestedAt: Date;
  partner: HoldingPartner;
}

/**
 * Takes and marks the suggestions due: kind found_report, still suggested,
 * not reminded, both reports open and the found one in a partner's custody
 * and not hidden by a moderator, made before the reminder's time, with the
 * hold ending within HOLD_REMINDER_LEAD_HOURS from now and not yet ended.
 */
export async function takeDueReminders(client: Queryable, limit = BATCH): Promise<DueReminder[]> {
  const heldUntil = heldUntilSql("f", "p");
  const { rows } = await client.query<DueReminder>(
    `with due as (
       select m.id
       from safety_match m
       join safety_found_report f on f.id = m.target_id
       join partner p on p.id = f.partner_id
       join safety_lost_report l on l.id = m.lost_report_id
       where m.kind = 'found_report' and m.status = 'suggested' and m.hold_reminded_at is null
         and f.status = 'open' and l.status = 'open'
         and not exists (select from moderation_content_state c where c.target_type = 'found_report' and c.target_id = f.id)
         and ${heldUntil} > now()
         and ${heldUntil} - make_interval(hours => $1::int) <= now()
         and m.created_at <= ${heldUntil} - make_interval(hours => $1::int)
       order by ${heldUntil}, m.id
       limit $2::int
       for update of m skip locked
     ),
     marked as (
       update safety_match m set hold_reminded_at = now() from due where m.id = due.id
       returning m.id, m.lost_report_id, m.target_id, m.created_at
     )
     select marked.id as "matchId", marked.lost_report_id as "lostReportId", marked.target_id as "foundReportId",
       l.reporter_id as "ownerId", marked.created_at as "suggestedAt",
       jsonb_build_object('name', p.name, 'kind', p.kind) || jsonb_strip_nulls(p.public_contact)
         || jsonb_build_object('heldUntil', to_char(${heldUntil} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) as partner
     from marked
     join safety_found_report f on f.id = marked.target_id
     join partner p on p.id = f.partner_id
     join safety_lost_report l on l.id = marked.lost_report_id`,
    [HOLD_REMINDER_LEAD_HOURS, limit],
  );
  return rows;
}

/** The reminder: when the hold ends and how to reach the shelter now. */
export function holdReminderDraft(due: DueReminder): NotificationDraft {
  const { partner } = due;
  const contact = [partner.phone, partner.email, partner.address, partner.website].filter(Boolean).join(", ");
  const until = holdEndText(partner.heldUntil);
  return {
    recipientActorId: due.ownerId,
    kind: "match",
    sourceKey: `match:${due.matchId}:hold_ending`,
    subject: `The animal that may be yours is held at ${partner.name} only until ${until}`,
    body:
      `A found animal that may be yours is at ${partner.name}${contact ? ` (${contact})` : ""}. ` +
      `${partner.name} holds it as a stray until ${until}; after that it may be rehomed. ` +
      "If it is yours, contact the shelter now, and confirm the match in your report's matches; if it is not, dismiss it.",
    data: { matchId: due.matchId, lostReportId: due.lostReportId, foundReportId: due.foundReportId, partner },
  };
}

/** The reminder's source id: the same suggestion always gives the same one. */
export const reminderSourceId = (matchId: string): string => derivedSourceId(`stray-hold-reminder\n${matchId}`);

/** Reminds every suggestion due, a batch a transaction; returns how many were reminded. */
export async function runHoldReminders(pool: Pool): Promise<number> {
  let reminded = 0;
  for (;;) {
    const count = await withTransaction(pool, async (client) => {
      const due = await takeDueReminders(client);
      if (due.length === 0) return 0;
      const preferences = await emailPreferences(client, [...new Set(due.map((d) => d.ownerId))]);
      const inserted = await insertNotifications(
        client,
        due.flatMap((d) => {
          const draft = holdReminderDraft(d);
          return channelsFor(draft.kind, preferences.get(d.ownerId)).map((channel) => ({
            ...draft,
            sourceEventId: reminderSourceId(d.matchId),
            sourceOccurredAt: d.suggestedAt,
            eventType: EventType.MatchSuggested,
            channel,
          }));
        }),
      );
      await enqueueDeliveries(client, needingDelivery(inserted));
      return due.length;
    });
    reminded += count;
    if (count < BATCH) return reminded;
  }
}
