import type { Task } from "graphile-worker";

/** A cron task: nothing queues it, so its name is here, with its crontab line. */
export const CONTACT_MESSAGES_DIGEST_TASK = "contact_messages__digest";

/**
 * Every hour on the hour (graphile-worker cron in the notifier's worker, one
 * run per tick however many notifiers run). A missed tick needs no backfill:
 * the next run takes every message still held. notifier/contact-messages-digest.ts
 * runContactMessageDigest does the work.
 */
export const CONTACT_MESSAGES_DIGEST_CRONTAB = `0 * * * * ${CONTACT_MESSAGES_DIGEST_TASK}`;

export function contactMessagesDigestTask(digest: () => Promise<{ notifications: number; messages: number; sendersForgotten: number }>): Task {
  return async (_payload, helpers) => {
    const result = await digest();
    if (result.messages > 0 || result.sendersForgotten > 0) {
      helpers.logger.info(
        `contact messages: ${result.messages} held messages in ${result.notifications} notifications; ${result.sendersForgotten} sender keys forgotten`,
      );
    }
  };
}
