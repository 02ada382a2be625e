import { sharePath, shortPath, type ReportKind } from "../../../lib/report-lifecycle.js";
import { negotiateLanguage } from "../../tag/i18n/index.js";
import type { GuideOptions } from "./store.js";

/**
 * A report's public links under PUBLIC_BASE_URL: its share page, its short
 * link (GET /s/{code}) and its printable flyer. The share module (api/share/)
 * serves them; every report view names them from here.
 */
export interface ShareLinks {
  shareUrl: string;
  shortUrl: string;
  flyerUrl: string;
}

const trimmed = (base: string) => base.replace(/\/+$/, "");

/** A report's share page alone, where its short code is not at hand. */
export const shareUrlOf = (base: string, kind: ReportKind, id: string): string => `${trimmed(base)}${sharePath(kind, id)}`;

/** A report's printable flyer alone, where its short code is not at hand. */
export const flyerUrlOf = (base: string, kind: ReportKind, id: string): string => `${shareUrlOf(base, kind, id)}/flyer.pdf`;

/**
 * What a new lost report's event carries for its owner's first-hour guide
 * (notifier/report-guide/): the language the filing request asked for
 * (Accept-Language, as the share pages negotiate it), the page and the flyer.
 */
export const guideOf = (acceptLanguage: string | undefined, base: string, id: string): GuideOptions => ({
  lang: negotiateLanguage(acceptLanguage),
  shareUrl: shareUrlOf(base, "lost", id),
  flyerUrl: flyerUrlOf(base, "lost", id),
});

export function shareLinks(base: string, kind: ReportKind, report: { id: string; shortCode: string }): ShareLinks {
  const root = trimmed(base);
  return {
    shareUrl: `${root}${sharePath(kind, report.id)}`,
    shortUrl: `${root}${shortPath(report.shortCode)}`,
    flyerUrl: `${root}${sharePath(kind, report.id)}/flyer.pdf`,
  };
}

/** What a public view carries: the page and the short link, not the flyer (contract: "nothing else"). */
export function publicShareLinks(base: string, kind: ReportKind, report: { id: string; shortCode: string }): Omit<ShareLinks, "flyerUrl"> {
  const { shareUrl, shortUrl } = shareLinks(base, kind, report);
  return { shareUrl, shortUrl };
}
