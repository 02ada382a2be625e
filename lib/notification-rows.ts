import type { Queryable } from "./db.js";
import type { EventType } from "./events.js";
import { DEFAULT_SMS_KINDS, type Channel, type NotificationKind, type NotificationStatus } from "./notifications.js";
import type { FoundReportPartner } from "./partners.js";

/**
 * Writing notification rows: who gets which channels, and the insert every
 * writer shares (the notifier's consumer, the alert fan-out, the digests).
 * A row's delivery is jobs/delivery/'s.
 */

/** A notification's `data`: ids to follow, and for a shelter's animal the shelter's public contact. */
export type NotificationData = Record<string, string | FoundReportPartner>;

/** What a handler makes of one event; the consumer adds the channels and the source event id. */
export interface NotificationDraft {
  recipientActorId: string;
  kind: NotificationKind;
  /** What the notification is about; see the `superseded` replay rule. */
  sourceKey: string;
  subject: string;
  body: string;
  /** The ids to follow (lostReportId, foundReportId, matchId, animalId, …); a shelter's match adds `partner`, its public contact. */
  data: NotificationData;
  /** Set to count this draft into the recipient's notification of the same group instead (notifier/grouping.ts). */
  group?: NotificationGroup;
}

/**
 * A burst of events about one thing told as one notification: a grouped draft
 * whose event lies within `windowSeconds` of the group's first event writes
 * no notification of its own; the first one's rows take `summary(count)`.
 */
export interface NotificationGroup {
  /** What the group is about (`sighting:<lostReportId>`); one group per recipient and key in a window. */
  key: string;
  windowSeconds: number;
  /** The group's text once it counts `count` events, this draft's event the latest. */
  summary: (count: number) => Pick<NotificationDraft, "subject" | "body" | "data">;
}

/** Who gets email, and for which kinds: null kinds means every kind (contract, part 2). */
export interface EmailPreference {
  email: string | null;
  emailKinds: NotificationKind[] | null;
  /** Kinds pushed to phones; null means every kind. */
  pushKinds?: NotificationKind[] | null;
  /** Whether the recipient has a push subscription now: a push notification is written only then. */
  hasPush?: boolean;
  /** Kinds texted to a verified phone; null means DEFAULT_SMS_KINDS. */
  smsKinds?: NotificationKind[] | null;
  /** Whether the recipient has a verified phone that has not sent STOP: an sms notification is written only then. */
  hasPhone?: boolean;
}

/**
 * The preferences of these recipients, and whether each has a push
 * subscription (migration 000020): a recipient with a subscription and no
 * preference row gets an entry too, with email unset.
 */
export async function emailPreferences(client: Queryable, actorIds: string[]): Promise<Map<string, EmailPreference>> {
  // Most events (a new report, a photo) notify nobody: no round trip for them.
  if (actorIds.length === 0) return new Map();
  const { rows } = await client.query<EmailPreference & { actorId: string }>(
    `select a.id as "actorId", p.email, p.email_kinds as "emailKinds", p.push_kinds as "pushKinds",
       exists (select 1 from push_subscription s where s.actor_id = a.id) as "hasPush",
       p.sms_kinds as "smsKinds",
       p.phone is not null and not exists (select 1 from sms_number n where n.phone = p.phone and n.stopped_at is not null) as "hasPhone"
     from unnest($1::text[]) as a(id)
     left join notification_preference p on p.actor_id = a.id
     where p.actor_id is not null or exists (select 1 from push_subscription s where s.actor_id = a.id)`,
    [actorIds],
  );
  return new Map(rows.map(({ actorId, ...preference }) => [actorId, preference]));
}

/**
 * in_app always; email as well when the recipient set an address and wants
 * this kind by email; push as well when they have a push subscription now
 * and want this kind pushed (pushKinds null: every kind). A recipient with no
 * subscription gets no push row at all, rather than one that dead-letters.
 * sms as well when they have a verified phone that has not sent STOP and want
 * this kind texted (smsKinds null: DEFAULT_SMS_KINDS).
 */
export function channelsFor(kind: NotificationKind, preference: EmailPreference | undefined): Channel[] {
  const email = preference?.email && (preference.emailKinds === null || preference.emailKinds.includes(kind));
  const push = preference?.hasPush && (preference.pushKinds == null || preference.pushKinds.includes(kind));
  const sms = preference?.hasPhone && (preference.smsKinds ?? (DEFAULT_SMS_KINDS as readonly NotificationKind[])).includes(kind);
  const channels: Channel[] = email ? ["in_app", "email"] : ["in_app"];
  if (push) channels.push("push");
  if (sms) channels.push("sms");
  return channels;
}

