import { z } from "zod";
import { SPECIES } from "../../lib/animals.js";
import { MAX_PHOTOS_PER_PARENT } from "../../lib/photos.js";
import { CLOSED_REASONS } from "../../lib/report-lifecycle.js";
import { Problem } from "../schemas.js";

/**
 * The partner API's bodies, as ASM3's found-animal publisher
 * (src/asm3/publishers/petcolovelost.py) sends them, field for field. Unknown
 * fields are dropped rather than refused: shelter software adds fields over
 * time, and a publisher that breaks on an update would stop publishing
 * (docs/decisions/0068-*).
 */

const optionalText = (max: number) => z.string().max(max).nullish();

export const METADATA_MAX_BYTES = 2048;
/**
 * The longest description taken. ASM3 sets no limit on its animal comments;
 * past the found report's own limit the description is cut at a word
 * boundary (routes.ts), and only past this is it refused.
 */
export const DESCRIPTION_ACCEPTED_MAX = 100_000;

export const LoginBody = z
  .object({
    email: z.email().max(254),
    password: z.string().regex(/^[^\u0000-\u001f\u007f]{1,200}$/, "must be 1-200 printable characters"),
  })
  .meta({ id: "PartnerLogin" });

export const LoginResult = z
  .object({
    accessToken: z.string().describe("A bearer token for the other /partners calls: `Authorization: Bearer <accessToken>`."),
    expiresIn: z.number().int().describe("Seconds the token lives: 3600."),
  })
  .meta({ id: "PartnerToken" });

export const Shelter = z.object({ id: z.uuid(), name: z.string() }).meta({ id: "PartnerShelter" });

/** What ASM3 sends when it registers ({address, contact, name, website}); nothing of it is read or stored (the admin entered the partner). */
export const ShelterBody = z
  .record(z.string(), z.unknown())
  .describe("ASM3 sends {address, contact: {email, phone}, name, website}; the partner's details are the admin's, so none is used.")
  .meta({ id: "PartnerShelterRegistration" });

const Address = z
  .object({
    line1: optionalText(500),
    line2: optionalText(500),
    city: optionalText(200),
    state: optionalText(200),
    postalCode: optionalText(40),
    country: optionalText(100),
  })
  .partial();

/** One chip id, or two separated by white space (ASM3 joins IdentichipNumber and Identichip2Number with a space). */
const Microchip = z
  .string()
  .max(100)
  .regex(/^[A-Za-z0-9. -]*$/, "must be one microchip id, or two separated by a space")
  .transform((value) => value.trim().split(/\s+/).filter(Boolean))
  .refine((chips) => chips.length <= 2, "must be one microchip id, or two separated by a space")
  .refine((chips) => chips.every((chip) => /^[A-Za-z0-9.-]{1,40}$/.test(chip)), "a microchip id is 1-40 letters, digits, dots or dashes");

const Metadata = z
  .record(z.string(), z.unknown())
  .refine((value) => Buffer.byteLength(JSON.stringify(value), "utf8") <= METADATA_MAX_BYTES, `must be at most ${METADATA_MAX_BYTES} bytes as JSON`)
  .describe("Any JSON object of at most 2 KB, kept and returned as sent (ASM3 sends {system_animal_id}).");

/** A date as text: digits and the separators of the accepted forms; parsed per the partner's dateFormat (dates.ts). */
const DateText = z.string().max(40).regex(/^[0-9TZtz:.+\/ -]*$/, "must be a date such as 11/20/2025 or 2025-11-20");

const speciesMessage = `must be one of: ${SPECIES.join(", ")}`;

