import type { PartnerDateFormat } from "../../lib/partners.js";
import { problems, type ValidationIssue } from "../../lib/problems.js";
import { REPORT_DESCRIPTION_MAX } from "../safety/reports/schemas.js";
import { acceptedForms, parsePartnerDate } from "./dates.js";
import type { AnimalUpdateBody } from "./schemas.js";
import type { PartnerAnimal } from "./store.js";

/**
 * The partner's fields as a found report stores them. A POST maps its body
 * onto an empty animal, so a re-publish of an externalId the partner has
 * open replaces what was there; a PATCH maps the fields it carries onto the
 * stored animal, and a field it leaves out stays. A bad date is a 400 naming
 * the field.
 */

const ELLIPSIS = "…";

/**
 * A description past `max` characters, cut at the last word boundary that
 * leaves room for "…" (ASM3 sets no limit on its comments). A word longer
 * than a fifth of the room is cut where the room ends instead. Never splits
 * a surrogate pair.
 */
export function cutAtWord(text: string, max: number = REPORT_DESCRIPTION_MAX): string {
  if (text.length <= max) return text;
  let end = max - ELLIPSIS.length;
  // A low surrogate at the cut would be left without its high one.
  if (/[\uDC00-\uDFFF]/.test(text[end] ?? "")) end -= 1;
  const room = text.slice(0, end);
  const space = room.search(/\s\S*$/);
  const kept = space >= end * 0.8 ? room.slice(0, space) : room;
  return `${kept.trimEnd()}${ELLIPSIS}`;
}

const EMPTY: PartnerAnimal = {
  externalId: "",
  species: "other",
  breed: null,
  sex: null,
  microchipId: null,
  description: null,
  foundAt: new Date(0),
  metadata: null,
  animal: {
    name: null,
    displayId: null,
    size: null,
    weightOunces: null,
    altered: null,
    declawed: null,
    birthDate: null,
    microchips: [],
    address: null,
    shelterId: null,
  },
};

const text = (value: string | null | undefined) => (value?.trim() ? value.trim() : null);

/** The animal `base` with each field `body` carries; `base` is left as it was. */
export function withFields(body: AnimalUpdateBody, dateFormat: PartnerDateFormat, base: PartnerAnimal = EMPTY): PartnerAnimal {
  const has = (field: keyof AnimalUpdateBody) => Object.hasOwn(body, field) && body[field] !== undefined;
  const bad: ValidationIssue[] = [];
  const date = (field: "intakeDate" | "birthDate", value: string) => {
    const parsed = parsePartnerDate(value, dateFormat);
    if (!parsed) bad.push({ path: `body.${field}`, message: `is not a date in the form ${acceptedForms(dateFormat)}` });
    return parsed;
  };
  const next: PartnerAnimal = { ...base, animal: { ...base.animal } };
  const extra = next.animal;
  if (has("externalId")) next.externalId = body.externalId!;
  if (has("species")) next.species = body.species!;
  if (has("breed")) next.breed = text(body.breed);
  if (has("sex")) next.sex = body.sex && body.sex !== "unknown" ? body.sex : null;
  if (has("microchip")) {
    const chips = body.microchip ?? [];
    next.microchipId = chips[0] ?? null;
    extra.microchips = chips;
  }
  if (has("description")) {
    const description = text(body.description);
    next.description = description === null ? null : cutAtWord(description);
  }
  if (has("intakeDate")) {
    const foundAt = date("intakeDate", body.intakeDate!);
    if (foundAt && foundAt.getTime() > Date.now() + 24 * 3600 * 1000) bad.push({ path: "body.intakeDate", message: "is in the future" });
    if (foundAt) next.foundAt = foundAt;
  }
  if (has("birthDate")) {
    const birth = body.birthDate?.trim() ? date("birthDate", body.birthDate) : null;
    extra.birthDate = birth ? birth.toISOString().slice(0, 10) : null;
  }
  if (has("metadata")) next.metadata = body.metadata === null ? null : JSON.stringify(body.metadata);
  if (has("name")) extra.name = text(body.name);
  if (has("displayId")) extra.displayId = text(body.displayId);
  if (has("size")) extra.size = text(body.size);
  if (has("weight")) extra.weightOunces = body.weight ?? null;
  if (has("altered")) extra.altered = body.altered ?? null;
  if (has("declawed")) extra.declawed = body.declawed ?? null;
  if (has("address")) extra.address = body.address ?? null;
  if (has("shelterId")) extra.shelterId = text(body.shelterId);
  if (bad.length > 0) throw problems.validation(bad.map((b) => `${b.path}: ${b.message}`).join("; "), bad);
  return next;
}
