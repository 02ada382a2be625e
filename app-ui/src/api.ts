import type { OidcSession } from "../../ui-shared/oidc";

/**
 * The app's way to the service: the public HTTP API (same origin), as any
 * other client calls it, with the person's credential on every call that
 * needs one.
 */

/** How the person signed in: the provider's tokens (in memory), or the development debug actor. */
export type Credential = { kind: "oidc"; session: OidcSession } | { kind: "debug"; actorId: string };

/** An RFC 7807 problem, as every API error is rendered. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: { path: string; message: string }[];
}

export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail);
  }
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

async function problemOf(response: Response): Promise<Problem> {
  try {
    const body = (await response.json()) as Partial<Problem>;
    if (typeof body.detail === "string") return { type: body.type ?? "", title: body.title ?? response.statusText, ...body, status: response.status } as Problem;
  } catch {
    // not a problem body: described from the status below
  }
  return { type: "", title: response.statusText || "Error", status: response.status, detail: `the service answered ${response.status}` };
}

export const NETWORK_ERROR = "network";

async function headersFor(credential: Credential | null): Promise<Record<string, string>> {
  if (!credential) return {};
  if (credential.kind === "debug") return { "x-debug-actor": credential.actorId };
  const token = await credential.session.accessToken();
  return token ? { authorization: `Bearer ${token}` } : {};
}

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * One API call. A 401 with the provider's tokens refreshes them once and
 * retries; `onUnauthenticated` hears of a 401 that stays.
 */
export async function call<T>(
  credential: Credential | null,
  method: Method,
  path: string,
  body?: unknown,
  options: { onUnauthenticated?: (problem: Problem) => void; retried?: boolean } = {},
): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json", ...(await headersFor(credential)) };
  let payload: BodyInit | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers["content-type"] = "application/json";
    payload = JSON.stringify(body);
  }
  let response: Response;
  try {
    response = await fetch(path, { method, headers, body: payload });
  } catch (err) {
    throw new ApiError({ type: NETWORK_ERROR, title: "Network error", status: 0, detail: (err as Error).message });
  }
  if (response.status === 401 && credential?.kind === "oidc" && !options.retried) {
    const refreshed = await credential.session.refresh().then(
      () => true,
      () => false,
    );
    if (refreshed) return call<T>(credential, method, path, body, { ...options, retried: true });
  }
  if (!response.ok) {
    const problem = await problemOf(response);
    if (response.status === 401) options.onUnauthenticated?.(problem);
    throw new ApiError(problem);
  }
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

export function toProblem(err: unknown): Problem {
  if (err instanceof ApiError) return err.problem;
  return { type: "", title: "Error", status: 0, detail: err instanceof Error ? err.message : String(err) };
}

/** A query string from the set values only. */
export function query(params: Record<string, string | number | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== "") search.set(key, String(value));
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** Same-origin photo paths: the API's URLs are absolute under its public base, which the page's origin may not be. */
export const photoPath = (id: string, variant: "thumb" | "display") => `/v1/photos/${id}/${variant}`;

// Response shapes of the contract, as the app reads them.

export type Species = "dog" | "cat" | "bird" | "rabbit" | "other";
export const SPECIES: Species[] = ["dog", "cat", "bird", "rabbit", "other"];
export type ReportKind = "lost" | "found";
export interface Point {
  lat: number;
  lon: number;
}
export interface CoarsePoint extends Point {
  precisionMeters: number;
}
export interface Photo {
  id: string;
  width: number;
  height: number;
}
export interface PublicAnimal {
  name?: string;
  species: Species;
  breed?: string;
  colors: string[];
  sex?: string;
  distinguishingMarks?: string;
}

export interface MyReport {
  id: string;
  status: "open" | "resolved" | "closed";
  animal: PublicAnimal;
  lastSeenAt?: string;
  foundAt?: string;
  location: CoarsePoint;
  description?: string;
  createdAt: string;
  expiresAt: string | null;
  closedReason: string | null;
  moderationState: string | null;
  shareUrl: string;
  shortUrl: string;
  flyerUrl: string;
}

export interface PublicReport {
  id: string;
  status: string;
  animal: PublicAnimal;
  lastSeenAt?: string;
  foundAt?: string;
  location: CoarsePoint;
  description?: string;
  photos: Photo[];
  shareUrl: string;
}

export interface Alert {
  id: string;
  kind: ReportKind;
  species: Species;
  animalName?: string;
  location: CoarsePoint;
  distanceKm: number;
  createdAt: string;
}

export interface Shelter {
  id: string;
  name: string;
  kind: string;
  publicContact: { phone?: string; email?: string; address?: string; website?: string };
  distanceKm: number;
  strayHoldDays: number;
  inCustody: { dog: number; cat: number; other: number };
}

export interface Match {
  id: string;
  kind: "found_report" | "sighting" | "lost_report";
  targetId: string;
  score: number;
  reasons: string[];
  distanceKm: number;
  createdAt: string;
  status: "suggested" | "confirmed" | "dismissed";
  lostReport?: { status: string; animal: PublicAnimal; lastSeenAt: string; location: CoarsePoint };
}

export interface Sighting {
  id: string;
  location: CoarsePoint;
  seenAt: string;
  note?: string;
}

export interface MyNotification {
  id: string;
  channel: string;
  kind: string;
  subject: string;
  body: string;
  data: Record<string, unknown>;
  createdAt: string;
  readAt: string | null;
}

export interface AlertSubscription {
  id: string;
  location: Point;
  radiusKm: number;
  species: Species[] | null;
  createdAt: string;
}

export interface Preferences {
  email: string | null;
  emailStatus: "none" | "pending" | "confirmed";
  phoneStatus: PhoneStatus;
  /** The last two digits of the number set: no response carries the number. */
  phoneEnding: string | null;
}

export type PhoneStatus = "none" | "pending" | "verified" | "stopped";

/** PUT /v1/me/phone and POST /v1/me/phone/verify. */
export interface PhoneState {
  phoneStatus: PhoneStatus;
  phoneEnding: string | null;
}
