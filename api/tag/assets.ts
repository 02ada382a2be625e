import { createHash } from "node:crypto";

/**
 * The tag page's only two assets, kept in the code so the compiled API
 * (dist/) serves them with no files beside it. Their names carry a content
 * hash, so they are cached for good and a deploy changes the name.
 */

// Mobile first and readable in sunlight: near-black on white, large type,
// large targets; every colour pair is at least 7:1 (WCAG AAA for text).
const css = `:root{color-scheme:light;--ink:#111;--muted:#333;--accent:#0b4f9c;--alert:#a4001d}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;font:1.125rem/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:#fff}
header{padding:.5rem 1rem;border-bottom:2px solid var(--ink);font-weight:700}
main{max-width:40rem;margin:0 auto;padding:1rem}
h1{font-size:1.75rem;line-height:1.2;margin:.25rem 0 1rem}
h2{font-size:1.375rem;line-height:1.25;margin:1.5rem 0 .5rem}
p{margin:.5rem 0}
.lost{background:var(--alert);color:#fff;padding:1rem;border-radius:.5rem;margin:0 0 1rem}
.lost h2{margin:0 0 .25rem;font-size:1.875rem}
.photo{margin:0 0 1rem}
.photo img{display:block;width:100%;max-width:20rem;height:auto;border-radius:.5rem;border:2px solid var(--ink)}
dl{margin:0}
dt{font-weight:700;margin-top:.75rem}
dd{margin:0;white-space:pre-line;overflow-wrap:anywhere}
label{display:block;font-weight:700;margin-top:1rem}
.hint{display:block;font-weight:400;color:var(--muted)}
textarea,input[type=text]{display:block;width:100%;font:inherit;padding:.75rem;margin-top:.25rem;border:2px solid var(--ink);border-radius:.375rem;background:#fff;color:var(--ink)}
textarea{min-height:8rem;resize:vertical}
button{display:block;width:100%;font:inherit;font-weight:700;min-height:3rem;padding:.75rem 1.25rem;margin-top:1rem;border:2px solid var(--accent);border-radius:.375rem;cursor:pointer}
button[type=submit]{background:var(--accent);color:#fff}
button[type=button]{background:#fff;color:var(--accent)}
button:disabled{cursor:wait}
a.button{display:block;box-sizing:border-box;text-align:center;text-decoration:none;font-weight:700;min-height:3rem;padding:.75rem 1.25rem;margin-top:1rem;border:2px solid var(--accent);border-radius:.375rem;background:#fff;color:var(--accent)}
:focus-visible{outline:3px solid #111;outline-offset:3px}
.errors{border:3px solid var(--alert);padding:.5rem 1rem;border-radius:.5rem;margin:1rem 0}
.errors ul{margin:.25rem 0;padding-left:1.25rem}
.error{display:block;color:var(--alert);font-weight:700}
[aria-invalid=true]{border-color:var(--alert);border-width:3px}
.found{background:var(--accent);color:#fff;padding:1rem;border-radius:.5rem;margin:0 0 1rem}
.found h2,.lost h2{margin:0 0 .25rem;font-size:1.875rem}
.resolved{border:3px solid var(--ink);padding:1rem;border-radius:.5rem;margin:0 0 1rem;font-weight:700}
.photos{display:grid;gap:.5rem;margin:0 0 1rem}
.photos img{display:block;width:100%;height:auto;border-radius:.5rem;border:2px solid var(--ink)}
.partner{border:3px solid var(--accent);padding:.5rem 1rem;border-radius:.5rem;margin:1rem 0}
.links a{color:var(--accent);font-weight:700}
.description{white-space:pre-line;overflow-wrap:anywhere}
.lost h1,.found h1{margin:0 0 .25rem}
footer{max-width:40rem;margin:2rem auto 1rem;padding:0 1rem;color:var(--muted);font-size:1rem}
[hidden]{display:none!important}
`;

// The only script: the optional "share my location" step, for each form
// that has one (a share page has two). Without it (or without JavaScript) the
// form works the same, minus the location. The browser's position is sent as
// given; the server keeps only its ~1 km cell.
const js = `"use strict";
(function () {
  if (!("geolocation" in navigator)) return;
  var buttons = document.querySelectorAll("button[data-locating]");
  for (var i = 0; i < buttons.length; i++) wire(buttons[i]);
  function wire(button) {
  var status = document.getElementById(button.getAttribute("data-status") || "location-status");
  if (!status || !button.form) return;
  var form = button.form;
  button.hidden = false;
  button.addEventListener("click", function () {
    button.disabled = true;
    status.textContent = button.getAttribute("data-locating");
    navigator.geolocation.getCurrentPosition(
      function (position) {
        form.elements.namedItem("lat").value = String(position.coords.latitude);
        form.elements.namedItem("lon").value = String(position.coords.longitude);
        status.textContent = button.getAttribute("data-shared");
      },
      function () {
        button.disabled = false;
        status.textContent = button.getAttribute("data-failed");
      },
      { enableHighAccuracy: false, timeout: 15000, maximumAge: 300000 }
    );
  });
  }
})();
(function () {
  // "Get alerts on this phone": a link to the app's settings, where the visitor signs in and turns push on. Shown only
  // where the browser can push: once the service worker registers (docs/decisions/0075).
  var link = document.getElementById("push-subscribe");
  if (!link || !("serviceWorker" in navigator) || !("PushManager" in window)) return;
  navigator.serviceWorker.register("/sw.js", { scope: "/" }).then(function () { link.hidden = false; }, function () {});
})();
`;

export interface Asset {
  name: string;
  contentType: string;
  body: string;
}

const hashed = (base: string, ext: string, body: string, contentType: string): Asset => ({
  name: `${base}-${createHash("sha256").update(body).digest("hex").slice(0, 12)}.${ext}`,
  contentType,
  body,
});

export const TAG_CSS = hashed("tag", "css", css, "text/css; charset=utf-8");
export const TAG_JS = hashed("tag", "js", js, "text/javascript; charset=utf-8");

/** The assets by file name, as GET /t/assets/{file} serves them. */
export const TAG_ASSETS = new Map([TAG_CSS, TAG_JS].map((asset) => [asset.name, asset]));
