import type { OidcSettings } from "../../ui-shared/oidc";

/** What the API tells the page in <meta name="service-config"> (api/people-app/routes.ts, AppPageConfig). */
export interface PageConfig {
  oidc: OidcSettings | null;
  devSignIn: boolean;
  map: { tileUrl: string; attribution: string };
  /** The service sends texts: settings offer a phone number. */
  sms: boolean;
}

export function readPageConfig(): PageConfig {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="service-config"]');
  const fallback: PageConfig = { oidc: null, devSignIn: false, map: { tileUrl: "", attribution: "" }, sms: false };
  if (!meta) return fallback;
  try {
    return { ...fallback, ...(JSON.parse(meta.content) as Partial<PageConfig>) };
  } catch {
    return fallback;
  }
}
