/**
 * Total deadlines of outbound calls (contract part 4, "Nothing stalls the
 * service"). A call to another server ends by its deadline however that
 * server paces its bytes, the answer's body included. An idle timer is no
 * deadline: a server that sends one byte every few seconds keeps resetting it,
 * and holds the caller's slot for as long as it likes.
 */

/** The contract's deadlines, the settings' defaults (lib/config.ts: PUSH_DEADLINE_MS, SMTP_DEADLINE_MS, PARTNER_PHOTO_FETCH_DEADLINE_MS). */
export const DEFAULT_DEADLINES_MS = {
  push: 10_000,
  smtpMessage: 30_000,
  partnerPhotoFetch: 10_000,
} as const;

/**
 * A push origin (scheme, host and port) that timed out this many times in a
 * row is paused for PUSH_ORIGIN_PAUSE_MS (default 60 s): its deliveries wait
 * for the pause's end without holding a slot (notifier/deliverers/origin-pause.ts).
 */
export const PUSH_ORIGIN_TIMEOUTS_TO_PAUSE = 3;
export const DEFAULT_PUSH_ORIGIN_PAUSE_MS = 60_000;

/** The most of an answer's body a caller that needs only its status reads (a push service's answer); photos aside. */
export const ANSWER_BODY_LIMIT_BYTES = 4 * 1024;

/** A call cut at its deadline: it counts as a timeout. */
export class DeadlineExceeded extends Error {
  override name = "DeadlineExceeded";
  readonly code = "ETIMEDOUT";
  constructor(
    readonly deadlineMs: number,
    what: string,
  ) {
    super(`${what} did not complete within ${deadlineMs % 1000 === 0 ? deadlineMs / 1000 : (deadlineMs / 1000).toFixed(1)} s`);
  }
}

/**
 * `call`, settled by `deadlineMs` at the latest: past it, `cut` runs once (it
 * closes the call's connection, so nothing goes on reading or writing) and the
 * result is DeadlineExceeded, whatever the call settles with later. One timer,
 * cleared when the call settles first.
 */
export function withDeadline<T>(deadlineMs: number, what: string, call: Promise<T>, cut: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      reject(new DeadlineExceeded(deadlineMs, what));
      cut();
    }, deadlineMs);
    call.then(
      (value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
