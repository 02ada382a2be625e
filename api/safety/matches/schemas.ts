import { z } from "zod";
import { MATCH_KINDS, MATCH_REASONS, MATCH_STATUSES } from "../../../lib/matches.js";
import { PageQuery } from "../../pagination.js";
import { CoarseLocation, PublicAnimal, ReportStatus } from "../schemas.js";

const matchFields = {
  id: z.uuid(),
  score: z.number().min(0).max(1),
  reasons: z.array(z.enum(MATCH_REASONS)).describe("What gave the score, strongest first"),
  distanceKm: z.number().describe("Between the two coarse points, rounded to 0.1 km"),
  createdAt: z.string(),
  status: z.enum(MATCH_STATUSES),
};

/** A match as the lost report's reporter sees it. */
export const Match = z
  .object({ ...matchFields, kind: z.enum(MATCH_KINDS), targetId: z.uuid() })
  .meta({ id: "Match" });

/** A match as the finder sees it: the lost report's public fields only (coarse point, no reporter, no contact). */
export const FinderMatch = z
  .object({
    ...matchFields,
    reasons: z
      .array(z.enum(MATCH_REASONS).exclude(["microchip"]))
      .describe("What gave the score, strongest first; never microchip, which would tell the finder how near their chip is to the owner's"),
    kind: z.literal("lost_report"),
    targetId: z.uuid(),
    lostReport: z.object({
      status: ReportStatus,
      animal: PublicAnimal,
      lastSeenAt: z.string(),
      location: CoarseLocation,
    }),
  })
  .meta({ id: "FinderMatch" });

export const MatchesQuery = PageQuery;
/** Best first: score descending, then id. */
export const MatchCursor = z.object({ s: z.number(), id: z.uuid() });
export type MatchCursor = z.output<typeof MatchCursor>;
