import { z } from "zod";
import { Species } from "../schemas.js";
import { PhotoList } from "../photos/schemas.js";
import { text } from "../safety/schemas.js";

export const RegisterAnimalBody = z
  .object({
    name: text(100),
    species: Species,
    breed: text(100).optional(),
    colors: z.array(text(40)).max(10).optional(),
  })
  .meta({ id: "RegisterAnimal" });
export type RegisterAnimalBody = z.output<typeof RegisterAnimalBody>;

export const AnimalCreated = z.object({ id: z.uuid() });

export const EmergencyProfileBody = z
  .object({
    medicalNotes: text(2000).optional(),
    instructions: text(2000).optional(),
    showName: z.boolean(),
  })
  .meta({ id: "EmergencyProfile" });
export type EmergencyProfileBody = z.output<typeof EmergencyProfileBody>;

export const EmergencyToken = z
  .object({
    token: z.string().describe("Shown once: only its SHA-256 hash is stored"),
    url: z.string().describe("The public QR link: {API_PUBLIC_BASE_URL}/emergency/{token}"),
  })
  .meta({ id: "EmergencyToken" });

export const Animal = z
  .object({
    id: z.uuid(),
    name: z.string(),
    species: Species,
    breed: z.string().optional(),
    colors: z.array(z.string()),
    createdAt: z.string(),
    emergencyProfile: z
      .object({
        showName: z.boolean(),
        medicalNotes: z.string().optional(),
        instructions: z.string().optional(),
        issuedAt: z.string(),
        revokedAt: z.string().nullable(),
      })
      .nullable(),
    photos: PhotoList,
  })
  .meta({ id: "Animal" });

/** Bounded so junk never reaches the database; anything that is not a token we issued is a plain 404. */
export const TokenParams = z.object({ token: z.string().max(200) });

export const PublicEmergencyProfile = z
  .object({
    name: z.string().optional(),
    species: Species,
    breed: z.string().optional(),
    colors: z.array(z.string()),
    medicalNotes: z.string().optional(),
    instructions: z.string().optional(),
    photos: PhotoList,
  })
  .meta({ id: "PublicEmergencyProfile" });
