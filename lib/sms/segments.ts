/**
 * How many segments a text costs (3GPP TS 23.038 and 23.040). A text that
 * every character of fits the GSM 03.38 alphabet goes as GSM-7: 160 septets in
 * one segment, else 153 a segment (the rest is the concatenation header); a
 * character of the extension table takes two septets, and its escape is never
 * split from it. Any other character sends the whole text as UCS-2: 70 UTF-16
 * units in one segment, else 67 a segment, a surrogate pair never split.
 * Providers bill by these segments, and the channel allows at most
 * MAX_SMS_SEGMENTS a text.
 */

export const MAX_SMS_SEGMENTS = 2;

const GSM_BASIC =
  "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
const GSM_EXTENSION = "\f^{}\\[~]|€";
const basic = new Set(GSM_BASIC);
const extension = new Set(GSM_EXTENSION);

export type SmsEncoding = "GSM-7" | "UCS-2";

export interface SmsSize {
  encoding: SmsEncoding;
  segments: number;
  /** Septets (GSM-7) or UTF-16 units (UCS-2) of the whole text. */
  units: number;
}

const SINGLE = { "GSM-7": 160, "UCS-2": 70 } as const;
const PART = { "GSM-7": 153, "UCS-2": 67 } as const;

/** GSM-7 when every character is in the basic or extension table. */
export const isGsm7 = (text: string): boolean => [...text].every((c) => basic.has(c) || extension.has(c));

/** Each character's cost in the text's encoding: 1 or 2 septets, or 1 or 2 UTF-16 units. */
function costs(text: string, encoding: SmsEncoding): number[] {
  return [...text].map((c) => (encoding === "GSM-7" ? (extension.has(c) ? 2 : 1) : c.length));
}

/** Segments of a multipart text: characters packed in order, none split across two segments. */
function packed(charCosts: number[], capacity: number): number {
  let segments = 1;
  let used = 0;
  for (const cost of charCosts) {
    if (used + cost > capacity) {
      segments += 1;
      used = 0;
    }
    used += cost;
  }
  return segments;
}

export function smsSize(text: string): SmsSize {
  const encoding: SmsEncoding = isGsm7(text) ? "GSM-7" : "UCS-2";
  const charCosts = costs(text, encoding);
  const units = charCosts.reduce((sum, c) => sum + c, 0);
  const segments = units <= SINGLE[encoding] ? 1 : packed(charCosts, PART[encoding]);
  return { encoding, segments, units };
}

/**
 * `text`, then a space and `link`, in at most `maxSegments` segments: the text
 * is cut (at a word boundary when one is near, and marked with an ellipsis:
 * "..." in GSM-7, so the cut never turns the text into UCS-2) until the whole
 * fits. The link is never cut; a link too long to fit on its own is sent alone.
 */
export function fitSms(text: string, link: string, maxSegments = MAX_SMS_SEGMENTS): string {
  const whole = text.trim() === "" ? link : `${text.trim()} ${link}`;
  if (smsSize(whole).segments <= maxSegments) return whole;
  const chars = [...text.trim()];
  const ellipsis = isGsm7(whole) ? "..." : "…";
  const withPrefix = (keep: number) => `${chars.slice(0, keep).join("").trimEnd()}${ellipsis} ${link}`;
  // The longest prefix that fits, by bisection.
  let [fits, tooLong] = [0, chars.length];
  while (tooLong - fits > 1) {
    const mid = (fits + tooLong) >> 1;
    if (smsSize(withPrefix(mid)).segments <= maxSegments) fits = mid;
    else tooLong = mid;
  }
  if (fits === 0) return link;
  // Back to the last space within the final 20 characters, so a word is not cut in half.
  const space = chars.slice(0, fits).lastIndexOf(" ");
  const keep = space > 0 && fits - space <= 20 ? space : fits;
  return withPrefix(keep);
}
