import { checkedIdentifier, outerValue, type SqlAlias, type SqlValue } from "../../lib/sql.js";

/** Which subscriptions cover a lost report: the SQL the fan-out, the digest and the bench share. */

/**
 * SQL: the alert_subscription row aliased `s` covers the lost report row
 * aliased `r`, both aliases of the caller's query, written at the call:
 * `subscriptionCoversReport("s", "r")`. The GiST index on `area` finds the
 * candidates, ST_DWithin keeps the exact ones; its species, if it names any,
 * include the report's; never the reporter's own.
 */
export function subscriptionCoversReport<S extends string, R extends string>(s: SqlAlias<S>, r: SqlAlias<R>): string {
  checkedIdentifier(s);
  checkedIdentifier(r);
  return `
  ${s}.area && ${r}.coarse_location::geometry and st_dwithin(${s}.location, ${r}.coarse_location, ${s}.radius_m)
  and (${s}.species is null or ${r}.species = any(${s}.species))
  and ${s}.actor_id <> ${r}.reporter_id`;
}

export interface CoveringOptions {
  /** Only subscriptions created at or before this instant (a parameter or an outer column). */
  subscribedBy?: SqlValue;
}

/**
 * The lookup of subscriptions whose radius covers report `reportId`'s coarse
 * point: per actor, the closest covering subscription; never the reporter.
 * `reportId` is a parameter, or a column of an outer query for a lateral
 * join (qualified by an alias other than this lookup's own `r` and `s`).
 */
export function closestCoveringSubscriptions(reportId: SqlValue, { subscribedBy }: CoveringOptions = {}): string {
  const also = subscribedBy ? ` and s.created_at <= ${outerValue(subscribedBy, "r", "s")}` : "";
  return `
  select distinct on (s.actor_id) s.actor_id, s.id as subscription_id, st_distance(s.location, r.coarse_location) as distance_m
  from safety_lost_report r
  join alert_subscription s on ${subscriptionCoversReport("s", "r")}${also}
  where r.id = ${outerValue(reportId, "r", "s")}
  order by s.actor_id, distance_m, s.id`;
}

/** The lookup for report $1. Exported for the EXPLAIN test and the bench. */
export const coveringSubscriptionsSql = closestCoveringSubscriptions("$1::uuid");
