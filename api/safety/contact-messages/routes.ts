import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { withTransaction } from "../../../lib/db.js";
import { EventType } from "../../../lib/events.js";
import { CONTACT_MESSAGE_KIND } from "../../../lib/notifications.js";
import type { AppDeps } from "../../deps.js";
import { problemResponses } from "../../plugins/openapi.js";
import { IdParams } from "../../schemas.js";
import { Accepted, ContactMessageBody } from "./schemas.js";
import { CONTACT_MESSAGES_PER_REPORT_PER_DAY, sendContactMessage } from "./send.js";
import { CONTACT_MESSAGE_PATH } from "./wire-names.js";


const reports = {
  lost: { path: "lost-reports", who: "a lost report's owner" },
  found: { path: "found-reports", who: "the finder who filed a found report" },
} as const;

export const contactMessageRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  for (const kind of ["lost", "found"] as const) {
    const { path, who } = reports[kind];
    app.post(
      `/v1/safety/${path}/:id/${CONTACT_MESSAGE_PATH}`,
      {
        config: { auth: "public" },
        schema: {
          tags: ["safety"],
          summary: `Send a message to ${who} (contact relay)`,
          description:
            "No authentication. fromContact is caller-supplied and unverified. Limited to 5 per hour per client IP " +
            "(the connection's address, or X-Forwarded-For only from a proxy listed in API_TRUSTED_PROXY_CIDRS, shared by " +
            `every relay door) and to ${CONTACT_MESSAGES_PER_REPORT_PER_DAY} messages per report per rolling 24 hours; both answer ` +
            "429 with Retry-After. The reporter is never exposed: the message reaches them through " +
            `${EventType.ContactMessageReceived} as a ${CONTACT_MESSAGE_KIND} notification. A report that is not open gets 409 ` +
            "conflict; a moderated one 404.",
          params: IdParams,
          body: ContactMessageBody,
          response: { 202: Accepted, ...problemResponses(400, 404, 409, 429) },
        },
      },
      async (request, reply) => {
        const { message, fromContact } = request.body;
        const id = await withTransaction(pool, (client) =>
          sendContactMessage(client, { kind, reportId: request.params.id, message, fromContact, ip: request.ip }, request.log),
        );
        return reply.code(202).send({ id });
      },
    );
  }
};
