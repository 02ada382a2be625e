import { createRequire } from "node:module";
import PDFDocument from "pdfkit";
import QRCode from "qrcode";
import type { Messages } from "../tag/i18n/index.js";
import { atPartnerText, detailRows, headline } from "./render.js";
import { placeText, type ShareView } from "./view.js";

/**
 * The printable flyer: one page, made with pdfkit and the DejaVu Sans font
 * from the npm package dejavu-fonts-ttf, embedded (subset) so Latin, Greek
 * and Cyrillic print the same on every printer (docs/decisions/0062). A
 * character the font lacks prints as U+FFFD, never fails the flyer. Text
 * boxes always have a height: pdfkit adds a page when text runs past the
 * bottom, and a flyer is one page whatever the description holds.
 */

const require = createRequire(import.meta.url);
const FONT = require.resolve("dejavu-fonts-ttf/ttf/DejaVuSans.ttf");
const FONT_BOLD = require.resolve("dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf");

export const FLYER_SIZES = { a4: "A4", letter: "LETTER" } as const;
export type FlyerSize = keyof typeof FLYER_SIZES;
export const flyerSizeOf = (value: unknown): FlyerSize => (value === "letter" ? "letter" : "a4");

/** How many tear-off strips run along the bottom edge (the contract: 6 to 8). */
export const TEAR_OFF_STRIPS = 7;

export interface FlyerInput {
  m: Messages;
  view: ShareView;
  size: FlyerSize;
  /** The share page's absolute URL: the QR code's content, printed below it. */
  pageUrl: string;
  /** The short link printed on each tear-off strip. */
  shortUrl: string;
  /** The first photo's display variant as JPEG (pdfkit takes JPEG and PNG), or null. */
  photo: Buffer | null;
  /** The PDF's CreationDate: the report's last change, so one report state gives one PDF. */
  createdAt: Date;
}

const INK = "#111111";
const ACCENT = { lost: "#a4001d", found: "#0b4f9c" } as const;
const MARGIN = 36;

type Doc = InstanceType<typeof PDFDocument>;

/** The font's own glyph check (pdfkit's embedded font wraps a fontkit font); without it, text goes as it is. */
function glyphCheck(doc: Doc): ((codePoint: number) => boolean) | null {
  const font = (doc as unknown as { _font?: { font?: { hasGlyphForCodePoint?: (cp: number) => boolean } } })._font?.font;
  return font?.hasGlyphForCodePoint ? (cp) => font.hasGlyphForCodePoint!(cp) : null;
}

/** Characters the current font has no glyph for become U+FFFD (DejaVu has it); line breaks and marks the font has stay. */
function printable(doc: Doc, text: string): string {
  const has = glyphCheck(doc);
  if (!has) return text;
  let out = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    out += cp === 0x0a || cp === 0x20 || has(cp) ? ch : "\uFFFD";
  }
  return out;
}

/**
 * A space inside every run of 30 characters with none: pdfkit breaks a word
 * with no break opportunity character by character, quadratic in its length
 * (a 5,000-character word took 9 s to measure); with spaces it wraps at once.
 */
const breakable = (text: string) => text.replace(/[^\s]{30}(?=[^\s])/gu, "$& ");

/** The largest size from `max` down to `min` at which the text fits the box; at `min`, the text cut to fit with "…". */
function fitText(doc: Doc, text: string, width: number, height: number, max: number, min: number): { text: string; size: number } {
  for (let size = max; size >= min; size -= 1) {
    doc.fontSize(size);
    if (doc.heightOfString(text, { width }) <= height) return { text, size };
  }
  doc.fontSize(min);
  // Binary search on code points, so a cut never splits a surrogate pair.
  const chars = [...text];
  let lo = 0;
  let hi = chars.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (doc.heightOfString(`${chars.slice(0, mid).join("").trimEnd()}…`, { width }) <= height) lo = mid;
    else hi = mid - 1;
  }
  return { text: `${chars.slice(0, lo).join("").trimEnd()}…`, size: min };
}

