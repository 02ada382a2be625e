import type { Deliverer } from "./types.js";

/**
 * The notification row is itself the in-app message, read at
 * GET /v1/me/notifications, so delivery has nothing left to do.
 */
export const inAppDeliverer: Deliverer = {
  async deliver() {},
};