export interface NewNotification extends NotificationDraft {
  sourceEventId: string;
  /**
   * The source event's occurredAt as its envelope carries it (to the
   * millisecond): notifications are partitioned on it, and it is part of the
   * key that keeps one row per (source event, recipient, channel), so every
   * copy of an event must give the same value (migration 000022). A source
   * that is no event gives a time fixed with its id (a digest's day), or, for
   * a source id made fresh with the row (a contact-message digest), the time
   * it was made.
   */
  sourceOccurredAt: string | Date;
  eventType: EventType;
  channel: Channel;
}

/** A batch of notifications as ten column arrays, the parameters $1–$10 of notificationsUnnest. */
export const notificationArrays = (batch: NewNotification[]): unknown[] => [
  batch.map((n) => n.recipientActorId),
  batch.map((n) => n.channel),
  batch.map((n) => n.sourceEventId),
  batch.map((n) => n.sourceKey),
  batch.map((n) => n.eventType),
  batch.map((n) => n.kind),
  batch.map((n) => n.subject),
  batch.map((n) => n.body),
  batch.map((n) => JSON.stringify(n.data)),
  batch.map((n) => (n.sourceOccurredAt instanceof Date ? n.sourceOccurredAt.toISOString() : n.sourceOccurredAt)),
];

/** The rows of notificationArrays: recipient, channel, source event, source key, event type, kind, subject, body, data, source time. */
export const notificationsUnnest = `unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::jsonb[], $10::timestamptz[])`;

/** The channel whose rows are written sent (newRowStatus). */
const IN_APP: Channel = "in_app";

/** The status a new row is written with when a delivery job still has to send it (needingDelivery). */
export const AWAITING_DELIVERY: NotificationStatus = "pending";

/**
 * status, attempts, round_attempts and sent_at of a new row on channel `c`.
 * An in_app row is written `sent`: the row is the in-app message (read at
 * GET /v1/me/notifications), and its delivery job would only mark it sent, at
 * the price of a job (its insert, claim and delete), an advisory lock, a read
 * and an update for every in-app notification: six statements and two dead
 * tuples, on the same cores as the consumer (`npm run bench`, notifier).
 * Every other row is written AWAITING_DELIVERY.
 */
export const newRowStatus = (c: string) => {
  const inApp = `${c} = '${IN_APP}'`;
  const sent: NotificationStatus = "sent";
  return `case when ${inApp} then '${sent}' else '${AWAITING_DELIVERY}' end,
   case when ${inApp} then 1 else 0 end, case when ${inApp} then 1 else 0 end,
   case when ${inApp} then now() end`;
};

export interface InsertedNotification {
  id: string;
  channel: Channel;
  sourceEventId: string;
  status: NotificationStatus;
}

/**
 * Inserts the notifications that do not exist yet, in one statement, in_app
 * ones written sent (newRowStatus); the unique (source event, its time,
 * recipient, channel) leaves out the ones a redelivery or a second notifier
 * already wrote. Returns the new rows; needingDelivery picks the ones a delivery job
 * still has to send.
 */
export async function insertNotifications(
  client: Queryable,
  batch: NewNotification[],
): Promise<InsertedNotification[]> {
  if (batch.length === 0) return [];
  const { rows } = await client.query<InsertedNotification>(
    `insert into notification (recipient_actor_id, channel, source_event_id, source_key, event_type, kind, subject, body, data,
                               source_occurred_at, status, attempts, round_attempts, sent_at)
     select u.r, u.c, u.e, u.k, u.t, u.kind, u.s, u.b, u.d, u.o, ${newRowStatus("u.c")}
     from ${notificationsUnnest} as u(r, c, e, k, t, kind, s, b, d, o)
     on conflict (source_event_id, source_occurred_at, recipient_actor_id, channel) do nothing
     returning id, channel, source_event_id as "sourceEventId", status`,
    notificationArrays(batch),
  );
  return rows;
}

/** The ids of new notifications that need a delivery job: those newRowStatus wrote AWAITING_DELIVERY. */
export const needingDelivery = (rows: readonly InsertedNotification[]): Array<{ id: string; channel: Channel }> =>
  rows.filter((r) => r.status === AWAITING_DELIVERY).map(({ id, channel }) => ({ id, channel }));

/** Inserts one notification unless it exists; returns the new id, or null. */
export async function insertNotification(client: Queryable, n: NewNotification): Promise<string | null> {
  return (await insertNotifications(client, [n]))[0]?.id ?? null;
}

