import { randomUUID } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { partnerAnimalCreationBucket, PARTNER_ANIMALS_PER_HOUR, takeBucketToken } from "../../lib/buckets.js";
import { isUniqueViolation, withTransaction, type Queryable } from "../../lib/db.js";
import { PARTNER_PHOTO_FETCH_TASK } from "../../jobs/partner-photos/task.js";
import { decoyPasswordHash, LEFT_CUSTODY, partnerActorId, verifyPassword } from "../../lib/partners.js";
import { MAX_PHOTOS_PER_PARENT } from "../../lib/photos.js";
import { problems } from "../../lib/problems.js";
import { enqueueMany } from "../../jobs/queue.js";
import { resolveReport } from "../../lib/report-lifecycle.js";
import { hashToken, newToken } from "../../lib/secret-token.js";
import type { AppDeps } from "../deps.js";
import { problemResponsesAs } from "../plugins/openapi.js";
import { createPartnerLimits, PARTNER_LOGIN_URL, registerPartnerAccess, requirePartner, takeLoginTry, TOKEN_TTL_SECONDS } from "./access.js";
import { withFields } from "./animal-fields.js";
import {
  AnimalBody,
  AnimalCreated,
  AnimalDetail,
  AnimalIdParams,
  AnimalList,
  AnimalListQuery,
  AnimalUpdateBody,
  DESCRIPTION_ACCEPTED_MAX,
  LoginBody,
  LoginResult,
  PartnerProblem,
  PhotosAccepted,
  PhotosBody,
  Shelter,
  ShelterBody,
} from "./schemas.js";
import * as store from "./store.js";

const TAG = "partners";
const security = [{ partnerKey: [], partnerToken: [] }];
/** Every error under /partners is problem+json with `message` (api/plugins/errors.ts). */
const problemResponses = <S extends number>(...statuses: S[]) => problemResponsesAs(PartnerProblem, ...statuses);
/**
 * An animal's body may hold a description of DESCRIPTION_ACCEPTED_MAX
 * characters, which Python's json.dumps writes as \uXXXX escapes when they
 * are not ASCII: six bytes each, with room for the other fields.
 */
const ANIMAL_BODY_LIMIT = DESCRIPTION_ACCEPTED_MAX * 6 + 64 * 1024;

/** One of the partner's animals, locked for the call's write; another partner's or an unknown one is 404. */
async function lockOwnAnimal(client: Queryable, partnerId: string, id: string): Promise<store.AnimalRow> {
  const row = await store.getAnimal(client, partnerId, id, true);
  if (!row) throw problems.notFound("animal");
  return row;
}

const parseMetadata = (text: string | null) => (text === null ? null : (JSON.parse(text) as Record<string, unknown>));

/**
 * The partner API (contract parts 3 and 4, "Shelter partners"): exactly the
 * calls ASM3's found-animal publisher makes against its configured base URL
 * (its run(): create or PATCH, purge and post the photos, DELETE; decision
 * 94), so a shelter points that URL at https://<host>/partners. Every write
 * commits with its outbox event; bad input is a problem+json 400, with
 * `message` as every problem here, that writes nothing.
 */
