import type { Species } from "../../lib/animals.js";
import { escapeHtml, pageDocument } from "../pages/html.js";
import { TAG_CSS, TAG_JS } from "./assets.js";
import { format, type Messages } from "./i18n/index.js";

/**
 * The tag page's HTML, rendered on the server with no framework: every value
 * from the database or the request is escaped here, and the page needs no
 * script (the one script only adds the optional location step).
 */

export { escapeHtml };

/** A catalogue message with its placeholders filled, escaped for HTML. */
export const t = (template: string, values: Record<string, string | number> = {}) => escapeHtml(format(template, values));

export interface TagView {
  /** Null when the owner chose not to show the name. */
  shownName: string | null;
  species: Species;
  breed: string | null;
  colors: string[];
  medicalNotes: string | null;
  instructions: string | null;
  /** When the open lost report says the animal was last seen; null when it is not missing. */
  lostSince: Date | null;
  /** Same-origin thumb URLs of the animal's photos, first shown first. */
  photoUrls: readonly string[];
}

export type FormField = "message" | "fromContact";

export interface FormState {
  values: { message: string; fromContact: string; scan: string; lat: string; lon: string };
  /** Error messages to show, already in the page's language. */
  errors: Partial<Record<FormField, string>>;
}

export const emptyForm = (scan: string): FormState => ({ values: { message: "", fromContact: "", scan, lat: "", lon: "" }, errors: {} });

/** The photo slot: the first same-origin thumb, or nothing. Another origin's URL is never rendered (the CSP would block it anyway). */
export function photoSlot(urls: readonly string[], alt: string): string {
  const url = urls.find((u) => u.startsWith("/") && !u.startsWith("//"));
  return url ? `<figure class="photo"><img src="${escapeHtml(url)}" alt="${escapeHtml(alt)}" decoding="async"></figure>` : "";
}

/** The tag page's shell (api/pages/html.ts): never indexed, a token is in its URL. */
function layout(m: Messages, title: string, main: string, withScript: boolean): string {
  return pageDocument({
    lang: m.lang,
    title,
    service: t(m.service),
    footer: t(m.footer),
    stylesheet: `/t/assets/${TAG_CSS.name}`,
    ...(withScript ? { script: `/t/assets/${TAG_JS.name}` } : {}),
    indexable: false,
    main,
  });
}

export const dateOf = (m: Messages, date: Date) => new Intl.DateTimeFormat(m.lang, { dateStyle: "long", timeZone: "UTC" }).format(date);

function profile(m: Messages, view: TagView): string {
  const rows: [string, string | null][] = [
    [m.labels.species, m.species[view.species]],
    [m.labels.breed, view.breed],
    [m.labels.colors, view.colors.length > 0 ? view.colors.join(", ") : null],
    [m.labels.medicalNotes, view.medicalNotes],
    [m.labels.instructions, view.instructions],
  ];
  return `<dl>${rows
    .filter((row): row is [string, string] => row[1] !== null && row[1] !== "")
    .map(([label, value]) => `<dt>${t(label)}</dt><dd>${escapeHtml(value)}</dd>`)
    .join("")}</dl>`;
}

/** A labelled control with its hint and error, wired for screen readers (the share pages' forms use it too). */
export function field(id: string, label: string, hint: string, error: string | undefined, control: (attrs: string) => string): string {
  const describedBy = [`${id}-hint`, error ? `${id}-error` : null].filter(Boolean).join(" ");
  const attrs = `id="${id}" name="${id}" required aria-describedby="${describedBy}"${error ? ' aria-invalid="true"' : ""}`;
  return `<label for="${id}">${t(label)}</label>
<span class="hint" id="${id}-hint">${t(hint)}</span>
${error ? `<span class="error" id="${id}-error">${escapeHtml(error)}</span>\n` : ""}${control(attrs)}`;
}

