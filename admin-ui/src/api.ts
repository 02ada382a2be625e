import type { ModerationTargetType } from "../../lib/moderation";
import type { OidcSession } from "../../ui-shared/oidc";
import type { Channel, NotificationStatus, ReasonCategory } from "../../lib/notifications";
/**
 * The console's only way to the service: the public HTTP API of the contract
 * (/v1/admin/..., same origin), with the signed-in credential on every call.
 */

/** How the operator signed in: the identity provider (tokens in memory), a pasted bearer token, or the development debug actor. */
export type Credential =
  | { kind: "oidc"; session: OidcSession }
  | { kind: "bearer"; token: string }
  | { kind: "debug"; actorId: string; roles: string };

/** An RFC 7807 problem, as every API error is rendered. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  /** replay-not-eligible adds why: status, permanent or superseded. */
  reason?: string;
  errors?: { path: string; message: string }[];
}

export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail);
  }

  /** The problem slug: the last segment of `type`. */
  get slug(): string {
    return this.problem.type.split("/").pop() ?? "";
  }
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export async function authHeaders(credential: Credential): Promise<Record<string, string>> {
  if (credential.kind === "oidc") {
    const token = await credential.session.accessToken();
    return token ? { authorization: `Bearer ${token}` } : {};
  }
  if (credential.kind === "bearer") return { authorization: `Bearer ${credential.token}` };
  const headers: Record<string, string> = { "x-debug-actor": credential.actorId };
  if (credential.roles.trim()) headers["x-debug-roles"] = credential.roles.trim();
  return headers;
}

/**
 * The actor id the API will see: the debug actor, or the token's `sub`. The
 * token is only decoded here, for display and the self-suspension hint; the
 * API verifies it.
 */
export function actorIdOf(credential: Credential): string | null {
  if (credential.kind === "debug") return credential.actorId;
  if (credential.kind === "oidc") return credential.session.subject;
  const payload = credential.token.split(".")[1];
  if (!payload) return null;
  try {
    const json = atob(payload.replaceAll("-", "+").replaceAll("_", "/"));
    const sub = (JSON.parse(json) as { sub?: unknown }).sub;
    return typeof sub === "string" ? sub : null;
  } catch {
    return null;
  }
}

/** A query string from the set values only; empty strings mean "no filter". */
export function query(params: Record<string, string | number | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

async function problemOf(response: Response): Promise<Problem> {
  try {
    const body = (await response.json()) as Partial<Problem>;
    if (typeof body.detail === "string") {
      return { type: body.type ?? "", title: body.title ?? response.statusText, status: response.status, ...body } as Problem;
    }
  } catch {
    // not a problem body: described from the status below
  }
  return { type: "", title: response.statusText || "Error", status: response.status, detail: `the API answered ${response.status}` };
}

export async function call<T>(credential: Credential, method: "GET" | "POST" | "PATCH", path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json", ...(await authHeaders(credential)) };
  // Only with a body: an empty body sent as application/json is refused by the API.
  if (body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new ApiError({ type: "", title: "Network error", status: 0, detail: (err as Error).message });
  }
  if (!response.ok) throw new ApiError(await problemOf(response));
  return (await response.json()) as T;
}

/**
 * An image the API serves (a photo variant), fetched with the credential and
 * returned as a data: URL: an <img src> cannot send the credential, and the
 * console's content security policy allows images from 'self' and data: only.
 */
export async function fetchImage(credential: Credential, path: string): Promise<string> {
  let response: Response;
  try {
    response = await fetch(path, { headers: { accept: "image/webp", ...(await authHeaders(credential)) } });
  } catch (err) {
    throw new ApiError({ type: "", title: "Network error", status: 0, detail: (err as Error).message });
  }
  if (!response.ok) throw new ApiError(await problemOf(response));
  const blob = await response.blob();
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result as string);
    reader.onerror = () => reject(new ApiError({ type: "", title: "Read error", status: 0, detail: "the image could not be read" }));
    reader.readAsDataURL(blob);
  });
}

// Response shapes of the contract's admin API, as the console reads them.

