import { z } from "zod";
import { Point } from "../schemas.js";
import { CoarseLocation, PastTimestamp, text } from "../safety/schemas.js";

export const ReportAnimalLostBody = z
  .object({
    lastSeenAt: PastTimestamp,
    location: Point,
    description: text(5000).optional(),
  })
  .meta({ id: "ReportAnimalLost" });

export const Scan = z
  .object({
    id: z.uuid(),
    scannedAt: z.string(),
    location: CoarseLocation.nullable().describe("The ~1 km cell the finder shared with a message from the tag page; null when they shared none."),
  })
  .meta({ id: "TagScan" });