export const AnimalBody = z
  .object({
    externalId: z
      .union([z.string().trim().min(1).max(200), z.number().int().transform(String)])
      .describe("The shelter's own code for the animal; the same code again updates the animal."),
    displayId: z.union([z.string().max(200), z.number().transform(String)]).nullish(),
    name: optionalText(200),
    species: z.enum(SPECIES, { error: () => speciesMessage }).describe(`Lowercase, as ASM3 sends it: ${SPECIES.join(", ")}.`),
    breed: optionalText(200),
    sex: z.enum(["male", "female", "unknown"], { error: () => "must be male, female or unknown" }).nullish(),
    size: optionalText(40),
    weight: z.number().min(0).max(320_000).nullish().describe("Ounces."),
    altered: z.boolean().nullish(),
    declawed: z.boolean().nullish(),
    birthDate: DateText.nullish().describe("In the partner's dateFormat or ISO; empty when unknown."),
    intakeDate: DateText.min(1).describe("In the partner's dateFormat or ISO: the report's foundAt."),
    microchip: Microchip.nullish(),
    description: optionalText(DESCRIPTION_ACCEPTED_MAX).describe(
      `Up to ${DESCRIPTION_ACCEPTED_MAX.toLocaleString("en")} characters; kept up to the found report's own limit, cut at a word boundary with "…" past it.`,
    ),
    address: Address.nullish().describe("Where the animal was picked up; kept for the partner, never shown."),
    status: z.enum(["found"]).describe("Always found: the partner took the animal in."),
    shelterId: z.union([z.string().max(200), z.number().transform(String)]).nullish(),
    metadata: Metadata.optional(),
  })
  .meta({ id: "PartnerAnimal" });

export type AnimalBody = z.output<typeof AnimalBody>;

/**
 * An update (PATCH): any of the animal's fields, each replacing what was
 * there; a field left out stays as it is. ASM3 sends the create's body less
 * shelterId and species.
 */
export const AnimalUpdateBody = AnimalBody.partial().meta({ id: "PartnerAnimalUpdate" });

export type AnimalUpdateBody = z.output<typeof AnimalUpdateBody>;

export const AnimalCreated = z.object({ id: z.uuid().describe("The found report's id: /found/{id} is its page.") }).meta({ id: "PartnerAnimalCreated" });

/** An id is the one POST /partners/v2/animals answered; ASM3 sends an empty one after a create it could not make. */
export const AnimalIdParams = z.object({
  id: z.uuid({ error: "must be an animal id that POST /partners/v2/animals answered (an empty id means the animal was never created)" }),
});

export const AnimalListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(25),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

export const AnimalSummary = z
  .object({
    id: z.uuid(),
    externalId: z.string(),
    status: z.enum(["open", "reunited", "closed", "cancelled"]),
    metadata: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: "PartnerAnimalSummary" });

export const AnimalList = z.object({ pets: z.array(AnimalSummary), total: z.number().int() }).meta({ id: "PartnerAnimalList" });

export const PhotoFetchState = z
  .object({
    id: z.uuid(),
    url: z.string(),
    status: z.enum(["fetching", "processing", "ready", "failed"]),
    reason: z.string().optional().describe("Why it failed: the fetch was refused or failed, or the image could not be used."),
  })
  .meta({ id: "PartnerPhoto" });

export const AnimalDetail = AnimalSummary.extend({
  displayId: z.string().nullable(),
  closedReason: z.enum(CLOSED_REASONS).nullable(),
  foundAt: z.string(),
  photos: z.array(PhotoFetchState),
}).meta({ id: "PartnerAnimalDetail" });

/** ASM3 posts every JPEG of an animal in one call, preferred first; more than this is no animal's record. */
export const MAX_PHOTO_URLS_A_CALL = 50;

export const PhotosBody = z
  .object({
    photos: z
      .array(z.object({ url: z.url().max(2048) }))
      .min(1)
      .max(MAX_PHOTO_URLS_A_CALL)
      .describe(`Preferred first, as ASM3 sends them: the first that fit in the animal's ${MAX_PHOTOS_PER_PARENT} are taken.`),
  })
  .meta({ id: "PartnerPhotos" });

export const PhotosAccepted = z
  .object({
    id: z.uuid().describe("The batch's id: ASM3 reads `id` from this answer to count the photos as sent."),
    photos: z.array(PhotoFetchState),
    ignored: z
      .array(z.string())
      .describe(`The URLs past the animal's ${MAX_PHOTOS_PER_PARENT} photos, in the order sent: not fetched.`),
  })
  .meta({ id: "PartnerPhotosAccepted" });

/**
 * Every error under /partners: problem+json that also carries `message`,
 * the same text as `detail`, which is where ASM3's publisher reads an
 * error's text (api/plugins/errors.ts adds it).
 */
export const PartnerProblem = Problem.extend({
  message: z.string().describe("The same text as detail: what ASM3's publisher logs."),
}).meta({ id: "PartnerProblem" });
