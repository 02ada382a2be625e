import { z } from "zod";

export const PushPublicKey = z
  .object({
    publicKey: z
      .string()
      .describe("The VAPID public key (base64url, 65-byte uncompressed P-256 point): the applicationServerKey of PushManager.subscribe."),
  })
  .meta({ id: "PushPublicKey" });

/** Unpadded base64url, as browsers give the keys (padding tolerated); lengths are checked by lib/push.ts keysProblem. */
const BASE64URL = /^[A-Za-z0-9_-]+=*$/;

/** What a browser's PushSubscription.toJSON() gives; extra fields (expirationTime) are ignored. */
export const CreatePushSubscriptionBody = z
  .object({
    endpoint: z.url().max(2048).describe("The push service's URL for this browser: https only."),
    keys: z.object({
      p256dh: z.string().max(200).regex(BASE64URL, "must be base64url").describe("The browser's P-256 public key: 65 bytes uncompressed, base64url."),
      auth: z.string().max(100).regex(BASE64URL, "must be base64url").describe("The browser's auth secret: 16 bytes, base64url."),
    }),
  })
  .meta({ id: "CreatePushSubscription" });
export type CreatePushSubscriptionBody = z.output<typeof CreatePushSubscriptionBody>;

export const PushSubscriptionCreated = z.object({ id: z.uuid() }).meta({ id: "PushSubscriptionCreated" });

export const PushSubscription = z
  .object({
    id: z.uuid(),
    endpoint: z.string(),
    createdAt: z.string(),
  })
  .meta({ id: "PushSubscription" });

export const PushSubscriptionList = z.object({ items: z.array(PushSubscription) }).meta({ id: "PushSubscriptionList" });