function messageForm(m: Messages, token: string, form: FormState): string {
  const { values, errors } = form;
  const errorList = (Object.entries(errors) as [FormField, string][])
    .map(([id, error]) => `<li><a href="#${id}">${escapeHtml(error)}</a></li>`)
    .join("");
  return `<h2 id="message-heading">${t(m.form.heading)}</h2>
<p>${t(m.form.intro)}</p>
${errorList ? `<div class="errors" role="alert" id="error-summary"><p>${t(m.errors.summary)}</p><ul>${errorList}</ul></div>\n` : ""}<form method="post" action="/t/${escapeHtml(encodeURIComponent(token))}/message" aria-labelledby="message-heading" novalidate>
<input type="hidden" name="scan" value="${escapeHtml(values.scan)}">
<input type="hidden" name="lat" value="${escapeHtml(values.lat)}">
<input type="hidden" name="lon" value="${escapeHtml(values.lon)}">
${field("message", m.form.message, m.form.messageHint, errors.message, (attrs) => `<textarea ${attrs} rows="6">${escapeHtml(values.message)}</textarea>`)}
${field("fromContact", m.form.contact, m.form.contactHint, errors.fromContact, (attrs) => `<input type="text" ${attrs} value="${escapeHtml(values.fromContact)}">`)}
<button type="button" id="share-location" hidden data-locating="${t(m.form.locating)}" data-shared="${t(m.form.locationShared)}" data-failed="${t(m.form.locationFailed)}">${t(m.form.shareLocation)}</button>
<p id="location-status" role="status" aria-live="polite">${values.lat && values.lon ? t(m.form.locationShared) : ""}</p>
<button type="submit">${t(m.form.submit)}</button>
<p class="hint">${t(m.form.privacy)}</p>
</form>`;
}

/**
 * "Get alerts on this phone": a link to the app's settings, where the visitor
 * signs in and turns on push for this browser (the app keeps its tokens in
 * memory only, so this page never holds one). Hidden in the HTML, so a page
 * without JavaScript (or a browser without PushManager) never shows it; the
 * page's script (assets.ts) reveals it once the service worker (/sw.js)
 * registers (docs/decisions/0075).
 */
export function pushOffer(m: Messages): string {
  return `<section class="push-offer">
<a id="push-subscribe" class="button" href="/app/#/settings" hidden>${t(m.push.subscribe)}</a>
</section>`;
}

/** The tag page: lost banner, photo, profile and the message form (again with its errors after a bad post). */
export function tagPage(m: Messages, token: string, view: TagView, form: FormState): string {
  const title = view.shownName ? t(m.titleNamed, { name: view.shownName }) : t(m.titleUnnamed);
  const heading = view.shownName ? escapeHtml(view.shownName) : t(m.species[view.species]);
  const alt = view.shownName ? format(m.photoAlt, { name: view.shownName }) : m.photoAltUnnamed;
  const banner = view.lostSince
    ? `<section class="lost" aria-labelledby="lost-heading"><h2 id="lost-heading">${t(m.lost.heading)}</h2>
<p>${t(m.lost.body)}</p>
<p>${t(m.lost.since, { date: dateOf(m, view.lostSince) })}</p></section>\n`
    : `<p>${t(m.notLost)}</p>\n`;
  const main = `<h1>${heading}</h1>
${banner}${photoSlot(view.photoUrls, alt)}${profile(m, view)}
${messageForm(m, token, form)}
${pushOffer(m)}`;
  return layout(m, Object.keys(form.errors).length > 0 ? `${t(m.errors.summary)} ${title}` : title, main, true);
}

/** A page with a heading and a paragraph or two: thank-you, not found, limits and failures. */
export function notice(m: Messages, copy: { title: string; body: string; next?: string }): string {
  const next = copy.next ? `\n<p>${t(copy.next)}</p>` : "";
  return layout(m, t(copy.title), `<h1>${t(copy.title)}</h1>\n<p>${t(copy.body)}</p>${next}`, false);
}
