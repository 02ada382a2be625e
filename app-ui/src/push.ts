import type { Session } from "./session";

/**
 * Web Push on this device: the service's worker (/sw.js, scope /, shared
 * with the tag and share pages), subscribed with the API's VAPID key and
 * posted for the signed-in person (POST /v1/me/push-subscriptions).
 */
export const pushSupported = () => "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;

export function registerWorker(): Promise<ServiceWorkerRegistration> | null {
  if (!("serviceWorker" in navigator)) return null;
  return navigator.serviceWorker.register("/sw.js", { scope: "/" });
}

function keyBytes(text: string): Uint8Array<ArrayBuffer> {
  const raw = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

export async function pushIsOn(): Promise<boolean> {
  if (!pushSupported()) return false;
  const registration = await navigator.serviceWorker.getRegistration("/");
  return Boolean(await registration?.pushManager.getSubscription());
}

export async function turnOnPush(session: Session): Promise<void> {
  const registration = await (registerWorker() ?? Promise.reject(new Error("no service worker")));
  await navigator.serviceWorker.ready;
  const { publicKey } = await session.request<{ publicKey: string }>("GET", "/v1/push/public-key");
  const subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(publicKey) });
  await session.request("POST", "/v1/me/push-subscriptions", subscription.toJSON());
}
