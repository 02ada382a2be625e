import type { Channel } from "../../lib/notifications.js";
import type { DeliverableNotification } from "../store.js";

/**
 * A failed delivery. Its message becomes the notification's last_error, and
 * the failures console derives reasonCategory from it (lib/notifications.ts).
 */
export class DeliveryError extends Error {
  override name = "DeliveryError";
}

export interface Deliverer {
  /** Resolves when the channel accepted the notification; throws DeliveryError otherwise. */
  deliver(notification: DeliverableNotification): Promise<void>;
  close?(): void;
}

/** Channels with no entry have no deliverer: their notifications dead-letter at once. */
export type Deliverers = Partial<Record<Channel, Deliverer>>;
