/** A contact message as a moderation target. The contract fixes the name, which keeps the spec's older word, relay. */
export const CONTACT_MESSAGE_TARGET_TYPE = "relay_message";

/** What can be reported and moderated; the SQL check constraints on target_type agree (tests/foundation). */
export const MODERATION_TARGET_TYPES = ["lost_report", "found_report", "sighting", CONTACT_MESSAGE_TARGET_TYPE, "photo"] as const;
export type ModerationTargetType = (typeof MODERATION_TARGET_TYPES)[number];

/** The states that hide content from every public read. */
export const CONTENT_STATES = ["quarantined", "removed"] as const;
export type ContentState = (typeof CONTENT_STATES)[number];
