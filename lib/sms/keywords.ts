/**
 * The keywords a text may be (contract part 4, "SMS"), matched trimmed and
 * case-insensitively, and the service's fixed answers. The answers are GSM-7
 * only, so each stays one segment with its link.
 */

export const STOP_KEYWORDS = ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"] as const;
export const START_KEYWORDS = ["START", "UNSTOP"] as const;
export const HELP_KEYWORDS = ["HELP"] as const;

export type Keyword = "stop" | "start" | "help";

export function keywordOf(body: string): Keyword | null {
  const word = body.trim().toUpperCase();
  if ((STOP_KEYWORDS as readonly string[]).includes(word)) return "stop";
  if ((START_KEYWORDS as readonly string[]).includes(word)) return "start";
  if ((HELP_KEYWORDS as readonly string[]).includes(word)) return "help";
  return null;
}

export const SERVICE_NAME = "Animal Safety";

/** Appended to the first text a finder's number gets before it has written back. */
export const HOW_TO_STOP = "Reply STOP to get no more texts.";

export const SMS_REPLIES = {
  help: `${SERVICE_NAME}: texts about lost and found animals. Reply STOP to stop all texts, START to get them again.`,
  stop: `${SERVICE_NAME}: you will get no more texts from this number. Reply START to get them again.`,
  start: `${SERVICE_NAME}: texts are on again. Reply STOP to stop them, HELP for help.`,
  /** An owner's reply in a conversation whose finder left no number. */
  noFinderPhone: `${SERVICE_NAME}: your reply could not be passed on, because the sender left no phone number. Open the message in the app to see how they asked to be reached.`,
} as const;

/** How long a relay conversation takes replies after its last text. */
export const CONVERSATION_DAYS = 7;

/** Texts a day to a finder's number that has not written back. */
export const SILENT_FINDER_TEXTS_PER_DAY = 3;
