/** What can be reported and moderated; the SQL check constraints on target_type agree (tests/foundation). */
export const MODERATION_TARGET_TYPES = ["lost_report", "found_report", "sighting", "relay_message", "photo"] as const;
export type ModerationTargetType = (typeof MODERATION_TARGET_TYPES)[number];

/** The states that hide content from every public read. */
export const CONTENT_STATES = ["quarantined", "removed"] as const;
export type ContentState = (typeof CONTENT_STATES)[number];
