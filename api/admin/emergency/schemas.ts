import { z } from "zod";

export const AnimalIdParams = z.object({ animalId: z.uuid() });

/** Why an admin acts: kept in the audit event. */
const reason = z.string().trim().min(1).max(2000);

export const RevokeBody = z.object({ reason }).meta({ id: "RevokeEmergencyProfile" });

export const LiftRevocationBody = z.object({ reason }).meta({ id: "LiftEmergencyProfileRevocation" });
