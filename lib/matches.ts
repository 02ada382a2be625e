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

/** Scores from here up are called strong in words to people; below it a match is a possible one. */
export const STRONG_MATCH_SCORE = 0.85;
/** Scores from here up, and below STRONG_MATCH_SCORE, are called good. */
export const GOOD_MATCH_SCORE = 0.7;

const REASON_WORDS: Partial<Record<MatchReason, string>> = {
  microchip: "the same microchip",
  breed: "breed",
  colors: "colours",
  sex: "sex",
  marks: "similar marks",
  photo: "a similar photo",
};
/** The "same …" reasons, read together: "same breed, colours and sex". */
const SAME_REASONS: ReadonlySet<MatchReason> = new Set(["breed", "colors", "sex"]);

const listInWords = (items: string[]): string =>
  items.length <= 1 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;

/** How long after the animal was last seen it was found, in words: "the same day", "the next day", "5 days later". */
export function whenInWords(gapHours: number): string {
  if (gapHours < 1) return "within the hour";
  if (gapHours < 20) return `${Math.round(gapHours)} ${Math.round(gapHours) === 1 ? "hour" : "hours"} later`;
  if (gapHours < 44) return "the next day";
  return `${Math.round(gapHours / 24)} days later`;
}

/** The lost report's listing of suggestions, which a notification points to. */
export const matchesPath = (lostReportId: string) => `/v1/safety/lost-reports/${lostReportId}/matches`;

/**
 * How strong a suggestion is, in words a person reads:
 * "a strong match: same breed, colours and sex, found 1 km away the next day".
 * A score is a model's estimate, not a certainty, so people are told its
 * strength and the evidence behind it; the number stays in the API.
 */
export function describeMatch(match: {
  score: number;
  kind: MatchKind;
  reasons?: readonly MatchReason[] | undefined;
  distanceM?: number | undefined;
  /** Hours from the lost report's last sighting to when it was found or seen. */
  gapHours?: number | undefined;
  /** With the microchip reason: equal chips, or one keystroke apart. Unset reads as equal. */
  microchip?: "equal" | "near" | undefined;
}): string {
  const strength =
    match.score >= STRONG_MATCH_SCORE ? "a strong match" : match.score >= GOOD_MATCH_SCORE ? "a good match" : "a possible match";
  const reasons = match.reasons ?? [];
  const parts: string[] = [];
  if (reasons.includes("microchip")) parts.push(match.microchip === "near" ? "a microchip number one keystroke from yours" : REASON_WORDS.microchip!);
  const same = reasons.filter((r) => SAME_REASONS.has(r)).map((r) => REASON_WORDS[r]!);
  if (same.length > 0) parts.push(`same ${listInWords(same)}`);
  for (const reason of ["marks", "photo"] as const) if (reasons.includes(reason)) parts.push(REASON_WORDS[reason]!);
  if (match.distanceM !== undefined) {
    const km = match.distanceM / 1000;
    const where = km < 1 ? "less than 1 km away" : `${km < 10 ? Math.round(km * 10) / 10 : Math.round(km)} km away`;
    parts.push(`${match.kind === "sighting" ? "seen" : "found"} ${where}${match.gapHours === undefined ? "" : ` ${whenInWords(match.gapHours)}`}`);
  } else if (match.gapHours !== undefined) {
    parts.push(`${match.kind === "sighting" ? "seen" : "found"} ${whenInWords(match.gapHours)}`);
  }
  return parts.length === 0 ? strength : `${strength}: ${parts.join(", ")}`;
}

/** A scored pair of a lost report and a found report or sighting, as matching writes it to safety_match. */
export interface MatchPair {
  lostReportId: string;
  kind: MatchKind;
  targetId: string;
  score: number;
  reasons: MatchReason[];
  distanceM: number;
}

/** A safety_match row as the API reads it. */
export interface MatchRow extends MatchPair {
  id: string;
  status: MatchStatus;
  createdAt: Date;
}
