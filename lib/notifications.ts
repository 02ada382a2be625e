/**
 * The notification contract, shared by the API (listings, replay), the
 * notifier (writing and delivering) and the admin console. Every list here is
 * the single source: the types derive from it, and the SQL check constraints
 * are tested against it (tests/foundation/notification-contract.test.ts).
 * It imports nothing, so the admin console's bundle can import it too.
 */

/** The slice of a pg client this module needs (lib/db.ts Queryable fits it). */
interface Queryable {
  query<R>(text: string, values?: unknown[]): Promise<{ rows: R[] }>;
}

export const CHANNELS = ["in_app", "email", "push", "sms"] as const;
export type Channel = (typeof CHANNELS)[number];

export const NOTIFICATION_STATUSES = ["pending", "sent", "failed", "dead_letter"] as const;
export type NotificationStatus = (typeof NOTIFICATION_STATUSES)[number];

/** Statuses the failures listing and replay deal with. */
export const FAILURE_STATUSES = ["failed", "dead_letter"] as const satisfies readonly NotificationStatus[];
export type FailureStatus = (typeof FAILURE_STATUSES)[number];

/** The kind of a contact message's notification. The contract fixes the name, which keeps the spec's older word, relay. */
export const CONTACT_MESSAGE_KIND = "relay_message";

/**
 * The link that confirms a notification address. The API writes it for the
 * address awaiting confirmation, never through the recipient's preferences,
 * so it is not a kind one chooses (emailKinds).
 */
export const EMAIL_CONFIRMATION_KIND = "email_confirmation";

/** A text with the code that confirms a phone number: the only text that goes to a number before it is verified. */
export const PHONE_VERIFICATION_KIND = "phone_verification";

/** The service's own answer to a text: a keyword's confirmation, the HELP text, or why a reply could not be passed on. */
export const SMS_REPLY_KIND = "sms_reply";

/** What a notification is about (contract, part 2); a recipient may limit email to some kinds. */
export const NOTIFICATION_KINDS = [
  CONTACT_MESSAGE_KIND,
  "sighting",
  "match",
  "nearby_lost",
  "tag_scanned",
  "report_expiring",
  "content_moderated",
  "account_suspended",
  EMAIL_CONFIRMATION_KIND,
  PHONE_VERIFICATION_KIND,
  SMS_REPLY_KIND,
  /** What to do in the first hour, to the owner who just filed a lost report (notifier/report-guide/). */
  "report_guide",
] as const;
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/** Kinds the service writes for its own purposes, never through a recipient's choice: not kinds one may choose. */
export const SERVICE_KINDS = [EMAIL_CONFIRMATION_KIND, PHONE_VERIFICATION_KIND, SMS_REPLY_KIND] as const satisfies readonly NotificationKind[];

/** The kinds texted to a verified phone when smsKinds is left unset (contract part 4, "SMS"): nearby_lost only when listed. */
export const DEFAULT_SMS_KINDS = ["match", CONTACT_MESSAGE_KIND, "tag_scanned"] as const satisfies readonly NotificationKind[];
/**
 * The languages a notification written from a catalogue comes in (the
 * report_guide): the API's pages have the same four (api/tag/i18n), and the
 * API names the one its request negotiated in the event.
 */
export const NOTIFICATION_LANGUAGES = ["en", "de", "fr", "es"] as const;
export type NotificationLanguage = (typeof NOTIFICATION_LANGUAGES)[number];

// ---- the delivery lock ------------------------------------------------------

/** Key of the advisory lock a delivery holds, so one notification never has two deliveries at once. */
export function deliveryLockKey(notificationId: string): string {
  return `notification-delivery:${notificationId}`;
}

/** Session lock, held by the delivery job on its own client. */
export async function tryLockDelivery(client: Queryable, notificationId: string): Promise<boolean> {
  const { rows } = await client.query<{ locked: boolean }>(
    `select pg_try_advisory_lock(hashtextextended($1::text, 0)) as locked`,
    [deliveryLockKey(notificationId)],
  );
  return rows[0]!.locked;
}

export async function unlockDelivery(client: Queryable, notificationId: string): Promise<void> {
  await client.query(`select pg_advisory_unlock(hashtextextended($1::text, 0))`, [deliveryLockKey(notificationId)]);
}

/**
 * The session locks of a batch of deliveries in one statement: the ids whose
 * lock this client now holds, in the order given. An id another delivery
 * holds is left out.
 */
