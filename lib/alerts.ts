/**
 * Neighbourhood alerts: the limits the API enforces and the notifier
 * applies. The fan-out job's name and key are jobs/registry.ts's.
 */

/** Live subscriptions per actor (contract: a 6th is 409 conflict). */
export const MAX_SUBSCRIPTIONS_PER_ACTOR = 5;
export const MIN_RADIUS_KM = 0.5;
export const MAX_RADIUS_KM = 50;

/** nearby_lost notifications per subscriber per UTC day; the rest wait for the next morning's digest. */
export const DAILY_ALERT_CAP = 20;
/** Recipients per fan-out batch job. */
export const FANOUT_BATCH_SIZE = 1_000;

/**
 * Deliveries of nearby_lost run after other notifications' (graphile-worker
 * runs lower numbers first): one fan-out queues thousands, and a relay
 * message must not wait behind them, nor the fan-out's own next batch.
 */
export const NEARBY_DELIVERY_PRIORITY = 10;

/**
 * nearby_lost notifications per delivery job (notification__deliver_batch):
 * a batch's locks, rows, outcomes and unlocks are a statement each, so the
 * fan-out's pushes cost Postgres a fraction of a statement apiece
 * (`npx tsx bench/push-drain.ts`, costPerPush; docs/decisions/0084).
 */
export const NEARBY_DELIVERY_BATCH = 25;

/**
 * Fan-outs after the report was filed (a PATCH that moves it or changes its
 * species) that may reach anyone: later ones are stopped before they collect,
 * so a report cannot be walked across the map alerting each place it passes.
 */
export const MAX_ALERT_RESENDS = 2;
