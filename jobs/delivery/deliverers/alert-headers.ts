import { unsubscribeUrl } from "../../../lib/alert-unsubscribe.js";
import type { DeliverableNotification } from "../store.js";

export interface UnsubscribeLinks {
  /** The API's public base URL: the link points at its unsubscribe endpoint. */
  publicBaseUrl: string;
  secret: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The subscriptions a nearby_lost notification came from: one for an alert, a few for a digest. */
export function alertSubscriptionIds(data: Record<string, string>): string[] {
  const listed = data.alertSubscriptionIds?.split(",") ?? [data.alertSubscriptionId ?? ""];
  return listed.filter((id) => UUID.test(id));
}

/**
 * RFC 8058 one-click unsubscribe for nearby_lost emails: a POST to the
 * List-Unsubscribe URL (an HTTPS URI in production) with the body
 * `List-Unsubscribe=One-Click` deletes the subscriptions the email was
 * about. Other kinds get no headers: they are not list mail.
 */
export function listUnsubscribeHeaders(
  notification: Pick<DeliverableNotification, "kind" | "data">,
  links: UnsubscribeLinks,
): Record<string, { prepared: true; value: string }> {
  if (notification.kind !== "nearby_lost") return {};
  const ids = alertSubscriptionIds(notification.data);
  if (ids.length === 0) return {};
  // prepared: nodemailer must not re-encode or fold the URL.
  return {
    "List-Unsubscribe": { prepared: true, value: `<${unsubscribeUrl(links.publicBaseUrl, links.secret, ids)}>` },
    "List-Unsubscribe-Post": { prepared: true, value: "List-Unsubscribe=One-Click" },
  };
}
