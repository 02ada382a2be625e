import type { Species } from "../../../lib/animals.js";

/**
 * The tag page's text, one catalogue per language (en.ts, de.ts, fr.ts,
 * es.ts). `{name}`-style placeholders are filled by render.ts, escaped; no
 * message holds HTML. A missing key is a compile error in every catalogue.
 */
export interface Messages {
  /** BCP 47 tag for <html lang> and date formatting. */
  lang: string;
  service: string;
  /** Page title when the owner shows the name: "{name}'s tag". */
  titleNamed: string;
  titleUnnamed: string;
  photoAlt: string;
  photoAltUnnamed: string;
  species: Record<Species, string>;
  labels: { species: string; breed: string; colors: string; medicalNotes: string; instructions: string };
  lost: { heading: string; body: string; since: string };
  notLost: string;
  form: {
    heading: string;
    intro: string;
    message: string;
    messageHint: string;
    contact: string;
    contactHint: string;
    shareLocation: string;
    locating: string;
    /** Shown once the browser gave a position: what is sent and how coarse. */
    locationShared: string;
    locationFailed: string;
    submit: string;
    privacy: string;
  };
  errors: {
    summary: string;
    messageRequired: string;
    /** {max}: the limit; {count}: what was sent. */
    messageTooLong: string;
    messageInvalid: string;
    contactRequired: string;
    contactTooLong: string;
    contactInvalid: string;
  };
  thanks: { title: string; body: string; next: string };
  notFound: { title: string; body: string };
  tooManyViews: { title: string; body: string };
  tooManyMessages: { title: string; body: string };
  failed: { title: string; body: string };
  /** A form post another site's page made (api/plugins/same-origin-forms.ts). */
  otherSite: { title: string; body: string };
  footer: string;
}
