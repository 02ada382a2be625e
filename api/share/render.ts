import { escapeHtml, pageDocument } from "../pages/html.js";
import { TAG_CSS, TAG_JS } from "../tag/assets.js";
import { format, type Messages } from "../tag/i18n/index.js";
import { dateOf, field, notice as tagNotice, pushOffer, t, type FormState } from "../tag/render.js";
import { osmUrl, placeText, type ShareView } from "./view.js";

/**
 * The share page's HTML (GET /lost/{id}, /found/{id}): the tag page's shell,
 * stylesheet, catalogue and form fields (api/tag/), with the report's
 * details, the Open Graph card and two forms that work without JavaScript.
 */

export interface SightingFormState {
  values: { note: string; lat: string; lon: string };
  errors: Partial<Record<"note", string>>;
}

export interface ShareForms {
  sighting: SightingFormState;
  message: FormState;
}

export const emptyForms = (): ShareForms => ({
  sighting: { values: { note: "", lat: "", lon: "" }, errors: {} },
  message: { values: { message: "", fromContact: "", scan: "", lat: "", lon: "" }, errors: {} },
});

/** Absolute URLs under PUBLIC_BASE_URL: what another site's preview and a search engine are given. */
export interface ShareUrls {
  page: string;
  image: string;
}

export const headline = (m: Messages, view: ShareView) =>
  format(view.kind === "lost" ? m.share.lost : m.share.found, { species: m.species[view.species] }).toLocaleUpperCase(m.lang);

export function titleOf(m: Messages, view: ShareView): string {
  const species = m.species[view.species];
  if (view.kind === "found") return format(m.share.titleFound, { species });
  return view.name ? format(m.share.titleLostNamed, { species, name: view.name }) : format(m.share.titleLost, { species });
}

export function summaryOf(m: Messages, view: ShareView): string {
  const values = { species: m.species[view.species], place: placeText(view.place), date: dateOf(m, view.happenedAt) };
  return format(view.kind === "lost" ? m.share.summaryLost : m.share.summaryFound, values);
}

/** The labelled details, in the order the flyer prints them too. */
export function detailRows(m: Messages, view: ShareView): [string, string][] {
  const rows: [string, string | null][] = [
    [m.share.labels.name, view.name],
    [m.share.labels.breed, view.breed],
    [m.share.labels.colors, view.colors.length > 0 ? view.colors.join(", ") : null],
    [m.share.labels.sex, view.sex ? m.share.sex[view.sex] : null],
    [m.share.labels.marks, view.marks],
    [view.kind === "lost" ? m.share.labels.lastSeen : m.share.labels.foundOn, dateOf(m, view.happenedAt)],
  ];
  return rows.filter((row): row is [string, string] => row[1] !== null && row[1] !== "");
}

function openGraph(m: Messages, view: ShareView, urls: ShareUrls): string {
  const title = escapeHtml(`${headline(m, view)}${view.name ? `: ${view.name}` : ""}`);
  const description = escapeHtml(summaryOf(m, view));
  const page = escapeHtml(urls.page);
  const image = escapeHtml(urls.image);
  return `<link rel="canonical" href="${page}">
<meta name="description" content="${description}">
<meta property="og:type" content="website">
<meta property="og:site_name" content="${t(m.service)}">
<meta property="og:locale" content="${escapeHtml(m.lang)}">
<meta property="og:title" content="${title}">
<meta property="og:description" content="${description}">
<meta property="og:url" content="${page}">
<meta property="og:image" content="${image}">
<meta property="og:image:alt" content="${t(m.share.photoAlt)}">
<meta name="twitter:card" content="summary_large_image">
<meta name="twitter:title" content="${title}">
<meta name="twitter:description" content="${description}">
<meta name="twitter:image" content="${image}">
`;
}

function photos(m: Messages, view: ShareView): string {
  const same = view.photoPaths.filter((path) => path.startsWith("/") && !path.startsWith("//"));
  if (same.length === 0) return "";
  const images = same
    .map((path, i) => `<img src="${escapeHtml(path)}" alt="${t(m.share.photoAlt)}"${i === 0 ? "" : ' loading="lazy"'} decoding="async">`)
    .join("\n");
  return `<figure class="photos">\n${images}\n</figure>\n`;
}