export async function tryLockDeliveries(client: Queryable, notificationIds: readonly string[]): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `select u.id from unnest($1::text[], $2::text[]) with ordinality as u(id, key, i)
     where pg_try_advisory_lock(hashtextextended(u.key, 0)) order by u.i`,
    [notificationIds, notificationIds.map(deliveryLockKey)],
  );
  return rows.map((r) => r.id);
}

/** Releases the locks tryLockDeliveries took, in one statement. */
export async function unlockDeliveries(client: Queryable, notificationIds: readonly string[]): Promise<void> {
  if (notificationIds.length === 0) return;
  await client.query(`select pg_advisory_unlock(hashtextextended(k, 0)) from unnest($1::text[]) as k`, [notificationIds.map(deliveryLockKey)]);
}

/** For the replay transaction: false while a delivery of this notification is running. */
export async function tryLockDeliveryInTransaction(client: Queryable, notificationId: string): Promise<boolean> {
  const { rows } = await client.query<{ locked: boolean }>(
    `select pg_try_advisory_xact_lock(hashtextextended($1::text, 0)) as locked`,
    [deliveryLockKey(notificationId)],
  );
  return rows[0]!.locked;
}

// ---- reason categories ------------------------------------------------------

/**
 * The failures console's reasonCategory, derived from last_error. Permanent
 * means a resend cannot help (no deliverer, no address, the provider refused
 * the message); transient means it may succeed later (timeouts, connection
 * errors, SMTP 4xx). An error we do not recognise is treated as transient, so
 * an operator may still replay it.
 */
export const REASON_CATEGORIES = ["transient", "permanent"] as const;
export type ReasonCategory = (typeof REASON_CATEGORIES)[number];

export const NO_DELIVERER = "no deliverer configured for channel";
export const NO_ADDRESS = "no email address configured for recipient";
export const PROVIDER_REJECTED = "provider rejected";
/** A confirmation whose address was changed, cleared or confirmed before its link went out. */
export const CONFIRMATION_GONE = "email confirmation no longer pending";
/** A push notification whose recipient has no push subscription left (each gone, 404/410, or deleted). */
export const NO_PUSH_SUBSCRIPTION = "no push subscription";

/** A push endpoint whose address is refused when the notifier connects (its name now resolves to a private address). */
export const PUSH_ENDPOINT_REFUSED = "push endpoint refused";
/** A text over the daily cap of its number or the service's daily segments: the in-app notification stands. */
export const SMS_BUDGET_EXHAUSTED = "sms budget exhausted";
/** A text to a number that sent STOP (or that the provider reports opted out, code 21610). */
export const SMS_STOPPED = "sms recipient stopped";
/** A text for an actor with no verified phone (none set, or one still waiting for its code). */
export const NO_PHONE = "no verified phone for recipient";
/** A code text whose number was changed, removed or verified before it went out. */
export const PHONE_VERIFICATION_GONE = "phone verification no longer pending";

/** Push kinds sent with `Urgency: high` (RFC 8030 5.3): the ones an owner out searching must see at once. */
export const HIGH_URGENCY_KINDS: readonly NotificationKind[] = ["match", CONTACT_MESSAGE_KIND, "sighting", "tag_scanned"];

const permanentPatterns = [
  new RegExp(NO_DELIVERER, "i"),
  new RegExp(NO_ADDRESS, "i"),
  new RegExp(PROVIDER_REJECTED, "i"),
  new RegExp(CONFIRMATION_GONE, "i"),
  new RegExp(NO_PUSH_SUBSCRIPTION, "i"),
  new RegExp(PUSH_ENDPOINT_REFUSED, "i"),
  new RegExp(SMS_BUDGET_EXHAUSTED, "i"),
  new RegExp(SMS_STOPPED, "i"),
  new RegExp(NO_PHONE, "i"),
  new RegExp(PHONE_VERIFICATION_GONE, "i"),
  /\bsmtp 5\d\d\b/i,
];

export function reasonCategory(lastError: string | null): ReasonCategory {
  if (lastError && permanentPatterns.some((p) => p.test(lastError))) return "permanent";
  return "transient";
}

/** The most notifications one batch delivery job delivers (NOTIFIER_ALERT_DELIVERY_BATCH's bound). */
export const DELIVERY_BATCH_MAX = 100;
