/**
 * The service worker served at GET /sw.js, kept in the code so the compiled
 * API serves it with no file beside it. It shows each push (the notifier's
 * payload, jobs/delivery/deliverers/push.ts: {kind, subject, body, url, data}) as
 * a notification, and opens its url on click: a window already on that page
 * is focused instead of opening a second one. A url on another origin is
 * never opened (the payload is ours, but a worker should not trust it blindly).
 */
export const SERVICE_WORKER_JS = `"use strict";
self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (event) { event.waitUntil(self.clients.claim()); });
self.addEventListener("push", function (event) {
  var payload = {};
  try { payload = event.data ? event.data.json() : {}; } catch (e) { payload = { subject: event.data ? event.data.text() : "" }; }
  var url = "/";
  try {
    var parsed = new URL(payload.url || "/", self.location.origin);
    if (parsed.origin === self.location.origin) url = parsed.href;
  } catch (e) {}
  event.waitUntil(self.registration.showNotification(payload.subject || "Animal Safety", {
    body: payload.body || "",
    tag: payload.data && payload.data.notificationId ? payload.data.notificationId : undefined,
    data: { url: url, kind: payload.kind || null }
  }));
});
self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  var url = (event.notification.data && event.notification.data.url) || "/";
  event.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (windows) {
    for (var i = 0; i < windows.length; i++) {
      if (windows[i].url === url && "focus" in windows[i]) return windows[i].focus();
    }
    return self.clients.openWindow(url);
  }));
});
`;
