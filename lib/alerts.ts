/**
 * Neighbourhood alerts: the limits the API enforces and the notifier
 * applies, and the fan-out job's name and key, which the admin view reads.
 */

/** Live subscriptions per actor (contract: a 6th is 409 conflict). */
export const MAX_SUBSCRIPTIONS_PER_ACTOR = 5;
export const MIN_RADIUS_KM = 0.5;
export const MAX_RADIUS_KM = 50;

/** nearby_lost notifications per subscriber per UTC day; the rest wait for the next morning's digest. */
export const DAILY_ALERT_CAP = 20;
/** Recipients per fan-out batch job. */
export const FANOUT_BATCH_SIZE = 1_000;

export const ALERTS_FANOUT_TASK = "alerts_fanout";
export const ALERTS_DIGEST_TASK = "alerts__digest";
export const ALERTS_SWEEP_TASK = "alerts__sweep";

/**
 * One key per fan-out (report and the event that started it): the batch jobs
 * of a fan-out share it, so re-queuing one (the stall sweep, a replay)
 * replaces a waiting job instead of adding a second.
 */
export const fanoutJobKey = (reportId: string, eventId: string) => `${ALERTS_FANOUT_TASK}:${reportId}:${eventId}`;

/**
 * Deliveries of nearby_lost run after other notifications' (graphile-worker
 * runs lower numbers first): one fan-out queues thousands, and a relay
 * message must not wait behind them, nor the fan-out's own next batch.
 */
export const NEARBY_DELIVERY_PRIORITY = 10;
