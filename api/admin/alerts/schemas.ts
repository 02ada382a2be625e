import { z } from "zod";

const FanoutJob = z
  .object({
    state: z.enum(["waiting", "running", "retrying"]).describe("retrying: its last attempt failed (lastError) and it waits for runAt."),
    batch: z.number().int().describe("0 collects the recipients; n ≥ 1 notifies the nth batch."),
    attempts: z.number().int(),
    maxAttempts: z.number().int(),
    lastError: z.string().nullable(),
    runAt: z.string(),
  })
  .nullable()
  .describe("The fan-out's queued batch job; null when none is queued (finished, or between a batch's commit and the next job).");

const Fanout = z.object({
  eventId: z.uuid().describe("The event that started it."),
  eventType: z.string(),
  status: z.enum(["running", "done", "stopped"]),
  stopReason: z.string().nullable().describe("Why it stopped early: the report was closed, quarantined or removed."),
  recipients: z.number().int().nullable().describe("Subscribers it claimed in range; null until batch 0 ran."),
  notified: z.number().int(),
  deferredToDigest: z.number().int(),
  skipped: z
    .number()
    .int()
    .describe("Subscribers whose subscription was deleted, or who were suspended, before their batch ran, or whom another fan-out of the report reached first."),
  batchesDone: z.number().int(),
  batchesPending: z.number().int().nullable().describe("Batches still to run for the recipients it holds; null until batch 0 ran."),
  startedAt: z.string(),
  updatedAt: z.string(),
  finishedAt: z.string().nullable(),
  job: FanoutJob,
});

export const ReportAlerts = z
  .object({
    lostReportId: z.uuid(),
    reportStatus: z.string(),
    moderationState: z.string().nullable(),
    subscriptionsInRange: z.number().int().describe("Subscriptions whose radius covers the report's coarse point now (species matching, the reporter's left out)."),
    subscribersInRange: z.number().int(),
    recipients: z
      .object({ pending: z.number().int(), notified: z.number().int(), deferred: z.number().int(), digested: z.number().int(), skipped: z.number().int() })
      .describe(
        "Every subscriber this report has reached or will reach, by state, across its fan-outs (at most once each). deferred: past the daily cap, waiting for the morning digest (counted by the fan-out until the digest writes their ledger rows); digested: listed in a digest; skipped includes those the digest skipped.",
      ),
    fanouts: z.array(Fanout).describe("Newest first."),
  })
  .meta({ id: "ReportAlerts" });
export type ReportAlerts = z.output<typeof ReportAlerts>;