export interface ModerationItem {
  id: string;
  reporterId: string;
  targetType: ModerationTargetType;
  targetId: string;
  reason: string;
  details: string | null;
  status: "open" | "claimed" | "escalated" | "resolved";
  claimedBy: string | null;
  resolution: ModerationAction | null;
  resolutionNote: string | null;
  contentState: "quarantined" | "removed" | null;
  createdAt: string;
}

export const MODERATION_ACTIONS = ["dismiss", "warn", "quarantine", "remove", "escalate"] as const;
export type ModerationAction = (typeof MODERATION_ACTIONS)[number];

export interface StuckEvent {
  id: string;
  type: string;
  occurredAt: string;
  ageSeconds: number;
  requeueCount: number;
  payload: Record<string, unknown>;
}

export interface RequeueResult {
  id: string;
  published: boolean;
  requeueCount: number;
}

/** The spec's cap: a 6th requeue of one event is refused. */
export const REQUEUE_CAP = 5;

export interface NotificationFailure {
  id: string;
  recipientActorId: string;
  channel: Channel;
  status: NotificationStatus;
  attempts: number;
  lastError: string | null;
  reasonCategory: ReasonCategory;
  sourceEventId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ReplayResult {
  id: string;
  previousStatus: string;
  status: string;
}

export interface AuditEvent {
  id: string;
  actorId: string;
  action: string;
  objectType: string;
  objectId: string;
  occurredAt: string;
  metadata: Record<string, unknown>;
}

export interface SuspensionState {
  userId: string;
  status: "active" | "suspended";
  reasonCode?: string;
  reasonDetail?: string;
  expiresAt?: string;
  suspendedBy?: string;
  suspendedAt?: string;
  restoredBy?: string;
  restoredAt?: string;
  restoreReason?: string;
}

/** graphile-worker job states (jobs/job-state.ts JOB_STATES). */
export const JOB_STATES = ["queued", "scheduled", "running", "failed"] as const;
export type JobState = (typeof JOB_STATES)[number];

/** GET /v1/admin/jobs/summary (api/admin/jobs/schemas.ts). */
export interface JobsSummary {
  /** When the counts were read: the API keeps them a few seconds (API_JOBS_SUMMARY_MAX_AGE_MS). */
  asOf: string;
  tasks: Array<{ task: string; queued: number; scheduled: number; running: number; failed: number; oldestQueuedSeconds: number }>;
  cron: Array<{ identifier: string; knownSince: string; lastRun: string | null }>;
}

/** An item of GET /v1/admin/jobs, and the answer of its retry and fail. */
export interface WorkerJob {
  id: number;
  task: string;
  state: JobState;
  attempts: number;
  maxAttempts: number;
  runAt: string;
  lockedAt: string | null;
  lockedBy: string | null;
  lastError: string | null;
  createdAt: string;
  payload: unknown;
}

export type JobAction = "retry" | "fail";

/** The states each job action takes a job from (the API refuses the others with 409). */
export const JOB_ACTION_FROM: Record<JobAction, readonly JobState[]> = { retry: ["failed", "scheduled"], fail: ["queued", "scheduled"] };

/** An API caller: call() with the credential bound, or ui.tsx useApi().request (which also signs out on 401). */
export type Requester = <T>(method: "GET" | "POST" | "PATCH", path: string, body?: unknown) => Promise<T>;

/** The jobs screen's typed calls. */
export const jobsApi = {
  summary: (request: Requester) => request<JobsSummary>("GET", "/v1/admin/jobs/summary"),
  list: (request: Requester, filter: { task?: string; state?: JobState | ""; cursor?: string | null }) =>
    request<Page<WorkerJob>>("GET", `/v1/admin/jobs${query({ task: filter.task, state: filter.state, cursor: filter.cursor })}`),
  get: (request: Requester, id: number) => request<WorkerJob>("GET", `/v1/admin/jobs/${id}`),
  act: (request: Requester, id: number, action: JobAction, reason: string) => request<WorkerJob>("POST", `/v1/admin/jobs/${id}/${action}`, { reason }),
};
