import type { Queryable } from "../../../lib/db.js";
import type { Channel } from "../../../lib/notifications.js";
import type { DeliverableNotification } from "../store.js";

/**
 * A failed delivery. Its message becomes the notification's last_error, and
 * the failures console derives reasonCategory from it (lib/notifications.ts).
 */
export class DeliveryError extends Error {
  override name = "DeliveryError";
  /** The channel's own wait before the next attempt (a push service's Retry-After), in ms. */
  readonly retryAfterMs?: number;
  constructor(message: string, options: { retryAfterMs?: number } = {}) {
    super(message);
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }
}

export interface Deliverer {
  /** Resolves when the channel accepted the notification; throws DeliveryError otherwise. */
  /**
   * `client` is the delivery's own connection (jobs/delivery/delivery.ts): a deliverer that reads rows (push reads
   * the recipient's subscriptions) uses it, never a second one from the pool, which a worker running as many
   * deliveries as the pool has connections would wait on for ever.
   */
  deliver(notification: DeliverableNotification, client?: Queryable): Promise<void>;
  /**
   * When the notification cannot be tried now through no fault of its own (push: every origin of its subscriptions
   * is paused after repeated timeouts), the time it may go; else null. The delivery job then puts it back until
   * that time, without an attempt (notifier/delivery.ts).
   */
  heldUntil?(notification: DeliverableNotification, client: Queryable): Promise<Date | null>;
  close?(): void;
}

/** Channels with no entry have no deliverer: their notifications dead-letter at once. */
export type Deliverers = Partial<Record<Channel, Deliverer>>;
