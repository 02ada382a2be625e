import { randomUUID } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { isUniqueViolation, withTransaction } from "../../lib/db.js";
import { PARTNER_PHOTO_FETCH_TASK } from "../../jobs/partner-photos/task.js";
import { decoyPasswordHash, LEFT_CUSTODY, partnerActorId, verifyPassword } from "../../lib/partners.js";
import { MAX_PHOTOS_PER_PARENT } from "../../lib/photos.js";
import { problems } from "../../lib/problems.js";
import { enqueue } from "../../jobs/queue.js";
import { resolveReport } from "../../lib/report-lifecycle.js";
import { hashToken, newToken } from "../../lib/secret-token.js";
import type { AppDeps } from "../deps.js";
import { problemResponses } from "../plugins/openapi.js";
import { createPartnerLimits, PARTNER_LOGIN_URL, registerPartnerAccess, requirePartner, takeLoginTry, TOKEN_TTL_SECONDS } from "./access.js";
import { acceptedForms, parsePartnerDate } from "./dates.js";
import {
  AnimalBody,
  AnimalCreated,
  AnimalDetail,
  AnimalIdParams,
  AnimalList,
  AnimalListQuery,
  LoginBody,
  LoginResult,
  PhotosAccepted,
  PhotosBody,
  Shelter,
  ShelterBody,
} from "./schemas.js";
import * as store from "./store.js";

const TAG = "partners";
const security = [{ partnerKey: [], partnerToken: [] }];

/** The partner's fields as a found report stores them; a bad date is a 400 naming the field. */
function toAnimal(body: AnimalBody, dateFormat: Parameters<typeof parsePartnerDate>[1]): store.PartnerAnimal {
  const bad: { path: string; message: string }[] = [];
  const date = (field: "intakeDate" | "birthDate", value: string) => {
    const parsed = parsePartnerDate(value, dateFormat);
    if (!parsed) bad.push({ path: `body.${field}`, message: `is not a date in the form ${acceptedForms(dateFormat)}` });
    return parsed;
  };
  const foundAt = date("intakeDate", body.intakeDate);
  const birth = body.birthDate?.trim() ? date("birthDate", body.birthDate) : null;
  if (foundAt && foundAt.getTime() > Date.now() + 24 * 3600 * 1000) bad.push({ path: "body.intakeDate", message: "is in the future" });
  if (bad.length > 0) throw problems.validation(bad.map((b) => `${b.path}: ${b.message}`).join("; "), bad);
  const chips = body.microchip ?? [];
  const text = (value: string | null | undefined) => (value?.trim() ? value.trim() : null);
  return {
    externalId: body.externalId,
    species: body.species,
    breed: text(body.breed),
    sex: body.sex && body.sex !== "unknown" ? body.sex : null,
    microchipId: chips[0] ?? null,
    description: text(body.description),
    foundAt: foundAt!,
    metadata: body.metadata === undefined ? null : JSON.stringify(body.metadata),
    animal: {
      name: text(body.name),
      displayId: text(body.displayId),
      size: text(body.size),
      weightOunces: body.weight ?? null,
      altered: body.altered ?? null,
      declawed: body.declawed ?? null,
      birthDate: birth ? birth.toISOString().slice(0, 10) : null,
      microchips: chips,
      address: body.address ?? null,
      shelterId: text(body.shelterId),
    },
  };
}

const parseMetadata = (text: string | null) => (text === null ? null : (JSON.parse(text) as Record<string, unknown>));

/**
 * The partner API (contract part 3, "Shelter partners"): exactly the calls
 * ASM3's found-animal publisher makes against its configured base URL, so a
 * shelter points that URL at https://<host>/partners. Every write commits
 * with its outbox event; bad input is a problem+json 400 that writes nothing.
 */
