import { z } from "zod";

export const AnimalIdParams = z.object({ animalId: z.uuid() });

export const RevokeBody = z.object({ reason: z.string().trim().min(1).max(2000) }).meta({ id: "RevokeEmergencyProfile" });
