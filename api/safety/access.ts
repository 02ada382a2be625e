import type { Queryable } from "../../lib/db.js";
import { problems } from "../../lib/problems.js";
import { isAdmin, type Actor } from "../plugins/auth.js";
import { lockReport } from "./reports/store.js";

/** Who may see what among safety content: moderated content is hidden from all but its owner and admins. */

// The admin check is api/plugins/auth.ts's, which photos read too; the safety modules take it here, beside the rules below.
export { isAdmin };

/** Owners and admins see moderated content (marked); everyone else gets 404. */
export const canSeeModerated = (actor: Actor | null, ownerId: string) =>
  actor !== null && (actor.id === ownerId || isAdmin(actor));

/** The content if the caller may see it: 404 when missing, or moderated and the caller is neither owner nor admin. */
export function visibleTo<T extends { reporterId: string; moderationState: string | null }>(
  content: T | null,
  actor: Actor | null,
  what: string,
): T {
  if (!content || (content.moderationState && !canSeeModerated(actor, content.reporterId))) throw problems.notFound(what);
  return content;
}

/** A lost report the caller may act on: locked for the transaction; 404 when missing or hidden by moderation. */
export async function lockVisibleLostReport(client: Queryable, id: string, actor: Actor | null) {
  return visibleTo(await lockReport(client, "lost", id), actor, "lost report");
}
