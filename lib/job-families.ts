/**
 * The job families: each has graphile-worker slots of its own, so no kind of
 * work waits for another's (jobs/families.ts runs them). Deliveries have one
 * family a channel. A process runs the families its settings name
 * (NOTIFIER_JOB_FAMILIES). The names are here, in lib/, for the settings.
 */
export const JOB_FAMILIES = ["delivery-email", "delivery-push", "delivery-sms", "fanout", "matching", "photos", "partner-photos", "scheduled"] as const;
export type JobFamily = (typeof JOB_FAMILIES)[number];
