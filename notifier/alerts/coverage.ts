/** Which subscriptions cover a lost report: the SQL the fan-out, the digest and the bench share. */

/**
 * A subscription `s` covers lost report `r`: the GiST index on `area` finds
 * the candidates, ST_DWithin keeps the exact ones; its species, if it names
 * any, include the report's; never the reporter's own.
 */
export const subscriptionCoversReport = `
  s.area && r.coarse_location::geometry and st_dwithin(s.location, r.coarse_location, s.radius_m)
  and (s.species is null or r.species = any(s.species))
  and s.actor_id <> r.reporter_id`;

/**
 * The lookup of subscriptions whose radius covers a report's coarse point:
 * the GiST index on `area` finds the candidates, ST_DWithin keeps the exact
 * ones. Per actor, the closest covering subscription (among those meeting
 * `also`, an SQL condition on `s`); never the reporter. `reportId` is SQL:
 * a parameter, or a column of an outer query for a lateral join.
 */
export const closestCoveringSubscriptions = (reportId: string, also = "true") => `
  select distinct on (s.actor_id) s.actor_id, s.id as subscription_id, st_distance(s.location, r.coarse_location) as distance_m
  from safety_lost_report r
  join alert_subscription s on ${subscriptionCoversReport} and ${also}
  where r.id = ${reportId}
  order by s.actor_id, distance_m, s.id`;

/** The lookup for report $1. Exported for the EXPLAIN test and the bench. */
export const coveringSubscriptionsSql = closestCoveringSubscriptions("$1::uuid");