export const partnerRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  const limits = createPartnerLimits();
  registerPartnerAccess(app, pool, config.PARTNER_API_KEYS, limits);
  // ASM3's DELETEs (requests) carry no body and no Content-Type. Some HTTP clients label an empty body
  // application/x-www-form-urlencoded: an empty body of that type is no body; any other is refused as on every JSON route.
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
      bodyLimit: ANIMAL_BODY_LIMIT,
      schema: {
        tags: [TAG],
        summary: "Publish an animal taken in: a found report in the partner's custody",
        description:
          "201 {id} with a new found report, found at the partner's location at intakeDate, open and in the partner's custody; " +
          "it emits events.animal.found_reported.v1 like any found report, so matching and nearby alerts run. The same externalId " +
          "again, while that report is open, replaces its fields and answers 200 with the same id. Dates in the partner's dateFormat or ISO; " +
          "an unparseable date, an unknown species or metadata over 2 KB is 400 and writes nothing. A partner creates at most " +
          `${PARTNER_ANIMALS_PER_HOUR} animals an hour (429 with Retry-After).`,
        security,
        body: AnimalBody,
        response: { 200: AnimalCreated, 201: AnimalCreated, ...problemResponses(400, 401, 403, 413, 429) },
      },
    },
    async (request, reply) => {
      const partner = requirePartner(request);
      const animal = withFields(request.body, partner.dateFormat);
      const where = { id: partner.id, location: { lat: partner.lat, lon: partner.lon } };
      const publish = () =>
        withTransaction(pool, async (client) => {
          const current = await store.lockOpenAnimal(client, partner.id, animal.externalId);
          if (current) {
            await store.updateAnimal(client, current, where, animal, request.log);
            return { id: current.id, created: false };
          }
          const wait = await takeBucketToken(client, partnerAnimalCreationBucket(partner.id));
          if (wait > 0) throw problems.rateLimited(wait, `a partner creates at most ${PARTNER_ANIMALS_PER_HOUR} animals an hour`);
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

  app.patch(
    "/partners/v2/animals/:id",
    {
      bodyLimit: ANIMAL_BODY_LIMIT,
      schema: {
        tags: [TAG],
        summary: "Update an animal the partner published",
        description:
          "200 {id}. Each field sent replaces the animal's; a field left out stays (ASM3 sends the create's body less shelterId " +
          "and species). A change to what matching reads (species, breed, sex, size, chip, dates, description) emits " +
          "events.safety.report_updated.v1, so matching runs again. An externalId another open animal of the partner has is 409; " +
          "an animal no longer open (it left custody, or expired) is 409 and is published again with POST. Another partner's " +
          "animal, or an unknown one, is 404.",
        security,
        params: AnimalIdParams,
        body: AnimalUpdateBody,
        response: { 200: AnimalCreated, ...problemResponses(400, 401, 403, 404, 409, 413, 429) },
      },
    },
    async (request) => {
      const partner = requirePartner(request);
      const where = { id: partner.id, location: { lat: partner.lat, lon: partner.lon } };
      try {
        return await withTransaction(pool, async (client) => {
          const current = await store.lockAnimal(client, partner.id, request.params.id);
          if (!current) throw problems.notFound("animal");
          if (current.status !== "open") throw problems.conflict("the animal is no longer in the partner's custody; publish it again with POST");
          await store.updateAnimal(client, current, where, withFields(request.body, partner.dateFormat, current), request.log);
          return { id: current.id };
        });
      } catch (err) {
        if (isUniqueViolation(err, "safety_found_report_partner_open_key")) throw problems.conflict("another of the partner's open animals has this externalId");
        throw err;
      }
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
        const row = await lockOwnAnimal(client, partner.id, request.params.id);
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
          "202 {id, photos}: `id` names the batch. Each URL is fetched by a job, guarded against server-side request forgery " +
          "(https only; no loopback, private, link-local, multicast or metadata address, checked after DNS resolution and on each " +
          "of at most 3 redirects; at most 10 MiB and 10 s), then processed like an upload (metadata stripped). GET " +
          "/partners/v2/animals/{id} shows each photo's state. An animal has at most " +
          `${MAX_PHOTOS_PER_PARENT} photos at a time: the first URLs that fit are taken and the rest listed in \`ignored\` ` +
          "(ASM3 sends all of an animal's photos, preferred first); with no room left it is 409. " +
          "DELETE /partners/v2/animals/{id}/photos empties the set. " +
          "A closed animal is 409; another partner's or an unknown one 404.",
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
      const batchId = randomUUID();
      const ids = await withTransaction(pool, async (client) => {
        const row = await lockOwnAnimal(client, partner.id, request.params.id);
        if (row.status !== "open") throw problems.conflict("the animal is no longer in the partner's custody");
        const room = MAX_PHOTOS_PER_PARENT - (await store.countPhotos(client, row.id));
        if (room <= 0) {
          throw problems.conflict(`an animal has at most ${MAX_PHOTOS_PER_PARENT} photos; DELETE /partners/v2/animals/{id}/photos empties the set`);
        }
        const made = await store.insertPhotoFetches(client, partner.id, row.id, batchId, urls.slice(0, room));
        await enqueueMany(client, made.map((fetchId) => ({ task: PARTNER_PHOTO_FETCH_TASK, payload: { fetchId } })));
        return made;
      });
      return reply.code(202).send({
        id: batchId,
        photos: ids.map((id, i) => ({ id, url: urls[i]!, status: "fetching" as const })),
        ignored: urls.slice(ids.length),
      });
    },
  );

  app.delete(
    "/partners/v2/animals/:id/photos",
    {
      schema: {
        tags: [TAG],
        summary: "Remove an animal's photos",
        description:
          "204. Every photo of the animal is deleted (its stored original and variants too, by a job) and every fetch still " +
          "waiting is dropped, so the next POST of its photos starts a new set: what ASM3 sends before it posts an animal's " +
          "current photos. An animal with no photos is 204 again. Another partner's animal, or an unknown one, is 404.",
        security,
        params: AnimalIdParams,
        response: { 204: z.null(), ...problemResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const partner = requirePartner(request);
      await withTransaction(pool, async (client) => {
        const row = await lockOwnAnimal(client, partner.id, request.params.id);
        await store.deletePartnerPhotos(client, partner.id, row.id, request.log);
      });
      return reply.code(204).send(null);
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
