import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { withTransaction } from "../../lib/db.js";
import { problems } from "../../lib/problems.js";
import type { AppDeps } from "../deps.js";
import { requireActor } from "../plugins/auth.js";
import { problemResponses } from "../plugins/openapi.js";
import { readyPhotos } from "../photos/store.js";
import { photoViews } from "../photos/views.js";
import { IdParams } from "../schemas.js";
import { prefersHtml } from "../negotiate.js";
import {
  Animal,
  AnimalCreated,
  EmergencyProfileBody,
  EmergencyToken,
  PublicEmergencyProfile,
  RegisterAnimalBody,
  TokenParams,
} from "./schemas.js";
import * as store from "./store.js";
import { hashToken, newToken, TOKEN_PATTERN } from "../../lib/secret-token.js";

const opt = <T>(value: T | null): T | undefined => value ?? undefined;
const iso = (value: string | Date) => new Date(value).toISOString();

export const emergencyRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  app.post(
    "/v1/animals",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["animals"],
        summary: "Register an animal",
        description: "The caller becomes the animal's owner, who alone can manage its emergency profile.",
        body: RegisterAnimalBody,
        response: { 201: AnimalCreated, ...problemResponses(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const id = await store.insertAnimal(pool, actor.id, request.body);
      return reply.code(201).header("location", `/v1/animals/${id}`).send({ id });
    },
  );

  app.get(
    "/v1/animals/:id",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["animals"],
        summary: "An animal and its emergency profile state (owner only)",
        description: "The token itself is never shown again after the PUT that issued it; only issuedAt and revokedAt.",
        params: IdParams,
        response: { 200: Animal, ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const animal = await store.getAnimal(pool, request.params.id);
      if (!animal) throw problems.notFound("animal");
      if (animal.ownerId !== actor.id) throw problems.forbidden("only the owner can see this animal");
      const { profile } = animal;
      return {
        id: animal.id,
        name: animal.name,
        species: animal.species,
        breed: opt(animal.breed),
        colors: animal.colors,
        createdAt: animal.createdAt.toISOString(),
        emergencyProfile: profile && {
          showName: profile.showName,
          medicalNotes: opt(profile.medicalNotes),
          instructions: opt(profile.instructions),
          issuedAt: iso(profile.issuedAt),
          revokedAt: profile.revokedAt === null ? null : iso(profile.revokedAt),
        },
        photos: photoViews(await readyPhotos(pool, { animalId: animal.id }, { includeModerated: true }), config.API_PUBLIC_BASE_URL),
      };
    },
  );

  app.put(
    "/v1/animals/:id/emergency-profile",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["animals"],
        summary: "Set the emergency profile and issue a fresh public token (owner only)",
        description:
          "Every PUT issues a new random 256-bit token and replaces the stored SHA-256 hash, so the previous token " +
          "(and any printed QR code) stops working at once. The token is returned only here. A profile an admin " +
          "revoked stays revoked until an admin lifts the revocation " +
          "(POST /v1/admin/animals/{animalId}/emergency-profile/lift-revocation): until then this PUT is 409 " +
          "`conflict` and changes nothing; after it, the PUT issues a fresh token and the profile is live again.",
        params: IdParams,
        body: EmergencyProfileBody,
        response: { 200: EmergencyToken, ...problemResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const token = newToken();
      await withTransaction(pool, async (client) => {
        const animal = await store.getAnimal(client, request.params.id);
        if (!animal) throw problems.notFound("animal");
        if (animal.ownerId !== actor.id) throw problems.forbidden("only the owner can set the emergency profile");
        if (!(await store.upsertEmergencyProfile(client, animal.id, hashToken(token), request.body))) {
          throw problems.conflict(
            "an administrator revoked this emergency profile; it stays revoked until an administrator lifts the revocation",
          );
        }
      });
      return reply
        .header("cache-control", "no-store")
        .send({ token, url: `${config.API_PUBLIC_BASE_URL.replace(/\/$/, "")}/emergency/${token}` });
    },
  );

  app.get(
    "/emergency/:token",
    {
      config: { auth: "public" },
      schema: {
        tags: ["animals"],
        summary: "Public emergency profile (QR link)",
        description:
          "No authentication. Unknown, replaced, revoked or malformed tokens all get the same 404. The animal's name " +
          "is shown only when the owner chose showName. Responses are not cached or indexed. A browser (Accept " +
          "preferring text/html) is sent with 303 to the tag page, /t/{token}, so a printed QR code opens a page.",
        params: TokenParams,
        response: { 200: PublicEmergencyProfile, ...problemResponses(404) },
      },
    },
    async (request, reply) => {
      const { token } = request.params;
      if (prefersHtml(request.headers.accept)) return reply.redirect(`/t/${encodeURIComponent(token)}`, 303);
      const profile = TOKEN_PATTERN.test(token) ? await store.findProfileByTokenHash(pool, hashToken(token)) : null;
      reply.header("cache-control", "no-store").header("x-robots-tag", "noindex").header("referrer-policy", "no-referrer");
      if (!profile) throw problems.notFound("emergency profile");
      return {
        name: opt(profile.name),
        species: profile.species,
        breed: opt(profile.breed),
        colors: profile.colors,
        medicalNotes: opt(profile.medicalNotes),
        instructions: opt(profile.instructions),
        photos: photoViews(await readyPhotos(pool, { animalId: profile.animalId }), config.API_PUBLIC_BASE_URL),
      };
    },
  );
};