function partner(m: Messages, view: ShareView): string {
  const at = view.atPartner;
  if (!at) return "";
  const rows: [string, string | undefined, string | null][] = [
    [m.share.partnerLabels.phone, at.phone, at.phone ? `tel:${at.phone.replace(/[^+\d]/g, "")}` : null],
    [m.share.partnerLabels.email, at.email, at.email ? `mailto:${at.email}` : null],
    [m.share.partnerLabels.address, at.address, null],
    [m.share.partnerLabels.website, at.website, at.website && /^https?:\/\//i.test(at.website) ? at.website : null],
  ];
  const items = rows
    .filter((row): row is [string, string, string | null] => row[1] !== undefined && row[1] !== "")
    .map(([label, value, href]) => `<dt>${t(label)}</dt><dd>${href ? `<a href="${escapeHtml(href)}">${escapeHtml(value)}</a>` : escapeHtml(value)}</dd>`)
    .join("");
  const note = view.heldUntil ? `<p>${t(m.share.holdNote, { name: at.name, date: dateOf(m, view.heldUntil) })}</p>` : "";
  return `<section class="partner" aria-labelledby="partner-heading"><h2 id="partner-heading">${escapeHtml(atPartnerText(m, view)!)}</h2>${note}${items ? `<dl>${items}</dl>` : ""}</section>\n`;
}

/** "At <partner> until <date>" (the end of its stray hold), or "At <partner>"; null when no partner holds the animal. */
export function atPartnerText(m: Messages, view: ShareView): string | null {
  const at = view.atPartner;
  if (!at) return null;
  return view.heldUntil ? format(m.share.atPartnerUntil, { name: at.name, date: dateOf(m, view.heldUntil) }) : format(m.share.atPartner, { name: at.name });
}

function errorSummary(m: Messages, errors: Record<string, string>): string {
  const list = Object.entries(errors)
    .map(([id, error]) => `<li><a href="#${id}">${escapeHtml(error)}</a></li>`)
    .join("");
  return list ? `<div class="errors" role="alert"><p>${t(m.errors.summary)}</p><ul>${list}</ul></div>\n` : "";
}

/** The optional location step's button (the tag page's script wires every such button) and its status line. */
function locationStep(m: Messages, id: string, values: { lat: string; lon: string }): string {
  return `<input type="hidden" name="lat" value="${escapeHtml(values.lat)}">
<input type="hidden" name="lon" value="${escapeHtml(values.lon)}">
<button type="button" id="${id}-locate" hidden data-status="${id}-location-status" data-locating="${t(m.form.locating)}" data-shared="${t(m.form.locationShared)}" data-failed="${t(m.form.locationFailed)}">${t(m.form.shareLocation)}</button>
<p id="${id}-location-status" role="status" aria-live="polite">${values.lat && values.lon ? t(m.form.locationShared) : ""}</p>`;
}

function sightingForm(m: Messages, view: ShareView, form: SightingFormState): string {
  const { values, errors } = form;
  return `<section aria-labelledby="sighting-heading">
<h2 id="sighting-heading">${t(m.share.sighting.heading)}</h2>
<p>${t(m.share.sighting.intro)}</p>
${errorSummary(m, errors)}<form method="post" action="/${view.kind}/${escapeHtml(view.id)}/sighting" aria-labelledby="sighting-heading" novalidate>
${field("note", m.share.sighting.note, m.share.sighting.noteHint, errors.note, (attrs) => `<textarea ${attrs.replace(" required", "")} rows="4">${escapeHtml(values.note)}</textarea>`)}
${locationStep(m, "sighting", values)}
<button type="submit">${t(m.share.sighting.submit)}</button>
<p class="hint">${t(m.share.sighting.privacy)}</p>
</form>
</section>`;
}

function messageForm(m: Messages, view: ShareView, form: FormState): string {
  const { values, errors } = form;
  const heading = view.kind === "lost" ? m.share.messageLost : m.share.messageFound;
  const intro = view.kind === "lost" ? m.form.intro : m.share.messageIntroFound;
  return `<section aria-labelledby="message-heading">
<h2 id="message-heading">${t(heading)}</h2>
<p>${t(intro)}</p>
${errorSummary(m, errors)}<form method="post" action="/${view.kind}/${escapeHtml(view.id)}/message" aria-labelledby="message-heading" novalidate>
${field("message", m.form.message, m.form.messageHint, errors.message, (attrs) => `<textarea ${attrs} rows="6">${escapeHtml(values.message)}</textarea>`)}
${field("fromContact", m.form.contact, m.form.contactHint, errors.fromContact, (attrs) => `<input type="text" ${attrs} value="${escapeHtml(values.fromContact)}">`)}
${locationStep(m, "message", values)}
<button type="submit">${t(m.form.submit)}</button>
<p class="hint">${t(m.form.privacy)}</p>
</form>
</section>`;
}

/** The share page; with `forms` after a refused post, that form again with its errors and what was typed. */
export function sharePage(m: Messages, view: ShareView, urls: ShareUrls, forms: ShareForms): string {
  const banner =
    view.state === "open"
      ? `<section class="${view.kind}" aria-labelledby="headline"><h1 id="headline">${escapeHtml(headline(m, view))}</h1>${view.name ? `<p>${escapeHtml(view.name)}</p>` : ""}</section>\n`
      : `<h1 id="headline">${escapeHtml(headline(m, view))}</h1>\n<section class="resolved" role="status"><h2>${t(m.share[view.state].title)}</h2><p>${t(m.share[view.state].body)}</p></section>\n`;
  const details = detailRows(m, view)
    .map(([label, value]) => `<dt>${t(label)}</dt><dd>${escapeHtml(value)}</dd>`)
    .join("");
  const description = view.description ? `<h2>${t(m.share.labels.description)}</h2>\n<p class="description">${escapeHtml(view.description)}</p>\n` : "";
  const area = `<h2>${t(m.share.labels.area)}</h2>
<p>${t(m.share.area, { place: placeText(view.place) })}</p>
<p class="links"><a href="${escapeHtml(osmUrl(view.place))}" rel="nofollow noopener">${t(m.share.mapLink)}</a></p>
`;
  const forms_ =
    view.state === "open"
      ? `${view.kind === "lost" ? sightingForm(m, view, forms.sighting) + "\n" : ""}${messageForm(m, view, forms.message)}`
      : "";
  const invalid = Object.keys(forms.sighting.errors).length + Object.keys(forms.message.errors).length > 0;
  const title = `${invalid ? `${t(m.errors.summary)} ` : ""}${escapeHtml(titleOf(m, view))}`;
  const main = `${banner}${photos(m, view)}${partner(m, view)}<dl>${details}</dl>
${description}${area}${forms_}${view.state === "open" ? `\n${pushOffer(m)}` : ""}`;
  return pageDocument({
    lang: m.lang,
    title,
    service: t(m.service),
    footer: t(m.footer),
    stylesheet: `/t/assets/${TAG_CSS.name}`,
    ...(view.state === "open" ? { script: `/t/assets/${TAG_JS.name}` } : {}),
    indexable: true,
    head: openGraph(m, view, urls),
    main,
  });
}

/** A page with a heading and a paragraph: thank-you, not found, limits. The tag page's, never indexed. */
export const notice = tagNotice;
