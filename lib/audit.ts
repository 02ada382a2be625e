import type { Queryable } from "./db.js";

/** Audit actions, one registry. */
export const AuditAction = {
  OutboxRequeued: "admin.outbox.requeued",
  AccountSuspended: "admin.account_suspended",
  AccountRestored: "admin.account_restored",
  NotificationReplayed: "admin.notification.replayed",
  EmergencyProfileRevoked: "admin.emergency_profile.revoked",
  /** The owner may issue a fresh token again after an admin's revocation. */
  EmergencyProfileRevocationLifted: "admin.emergency_profile.revocation_lifted",
  ModerationClaimed: "admin.moderation.claimed",
  ModerationActioned: "admin.moderation.actioned",
  PhotoDeletedByAdmin: "admin.photo.deleted",
  PreciseLocationViewed: "safety.precise_location_viewed",
  ReportFlagged: "safety.report_flagged",
  ReportCancelledByOperator: "safety.report_cancelled_by_operator",
  WorkerJobsCleaned: "operator.worker_jobs_cleaned",
  /** A failed or scheduled graphile-worker job was made to run now, attempts reset (POST /v1/admin/jobs/{id}/retry). */
  JobRetried: "admin.job.retried",
  /** A queued or scheduled graphile-worker job was failed for good (POST /v1/admin/jobs/{id}/fail). */
  JobFailed: "admin.job.failed",
  OutboxRepublished: "operator.outbox_republished",
  /** The link of a confirmation email was followed: the address now receives notification email. */
  EmailConfirmed: "account.email_confirmed",
  PartnerCreated: "admin.partner.created",
  PartnerPasswordRotated: "admin.partner.password_rotated",
  PartnerSuspended: "admin.partner.suspended",
  PartnerRestored: "admin.partner.restored",
  /** A partner's name, public contact, location, dateFormat or strayHoldDays changed (PATCH /v1/admin/partners/{id}). */
  PartnerUpdated: "admin.partner.updated",
} as const;

export type AuditAction = (typeof AuditAction)[keyof typeof AuditAction];

/** Object types named in audit events. */
export const AuditObject = {
  OutboxEvent: "outbox_event",
  Account: "account",
  Notification: "notification",
  Animal: "animal",
  LostReport: "lost_report",
  ModerationReport: "moderation_report",
  Photo: "photo",
  WorkerJobs: "worker_jobs",
  Partner: "partner",
  /** One graphile-worker job, by its numeric id. */
  WorkerJob: "worker_job",
} as const;

export type AuditObject = (typeof AuditObject)[keyof typeof AuditObject];

export interface AuditEventInput {
  actorId: string;
  action: AuditAction;
  objectType: AuditObject;
  objectId: string;
  metadata?: Record<string, unknown>;
}

/** Appends an audit event on the caller's client, inside the caller's transaction. */
export async function writeAuditEvent(client: Queryable, event: AuditEventInput): Promise<string> {
  const { rows } = await client.query<{ id: string }>(
    `insert into audit_event (actor_id, action, object_type, object_id, metadata)
     values ($1::text, $2::text, $3::text, $4::text, $5::jsonb)
     returning id`,
    [event.actorId, event.action, event.objectType, event.objectId, JSON.stringify(event.metadata ?? {})],
  );
  return rows[0]!.id;
}
