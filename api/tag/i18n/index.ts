import { de } from "./de.js";
import { en } from "./en.js";
import { es } from "./es.js";
import { fr } from "./fr.js";
import type { Messages } from "./messages.js";

export type { Messages };

export const catalogues = { en, de, fr, es } as const satisfies Record<string, Messages>;
export type Language = keyof typeof catalogues;
export const LANGUAGES = Object.keys(catalogues) as Language[];
const DEFAULT_LANGUAGE: Language = "en";

const isLanguage = (tag: string): tag is Language => Object.hasOwn(catalogues, tag);

/**
 * The catalogue for an Accept-Language header: the highest-q language we
 * have, matched on its primary subtag (de-AT → de); English otherwise.
 * Malformed entries are skipped, never an error.
 */
export function negotiateLanguage(header: string | undefined): Language {
  if (!header) return DEFAULT_LANGUAGE;
  const ranked = header
    .slice(0, 500)
    .split(",")
    .map((entry, index) => {
      const [range = "", ...params] = entry.trim().split(";");
      const q = params.map((p) => /^\s*q=([01](?:\.\d{0,3})?)\s*$/i.exec(p)?.[1]).find((v) => v !== undefined);
      return { primary: range.trim().toLowerCase().split("-")[0] ?? "", q: q === undefined ? 1 : Number(q), index };
    })
    .filter((r) => r.q > 0 && r.primary !== "")
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const { primary } of ranked) {
    if (primary === "*") return DEFAULT_LANGUAGE;
    if (isLanguage(primary)) return primary;
  }
  return DEFAULT_LANGUAGE;
}

/** Fills `{key}` placeholders; the caller escapes the result for HTML. */
export function format(template: string, values: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (whole, key: string) => (Object.hasOwn(values, key) ? String(values[key]) : whole));
}
