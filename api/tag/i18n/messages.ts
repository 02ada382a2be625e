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
  /**
   * "Get alerts on this phone" (Web Push): shown only by the page's script, where the browser has PushManager.
   * signIn: the visitor is not signed in on this browser; subscribed: it worked; failed: permission refused or an error.
   */
  push: { subscribe: string };
  footer: string;
  /** The share pages (GET /lost/{id}, /found/{id}) and their flyers (api/share/). */
  share: ShareMessages;
}

export interface ShareMessages {
  /** The headline, printed in capitals: "{species}" is the species' name ("LOST DOG", "CHIEN PERDU"). */
  lost: string;
  found: string;
  /** Page title: "Lost dog: {name}" and without a name. */
  titleLost: string;
  titleLostNamed: string;
  titleFound: string;
  /** og:description / the card: "{species} lost near {place} on {date}." */
  summaryLost: string;
  summaryFound: string;
  labels: { name: string; breed: string; colors: string; sex: string; marks: string; description: string; lastSeen: string; foundOn: string; area: string };
  sex: { male: string; female: string; unknown: string };
  /** "within about 1 km of {place}"; {place} is the coarse point. */
  area: string;
  /** The flyer's area: "near {place}". */
  near: string;
  mapLink: string;
  photoAlt: string;
  reunited: { title: string; body: string };
  closed: { title: string; body: string };
  expired: { title: string; body: string };
  /** A found animal in a shelter partner's custody: "At {name}". */
  atPartner: string;
  /** The same while the partner holds it as a stray: "At {name} until {date}", {date} the last day of the hold (UTC). */
  atPartnerUntil: string;
  /** Under it on the page: what the hold means for the owner; {name}, {date} as above. */
  holdNote: string;
  partnerLabels: { phone: string; email: string; address: string; website: string };
  sighting: {
    heading: string;
    intro: string;
    note: string;
    noteHint: string;
    submit: string;
    privacy: string;
    thanks: { title: string; body: string };
  };
  /** The relay form's heading on a lost report's page, and on a found report's page. */
  messageLost: string;
  messageFound: string;
  messageIntroFound: string;
  errors: {
    /** {max}: the limit; {count}: what was sent. */
    noteTooLong: string;
    noteInvalid: string;
    failed: string;
  };
  thanksFinder: { title: string; body: string };
  tooManySightings: { title: string; body: string };
  notFound: { title: string; body: string };
  flyer: { scan: string; tear: string; help: string };
}
