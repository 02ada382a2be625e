import sharp from "sharp";
import type { Messages } from "../tag/i18n/index.js";
import { headline } from "./render.js";
import { placeText, type ShareView } from "./view.js";

/**
 * The Open Graph card of a report with no photo (GET /lost/{id}/card.png):
 * 1200×630, the size link previews ask for. An SVG of public fields only (the
 * headline, the name, the area's coarse point, the service), every value
 * escaped for XML, rasterised by sharp (librsvg). No precise point, no contact.
 */

export const CARD_WIDTH = 1200;
export const CARD_HEIGHT = 630;

const XML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };
const xml = (value: string) => value.replace(/[&<>"']/g, (c) => XML_ESCAPES[c]!);

/** Characters XML 1.0 forbids (C0 controls but tab and newline, lone surrogates) would make the SVG unreadable. */
const clean = (value: string) => value.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udfff]/gu, "\uFFFD");

const cut = (value: string, max: number) => {
  const chars = [...value];
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : value;
};

export function cardSvg(m: Messages, view: ShareView): string {
  const accent = view.kind === "lost" ? "#a4001d" : "#0b4f9c";
  const head = xml(clean(cut(headline(m, view), 24)));
  const name = view.name ? xml(clean(cut(view.name, 28))) : "";
  const details = xml(clean(cut([view.breed, view.colors.join(", ")].filter((v) => v).join(" · "), 48)));
  const area = xml(clean(cut(m.share.area.replace("{place}", placeText(view.place)), 56)));
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${CARD_WIDTH}" height="${CARD_HEIGHT}" viewBox="0 0 ${CARD_WIDTH} ${CARD_HEIGHT}">
<rect width="${CARD_WIDTH}" height="${CARD_HEIGHT}" fill="#ffffff"/>
<rect width="${CARD_WIDTH}" height="210" fill="${accent}"/>
<text x="600" y="145" font-family="DejaVu Sans, sans-serif" font-weight="700" font-size="104" fill="#ffffff" text-anchor="middle">${head}</text>
${name ? `<text x="600" y="305" font-family="DejaVu Sans, sans-serif" font-weight="700" font-size="72" fill="#111111" text-anchor="middle">${name}</text>\n` : ""}${details ? `<text x="600" y="${name ? 385 : 330}" font-family="DejaVu Sans, sans-serif" font-size="40" fill="#333333" text-anchor="middle">${details}</text>\n` : ""}<text x="600" y="470" font-family="DejaVu Sans, sans-serif" font-size="36" fill="#111111" text-anchor="middle">${area}</text>
<rect y="560" width="${CARD_WIDTH}" height="70" fill="#111111"/>
<text x="600" y="607" font-family="DejaVu Sans, sans-serif" font-weight="700" font-size="32" fill="#ffffff" text-anchor="middle">${xml(m.service)}</text>
</svg>`;
}

export const renderCard = (svg: string): Promise<Buffer> => sharp(Buffer.from(svg)).png({ compressionLevel: 9, palette: true }).toBuffer();
