/**
 * The end of a stray hold in a notification's words: the day whose end it
 * is, in UTC, as the share page shows it ("until November 25, 2025 (UTC)").
 */
export const holdEndText = (heldUntil: string | Date): string =>
  `${new Intl.DateTimeFormat("en", { dateStyle: "long", timeZone: "UTC" }).format(new Date(heldUntil))} (UTC)`;
