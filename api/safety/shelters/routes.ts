import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../../deps.js";
import { decodeCursor, page, toPage } from "../../pagination.js";
import { problemResponses } from "../../plugins/openapi.js";
import { MAX_SHELTER_RADIUS_KM, NearbyShelter, SHELTER_RADIUS_KM, SheltersCursor, SheltersQuery } from "./schemas.js";
import * as store from "./store.js";
import { nearbyShelter } from "./views.js";

/** Shelters near a point (contract part 4, "Stray holds, and owners who reach the shelters"). */
export const shelterRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { reads }) => {
  app.get(
    "/v1/safety/shelters",
    {
      config: { auth: "public" },
      schema: {
        tags: ["safety"],
        summary: "Shelter partners near a point, nearest first",
        description:
          `No authentication. Partners (shelters, rescues, vets) within radiusKm (default ${SHELTER_RADIUS_KM}, max ` +
          `${MAX_SHELTER_RADIUS_KM}) of lat/lon, nearest first, each with its public contact (public by design), its distance ` +
          "rounded to 0.1 km, its strayHoldDays and the animals it holds now by species. A suspended partner is not listed. " +
          "Paginated with ?limit= and an opaque ?cursor=.",
        querystring: SheltersQuery,
        response: { 200: page(NearbyShelter), ...problemResponses(400) },
      },
    },
    async (request) => {
      const { lat, lon, radiusKm, limit, cursor } = request.query;
      const after = decodeCursor(cursor, SheltersCursor);
      // On the read replica while it is within its lag bound (lib/read-replica.ts).
      const rows = await store.sheltersNear(reads, { lat, lon }, radiusKm, limit + 1, after);
      return toPage(rows, limit, nearbyShelter, (last) => ({ d: last.distanceM, id: last.id }));
    },
  );
};
