import { z } from "zod";
import { MAX_RADIUS_KM, MIN_RADIUS_KM } from "../../lib/alerts.js";
import { Point, Species } from "../schemas.js";

export const CreateAlertSubscriptionBody = z
  .object({
    location: Point.describe("The centre of the area, kept precisely and shown only to you."),
    radiusKm: z.number().min(MIN_RADIUS_KM).max(MAX_RADIUS_KM),
    species: z
      .array(Species)
      .min(1)
      .max(5)
      .refine((list) => new Set(list).size === list.length, { message: "lists a species twice" })
      .optional()
      .describe("Only these species; left out, every species."),
  })
  .meta({ id: "CreateAlertSubscription" });
export type CreateAlertSubscriptionBody = z.output<typeof CreateAlertSubscriptionBody>;

export const AlertSubscription = z
  .object({
    id: z.uuid(),
    location: z.object({ lat: z.number(), lon: z.number() }).describe("Precise: only its owner ever sees it."),
    radiusKm: z.number(),
    species: z.array(Species).nullable().describe("null: every species."),
    createdAt: z.string(),
  })
  .meta({ id: "AlertSubscription" });

export const UnsubscribeQuery = z.object({
  token: z.string().min(1).max(400).describe("The signed token of an alert email's List-Unsubscribe link."),
});

export const Unsubscribed = z.object({ unsubscribed: z.literal(true) }).meta({ id: "AlertUnsubscribed" });
