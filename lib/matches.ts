/** The matching vocabulary shared by the notifier (which scores) and the API (which lists and decides). */
export const MATCH_REASONS = ["microchip", "breed", "colors", "sex", "distance", "time", "marks", "photo"] as const;
export type MatchReason = (typeof MATCH_REASONS)[number];

/** What a lost report is matched with. */
export const MATCH_KINDS = ["found_report", "sighting"] as const;
export type MatchKind = (typeof MATCH_KINDS)[number];

export const MATCH_STATUSES = ["suggested", "confirmed", "dismissed"] as const;
export type MatchStatus = (typeof MATCH_STATUSES)[number];

/** A suggestion is kept from this score up (contract). */
export const SUGGESTION_THRESHOLD = 0.5;