/** A one-line text at the largest size from `max` down that fits `width`. */
function fitLine(doc: Doc, text: string, width: number, max: number, min = 8): number {
  let size = max;
  doc.fontSize(size);
  while (size > min && doc.widthOfString(text) > width) {
    size = Math.max(min, size - 0.5);
    doc.fontSize(size);
  }
  return size;
}

function qrCode(doc: Doc, url: string, x: number, y: number, side: number): void {
  const qr = QRCode.create(url, { errorCorrectionLevel: "M" });
  const count = qr.modules.size;
  const cell = side / (count + 8); // a quiet zone of 4 modules each side
  doc.rect(x, y, side, side).fill("#ffffff");
  for (let row = 0; row < count; row++) {
    for (let col = 0; col < count; col++) {
      if (qr.modules.get(row, col)) doc.rect(x + (col + 4) * cell, y + (row + 4) * cell, cell, cell);
    }
  }
  doc.fill(INK);
}

export function renderFlyer(input: FlyerInput): Promise<Buffer> {
  const { m, view, pageUrl, shortUrl, photo } = input;
  const title = `${headline(m, view)}${view.name ? `: ${view.name}` : ""}`;
  const doc = new PDFDocument({
    size: FLYER_SIZES[input.size],
    margin: 0,
    compress: true,
    // The service, never the reporter (contract).
    info: { Title: `${m.service}: ${title}`, Author: m.service, Creator: m.service, Producer: m.service, CreationDate: input.createdAt, ModDate: input.createdAt },
  });
  doc.registerFont("sans", FONT);
  doc.registerFont("bold", FONT_BOLD);
  const chunks: Buffer[] = [];
  doc.on("data", (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on("end", () => resolve(Buffer.concat(chunks)));
    doc.on("error", reject);
  });

  const pageW = doc.page.width;
  const pageH = doc.page.height;
  const innerW = pageW - 2 * MARGIN;
  const stripH = 160;
  const stripTop = pageH - stripH;
  let y = MARGIN;

  // Headline band.
  const head = headline(m, view);
  doc.font("bold");
  const headSize = fitLine(doc, head, innerW - 24, 72);
  const bandH = headSize * 1.3 + 16;
  doc.rect(MARGIN, y, innerW, bandH).fill(ACCENT[view.kind]);
  doc.fill("#ffffff").fontSize(headSize).text(printable(doc, head), MARGIN + 12, y + 10, { width: innerW - 24, height: bandH - 10, align: "center", lineBreak: false });
  y += bandH + 10;
  doc.fill(INK);
  if (view.name) {
    const name = printable(doc, view.name);
    const size = fitLine(doc, name, innerW, 30);
    doc.fontSize(size).text(name, MARGIN, y, { width: innerW, height: size * 1.3, align: "center", lineBreak: false });
    y += size * 1.3 + 6;
  }

  // Photo on the left, the QR code and its URL on the right.
  const qrSide = 150;
  const blockH = 250;
  const photoW = innerW - qrSide - 16;
  if (photo) {
    doc.image(photo, MARGIN, y, { fit: [photoW, blockH], align: "center", valign: "center" });
  } else {
    doc.rect(MARGIN, y, photoW, blockH).lineWidth(1).stroke("#999999");
    doc.font("bold").fontSize(28).fill("#555555").text(printable(doc, m.species[view.species]), MARGIN, y + blockH / 2 - 18, { width: photoW, height: 40, align: "center", lineBreak: false });
    doc.fill(INK);
  }
  const qrX = MARGIN + innerW - qrSide;
  qrCode(doc, pageUrl, qrX, y, qrSide);
  doc.font("sans").fontSize(9).fill(INK);
  const scan = fitText(doc, printable(doc, m.share.flyer.scan), qrSide, 34, 10, 7);
  doc.fontSize(scan.size).text(scan.text, qrX, y + qrSide + 4, { width: qrSide, height: 34, align: "center" });
  y += blockH + 4;
  // The page URL on one line under the block, so it can be typed (and read back by pdftotext) whole.
  const urlSize = fitLine(doc, pageUrl, innerW, 10);
  doc.fontSize(urlSize).text(pageUrl, MARGIN, y, { width: innerW, height: urlSize * 1.4, align: "right", lineBreak: false });
  y += urlSize * 1.4 + 8;

  // A shelter's animal: where it is and until when it is held, by name only (a flyer carries no phone or email).
  const at = atPartnerText(m, view);
  if (at) {
    doc.font("bold");
    const shown = printable(doc, at);
    const size = fitLine(doc, shown, innerW, 16);
    doc.fontSize(size).text(shown, MARGIN, y, { width: innerW, height: size * 1.3, lineBreak: false });
    y += size * 1.3 + 6;
  }

  // Details, then the area in words: "near" and the coarse point, never the precise one.
  const labelW = 150;
  const rows = [...detailRows(m, view), [m.share.labels.area, m.share.near.replace("{place}", placeText(view.place))] as [string, string]];
  for (const [label, value] of rows) {
    doc.font("bold").fontSize(12);
    const shownLabel = printable(doc, label);
    doc.font("sans");
    const fitted = fitText(doc, breakable(printable(doc, value)), innerW - labelW, 30, 12, 9);
    doc.font("bold").fontSize(12).text(shownLabel, MARGIN, y, { width: labelW - 8, height: 16, lineBreak: false });
    doc.font("sans").fontSize(fitted.size).text(fitted.text, MARGIN + labelW, y, { width: innerW - labelW, height: 30 });
    y += Math.min(30, doc.heightOfString(fitted.text, { width: innerW - labelW })) + 4;
  }
  y += 6;

  // The description takes what is left above the help line; it shrinks, then is cut with "…".
  const helpH = 18;
  const descBottom = stripTop - helpH - 14;
  if (view.description && descBottom - y > 20) {
    doc.font("sans");
    const fitted = fitText(doc, breakable(printable(doc, view.description)), innerW, descBottom - y, 12, 7);
    doc.fontSize(fitted.size).text(fitted.text, MARGIN, y, { width: innerW, height: descBottom - y });
  }
  doc.font("bold").fontSize(11);
  const help = fitText(doc, printable(doc, m.share.flyer.help), innerW, helpH, 11, 7);
  doc.fontSize(help.size).text(help.text, MARGIN, stripTop - helpH - 8, { width: innerW, height: helpH, align: "center", lineBreak: false });

  // Tear-off strips: dashed cut lines, each strip the short link printed sideways.
  const stripW = pageW / TEAR_OFF_STRIPS;
  doc.lineWidth(0.75).dash(4, { space: 3 }).strokeColor("#555555");
  doc.moveTo(0, stripTop).lineTo(pageW, stripTop).stroke();
  for (let i = 1; i < TEAR_OFF_STRIPS; i++) doc.moveTo(i * stripW, stripTop).lineTo(i * stripW, pageH).stroke();
  doc.undash();
  doc.font("bold");
  const stripHead = printable(doc, head);
  for (let i = 0; i < TEAR_OFF_STRIPS; i++) {
    const cx = i * stripW;
    doc.save();
    doc.rotate(-90, { origin: [cx, pageH] });
    // Rotated: x runs up the strip from its bottom, y across it.
    doc.fill(INK).font("bold").fontSize(fitLine(doc, stripHead, stripH - 12, 11, 6)).text(stripHead, cx + 8, pageH + 10, { lineBreak: false });
    doc.font("sans").fontSize(fitLine(doc, shortUrl, stripH - 12, 11, 6)).text(shortUrl, cx + 8, pageH + 30, { lineBreak: false });
    doc.restore();
  }
  doc.end();
  return done;
}
