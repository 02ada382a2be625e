import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { withTransaction } from "../../../lib/db.js";
import { EventType } from "../../../lib/events.js";
import { CONTACT_MESSAGE_KIND } from "../../../lib/notifications.js";
import type { AppDeps } from "../../deps.js";
import { problemResponses } from "../../plugins/openapi.js";
import { IdParams } from "../../schemas.js";
import { Accepted, ContactMessageBody } from "./schemas.js";
import { CONTACT_MESSAGES_NOTIFIED_PER_DAY, CONTACT_MESSAGES_PER_SENDER_PER_DAY, sendContactMessage } from "./send.js";
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
            "No authentication. fromContact is caller-supplied and unverified. The reporter is never exposed: a message reaches " +
            `them through ${EventType.ContactMessageReceived} as a ${CONTACT_MESSAGE_KIND} notification. A report that is not ` +
            "open gets 409 conflict; a moderated one 404.\n\n" +
            "Each sender has limits of their own, and over one gets 429 with Retry-After: 5 messages per hour per client " +
            "address (the connection's address, or X-Forwarded-For only from a proxy listed in API_TRUSTED_PROXY_CIDRS; an IPv4 " +
            "client by its full address, an IPv6 client by its /64; shared by every door to a contact message), and " +
            `${CONTACT_MESSAGES_PER_SENDER_PER_DAY} messages per rolling 24 hours from one client address to one report. No ` +
            "sender's messages count against another's.\n\n" +
            `The reporter is told of a report's first ${CONTACT_MESSAGES_NOTIFIED_PER_DAY} messages per rolling 24 hours one by ` +
            "one, whoever sent them. Past that volume a message is still accepted (202) and stored, but held: no notification of " +
            `its own. Every hour the notifier sends each report's held messages, oldest first, as one ${CONTACT_MESSAGE_KIND} ` +
            "notification that lists them (data.heldCount); a longer backlog goes on in the next hour's.\n\n" +
            "The tag page's form (POST /t/{token}/message, an HTML page outside this document) goes through the same rules, and " +
            "takes a post only from this site's own pages: Sec-Fetch-Site, when sent, must be same-origin or none, and Origin, " +
            "when sent, must be API_PUBLIC_BASE_URL's origin. Another site's form gets a 403 page.",
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