export const partnerRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  const limits = createPartnerLimits();
  registerPartnerAccess(app, pool, config.PARTNER_API_KEYS, limits);
  // ASM3's DELETE sends an empty body through urllib, which labels it application/x-www-form-urlencoded:
  // an empty body of that type is no body; any other is refused as on every JSON route.
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: 1024 }, (_request, body, done) => {
    if (body === "") done(null, undefined);
    else done(problems.unsupportedMediaType(), undefined);
  });

  app.post(
    PARTNER_LOGIN_URL,
    {
      schema: {
        tags: [TAG],
        summary: "Log in: a bearer token for one hour",
        description:
          "Needs an integration key in x-api-key. A wrong email or password is 401 with the same body for both. " +
          "At most 10 tries a minute per client address (429). A suspended partner is 403 account-suspended.",
        security: [{ partnerKey: [] }],
        body: LoginBody,
        response: { 200: LoginResult, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request) => {
      takeLoginTry(limits, request);
      const { email, password } = request.body;
      const partner = await store.partnerByLoginEmail(pool, email);
      // An unknown email costs the same scrypt as a wrong password.
      const matches = await verifyPassword(password, partner?.passwordHash ?? (await decoyPasswordHash()));
      if (!partner || !matches) throw problems.unauthenticated("the email or password is wrong");
      if (partner.suspended) throw problems.accountSuspended();
      const token = newToken();
      await store.insertToken(pool, hashToken(token), partner.id, TOKEN_TTL_SECONDS);
      return { accessToken: token, expiresIn: TOKEN_TTL_SECONDS };
    },
  );

  app.post(
    "/partners/v2/shelters",
    {
      schema: {
        tags: [TAG],
        summary: "Register the shelter: answers the logged-in partner",
        description:
          "What ASM3 calls once to register. It creates nothing: the partner was entered by an admin, whose details stand.",
        security,
        body: ShelterBody,
        response: { 200: Shelter, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request) => {
      const partner = requirePartner(request);
      return { id: partner.id, name: partner.name };
    },
  );

  app.post(
    "/partners/v2/animals",
    {
      schema: {
        tags: [TAG],
        summary: "Publish an animal taken in: a found report in the partner's custody",
        description:
          "201 {id} with a new found report, found at the partner's location at intakeDate, open and in the partner's custody; " +
          "it emits events.animal.found_reported.v1 like any found report, so matching and nearby alerts run. The same externalId " +
          "again, while that report is open, updates it and answers 200 with the same id. Dates in the partner's dateFormat or ISO; " +
          "an unparseable date, an unknown species or metadata over 2 KB is 400 and writes nothing.",
        security,
        body: AnimalBody,
        response: { 200: AnimalCreated, 201: AnimalCreated, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request, reply) => {
      const partner = requirePartner(request);
      const animal = toAnimal(request.body, partner.dateFormat);
      const where = { id: partner.id, location: { lat: partner.lat, lon: partner.lon } };
      const publish = () =>
        withTransaction(pool, async (client) => {
          const current = await store.lockOpenAnimal(client, partner.id, animal.externalId);
          if (current) {
            await store.updateAnimal(client, current, where, animal, request.log);
            return { id: current.id, created: false };
          }
          const id = randomUUID();
          await store.insertAnimal(client, id, where, animal, config.REPORT_TTL_DAYS, request.log);
          return { id, created: true };
        });
      let result: { id: string; created: boolean };
      try {
        result = await publish();
      } catch (err) {
        // Two publishes of one new animal at once: the second finds the first's report and updates it.
        if (!isUniqueViolation(err, "safety_found_report_partner_open_key")) throw err;
        result = await publish();
      }
      return reply.code(result.created ? 201 : 200).send({ id: result.id });
    },
  );

  const listSchema = {
    tags: [TAG],
    summary: "The partner's open animals, oldest first",
    description:
      "`metadata` is returned as it was sent. ASM3 reads pets[].id and pets[].metadata.system_animal_id. " +
      "ASM3 calls it as /partners/v2/animals/?limit=25&offset=0, with a trailing slash, which is the same listing.",
    security,
    querystring: AnimalListQuery,
    response: { 200: AnimalList, ...problemResponses(400, 401, 403, 429) },
  };
  const listAnimals = async (request: FastifyRequest<{ Querystring: z.output<typeof AnimalListQuery> }>) => {
    const partner = requirePartner(request);
    const { limit, offset } = request.query;
    const { rows, total } = await store.listOpenAnimals(pool, partner.id, limit, offset);
    return {
      pets: rows.map((row) => ({ id: row.id, externalId: row.externalId, status: row.status, metadata: parseMetadata(row.metadata) })),
      total,
    };
  };
  app.get("/partners/v2/animals", { schema: listSchema }, listAnimals);
  // ASM3's own spelling, with a trailing slash: the same listing, documented as its own path.
  app.get("/partners/v2/animals/", { schema: { ...listSchema, summary: "The same listing, as ASM3 spells its path (trailing slash)" } }, listAnimals);

  app.get(
    "/partners/v2/animals/:id",
    {
      schema: {
        tags: [TAG],
        summary: "One of the partner's animals, with its photos' states",
        description:
          "Each photo given by URL is fetching, processing, ready or failed; a failed one says why (the fetch was refused, " +
          "timed out or too large, or the image could not be used). Another partner's animal, or an unknown one, is 404.",
        security,
        params: AnimalIdParams,
        response: { 200: AnimalDetail, ...problemResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request) => {
      const partner = requirePartner(request);
      const row = await store.getAnimal(pool, partner.id, request.params.id);
      if (!row) throw problems.notFound("animal");
      const photos = await store.photoFetches(pool, row.id);
      return {
        id: row.id,
        externalId: row.externalId,
        displayId: row.displayId,
        status: row.status,
        closedReason: row.closedReason,
        foundAt: row.foundAt.toISOString(),
        metadata: parseMetadata(row.metadata),
        photos: photos.map(photoState),
      };
    },
  );

  app.delete(
    "/partners/v2/animals/:id",
    {
      schema: {
        tags: [TAG],
        summary: "The animal left the partner's custody",
        description:
          "204. The found report closes with closedReason left_custody and emits events.safety.found_report_resolved.v1. " +
          "An animal already closed is 204 again and changes nothing. Another partner's animal, or an unknown one, is 404.",
        security,
        params: AnimalIdParams,
        response: { 204: z.null(), ...problemResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const partner = requirePartner(request);
      await withTransaction(pool, async (client) => {
        const row = await store.getAnimal(client, partner.id, request.params.id, true);
        if (!row) throw problems.notFound("animal");
        if (row.status !== "open") return;
        await resolveReport(client, "found", { id: row.id, reporterId: partnerActorId(partner.id) }, "closed", request.log, LEFT_CUSTODY);
      });
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/partners/v2/animals/:id/photos",
    {
      schema: {
        tags: [TAG],
        summary: "Photos of an animal, by URL",
        description:
          "202: each URL is fetched by a job, guarded against server-side request forgery (https only; no loopback, private, " +
          "link-local, multicast or metadata address, checked after DNS resolution and on each of at most 3 redirects; at most " +
          "10 MiB and 10 s), then processed like an upload (metadata stripped). GET /partners/v2/animals/{id} shows each photo's " +
          `state. At most ${MAX_PHOTOS_PER_PARENT} photos an animal (409). A closed animal is 409; another partner's or an unknown one 404.`,
        security,
        params: AnimalIdParams,
        body: PhotosBody,
        response: { 202: PhotosAccepted, ...problemResponses(400, 401, 403, 404, 409, 429) },
      },
    },
    async (request, reply) => {
      const partner = requirePartner(request);
      const urls = request.body.photos.map((photo) => photo.url);
      const bad = urls.flatMap((url, i) => {
        let parsed: URL;
        try {
          parsed = new URL(url);
        } catch {
          return [{ path: `body.photos.${i}.url`, message: "is not a URL" }];
        }
        return parsed.protocol === "https:" || parsed.protocol === "http:" ? [] : [{ path: `body.photos.${i}.url`, message: "must be an https URL" }];
      });
      if (bad.length > 0) throw problems.validation(bad.map((b) => `${b.path}: ${b.message}`).join("; "), bad);
      const ids = await withTransaction(pool, async (client) => {
        const row = await store.getAnimal(client, partner.id, request.params.id, true);
        if (!row) throw problems.notFound("animal");
        if (row.status !== "open") throw problems.conflict("the animal is no longer in the partner's custody");
        if ((await store.countPhotos(client, row.id)) + urls.length > MAX_PHOTOS_PER_PARENT) {
          throw problems.conflict(`an animal has at most ${MAX_PHOTOS_PER_PARENT} photos`);
        }
        const made: string[] = [];
        for (const url of urls) {
          const fetchId = await store.insertPhotoFetch(client, partner.id, row.id, url);
          await enqueue(client, PARTNER_PHOTO_FETCH_TASK, { fetchId });
          made.push(fetchId);
        }
        return made;
      });
      return reply.code(202).send({ photos: ids.map((id, i) => ({ id, url: urls[i]!, status: "fetching" as const })) });
    },
  );
};

function photoState(row: store.PhotoFetchRow): { id: string; url: string; status: "fetching" | "processing" | "ready" | "failed"; reason?: string } {
  const base = { id: row.id, url: row.url };
  if (row.status === "failed") return { ...base, status: "failed", reason: row.failureReason ?? "the fetch failed" };
  if (row.status === "fetching") return { ...base, status: "fetching" };
  if (row.photoStatus === "ready") return { ...base, status: "ready" };
  if (row.photoStatus === "failed") return { ...base, status: "failed", reason: row.photoFailureReason ?? "the image could not be used" };
  if (row.photoStatus === "deleted") return { ...base, status: "failed", reason: "the photo was deleted by a moderator" };
  return { ...base, status: "processing" };
}
