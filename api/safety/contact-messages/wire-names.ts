/**
 * Contact messages (a finder's message to a report's reporter or an animal's
 * owner, passed on without showing either one's address) were called relay
 * messages by the spec and the contract, which fix these names on the wire
 * and in the schema; only these strings keep the word. In the code "relay"
 * means the outbox publisher (relay/). The other fixed names live in their
 * registries in lib/: the event type (EventType.ContactMessageReceived), the
 * notification kind (CONTACT_MESSAGE_KIND) and the moderation target type
 * (CONTACT_MESSAGE_TARGET_TYPE).
 */

/** The last segment of POST /v1/safety/{lost,found}-reports/{id}/relay-message. */
export const CONTACT_MESSAGE_PATH = "relay-message";

/** The table the messages are kept in (the spec's records). */
export const CONTACT_MESSAGE_TABLE = "safety_relay_message";

/** The OpenAPI component of the request body, which generated clients name their type after. */
export const CONTACT_MESSAGE_SCHEMA_ID = "RelayMessage";
