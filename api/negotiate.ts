/**
 * HTML or JSON for one request, from its Accept header: a browser asks for
 * text/html by name; API clients send nothing, a bare wildcard or application/json.
 */

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

function parseAccept(header: string): MediaRange[] {
  return header
    .slice(0, 1000)
    .split(",")
    .flatMap((entry) => {
      const [range = "", ...params] = entry.trim().toLowerCase().split(";");
      const [type, subtype] = range.trim().split("/");
      if (!type || !subtype) return [];
      const q = params.map((p) => /^\s*q=([01](?:\.\d{0,3})?)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return [{ type, subtype, q: q === undefined ? 1 : Number(q) }];
    });
}

/** The q of the most specific range matching the media type (0 when none does). */
function qualityOf(ranges: MediaRange[], type: string, subtype: string): number {
  const rank = (r: MediaRange) =>
    r.type === type && r.subtype === subtype ? 3 : r.type === type && r.subtype === "*" ? 2 : r.type === "*" && r.subtype === "*" ? 1 : 0;
  let best: MediaRange | null = null;
  for (const range of ranges) if (rank(range) > 0 && (!best || rank(range) > rank(best))) best = range;
  return best?.q ?? 0;
}

/** True when the client prefers HTML to JSON: it names text/html (or text/*) above whatever would give it JSON. */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  const ranges = parseAccept(accept);
  const html = qualityOf(ranges, "text", "html");
  return html > 0 && html > qualityOf(ranges, "application", "json") && html > qualityOf(ranges, "application", "problem+json");
}
