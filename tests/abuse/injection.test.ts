import type { LightMyRequestResponse } from "fastify";
import { beforeAll, describe, expect, it } from "vitest";
import { PLATFORM_ADMIN } from "../../api/plugins/auth.js";
import { as } from "../helpers/app.js";
import { slugOf, useAbuseHarness, WriteLog } from "./harness.js";
import { exampleFor, nonNull, operationsOf, propertyPaths, withProperty, type JsonSchema, type Operation } from "./openapi.js";

// The partner API's integration key (its calls are read back with a partner made through the admin API).
const PARTNER_KEY = "injection-partner-integration-key";
const h = useAbuseHarness({ extra: { PARTNER_API_KEYS: PARTNER_KEY } });
let writes: WriteLog;
let operations: Operation[];

beforeAll(async () => {
  writes = await WriteLog.install(h.pool);
  operations = operationsOf((await h.call({ url: "/openapi.json" })).json());
});

/** Stored and returned exactly as sent. None has leading or trailing whitespace, which text fields trim. */
const PAYLOADS: [string, string][] = [
  ["quote and comment", "'; drop table safety_lost_report; --"],
  ["tautology", "' or '1'='1"],
  ["stacked query", '"; select pg_sleep(5); --'],
  ["placeholder", "$1 $2::text"],
  ["dollar quoting", "$$ x $$ $tag$ y $tag$"],
  ["backslashes", "C:\\new\\table \\x00 \\\\"],
  ["LIKE wildcards", "100% _under_score %_%"],
  ["comment markers", "/* c */ -- d # e"],
  ["emoji", "🐕🐈🐾"],
  ["zero-width joiner", "👨‍👩‍👧‍👦 and 🐕‍🦺"],
  ["RTL override", "abc\u202Edcba\u202C end"],
  ["combining marks", "e\u0301\u0302\u0303 Z\u0335\u0321a\u0337"],
  ["astral plane", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u{1D11E} \u{10FFFF}"],
  ["zero-width space and BOM inside", "a\u200Bb\uFEFFc"],
  ["bidi scripts", "שלום مرحبا"],
  ["HTML", "<script>alert(1)</script>"],
  ["JSON-looking", '{"$ne":null}'],
];

let actors = 0;
const fresh = (prefix: string) => `${prefix}-${++actors}`;

async function ok(res: Promise<LightMyRequestResponse>): Promise<Record<string, unknown>> {
  const r = await res;
  if (r.statusCode >= 300) throw new Error(`${r.statusCode} ${r.body}`);
  return r.statusCode === 204 ? {} : (r.json() as Record<string, unknown>);
}

const post = (url: string, actor: string | null, payload: unknown, roles: string[] = []) =>
  h.call({ method: "POST", url, headers: actor ? as(actor, roles) : {}, payload: payload as object });
const get = (url: string, actor: string | null, roles: string[] = []) => h.call({ url, headers: actor ? as(actor, roles) : {} });
const put = (url: string, actor: string, payload: unknown) => h.call({ method: "PUT", url, headers: as(actor), payload: payload as object });

const lostReport = { animal: { species: "dog" }, lastSeenAt: "2025-11-20T08:00:00Z", location: { lat: 48.85, lon: 2.35 } };
async function openReport(owner: string): Promise<string> {
  return String((await ok(post("/v1/safety/lost-reports", owner, lostReport))).id);
}
async function openFoundReport(owner: string): Promise<string> {
  const body = { animal: { species: "cat" }, foundAt: "2025-11-20T09:00:00Z", location: { lat: 48.86, lon: 2.35 } };
  return String((await ok(post("/v1/safety/found-reports", owner, body))).id);
}
async function animalWithProfile(owner: string): Promise<{ animalId: string; token: string }> {
  const animalId = String((await ok(post("/v1/animals", owner, { name: "Rex", species: "dog" }))).id);
  const { token } = await ok(put(`/v1/animals/${animalId}/emergency-profile`, owner, { showName: true }));
  return { animalId, token: String(token) };
}
const scheduledJob = async () =>
  (await h.pool.query<{ id: string }>(`select id::text from graphile_worker.add_job('injection__probe', '{}'::json, run_at => now() + interval '1 day')`))
    .rows[0]!.id;

const auditMetadata = async (objectId: string, action: string) => {
  const page = await ok(get(`/v1/admin/audit-events?objectId=${objectId}&action=${action}`, "auditor", [PLATFORM_ADMIN]));
  return (page.items as { metadata: unknown }[])[0]?.metadata;
};

/**
 * For each create operation with free-text fields: the rows it needs (made
 * first, so their writes are not the request's), how to send the body, and
 * where the API shows the stored values again.
 */
interface Prepared {
  send(body: Record<string, unknown>): Promise<LightMyRequestResponse>;
  read(res: LightMyRequestResponse): Promise<unknown>;
}
type Case = () => Promise<Prepared>;

const asAdmin = (url: string, payload?: unknown) => post(url, "inj-admin", payload, [PLATFORM_ADMIN]);
const readAsAdmin = (url: string) => ok(get(url, "inj-admin", [PLATFORM_ADMIN]));

/** A new shelter partner through the admin API, logged in through the partner API: its id and its calls' headers. */
async function partnerSession(): Promise<{ id: string; headers: Record<string, string> }> {
  const loginEmail = `${fresh("inj-partner")}@shelter.example`;
  const made = await ok(
    asAdmin("/v1/admin/partners", { name: "Injection Shelter", kind: "shelter", location: { lat: 48.85, lon: 2.35 }, publicContact: {}, loginEmail, dateFormat: "MM/DD/YYYY" }),
  );
  const login = await ok(h.call({ method: "POST", url: "/partners/v2/auth/login", headers: { "x-api-key": PARTNER_KEY }, payload: { email: loginEmail, password: made.password } }));
  return { id: String(made.id), headers: { "x-api-key": PARTNER_KEY, authorization: `Bearer ${String(login.accessToken)}` } };
}
const adminPartner = async () => String((await partnerSession()).id);
let editedPartner: Promise<string> | undefined;
let editingSession: ReturnType<typeof partnerSession> | undefined;

const cases: Record<string, Case> = {
  // Shelter partners: the admin resource, and the animals a partner publishes (read back from the row: the partner's own
  // fields such as the name and size are kept for it, not shown by any route).
  "POST /v1/admin/partners": async () => ({
    send: (body) => asAdmin("/v1/admin/partners", { ...body, loginEmail: `${fresh("inj-partner")}@shelter.example` }),
    read: async (res) => ((await readAsAdmin("/v1/admin/partners?limit=200")).items as { id: string }[]).find((p) => p.id === res.json().id),
  }),
  "POST /v1/admin/partners/{id}/suspend": async () => {
    const id = await adminPartner();
    return { send: (body) => asAdmin(`/v1/admin/partners/${id}/suspend`, body), read: () => auditMetadata(id, "admin.partner.suspended") };
  },
  "POST /v1/admin/partners/{id}/restore": async () => {
    const id = await adminPartner();
    await ok(asAdmin(`/v1/admin/partners/${id}/suspend`, { reasonCode: "spam", reasonDetail: "x" }));
    return { send: (body) => asAdmin(`/v1/admin/partners/${id}/restore`, body), read: () => auditMetadata(id, "admin.partner.restored") };
  },
  "POST /partners/v2/animals": async () => {
    const { headers } = await partnerSession();
    return {
      send: (body) => h.call({ method: "POST", url: "/partners/v2/animals", headers, payload: { ...body, intakeDate: "11/20/2025", birthDate: "" } }),
      read: async (res) =>
        (await h.pool.query(`select partner_external_id as "externalId", breed, description, partner_animal as animal from safety_found_report where id = $1::uuid`, [res.json().id])).rows[0],
    };
  },

  // One partner for every edit, each read back before the next: a partner costs two scrypt hashes to make.
  "PATCH /v1/admin/partners/{id}": async () => {
    const id = await (editedPartner ??= adminPartner());
    return {
      send: (body) => h.call({ method: "PATCH", url: `/v1/admin/partners/${id}`, headers: as("inj-admin", [PLATFORM_ADMIN]), payload: body }),
      read: async () => ((await readAsAdmin("/v1/admin/partners?limit=200")).items as { id: string }[]).find((p) => p.id === id),
    };
  },
  "PATCH /partners/v2/animals/{id}": async () => {
    const { headers } = await (editingSession ??= partnerSession());
    const created = await ok(
      h.call({ method: "POST", url: "/partners/v2/animals", headers, payload: { externalId: fresh("inj-animal"), species: "dog", status: "found", intakeDate: "11/20/2025" } }),
    );
    return {
      send: (body) =>
        h.call({ method: "PATCH", url: `/partners/v2/animals/${String(created.id)}`, headers, payload: { ...body, intakeDate: "11/20/2025", birthDate: "" } }),
      read: async () =>
        (await h.pool.query(`select partner_external_id as "externalId", breed, description, partner_animal as animal from safety_found_report where id = $1::uuid`, [created.id])).rows[0],
    };
  },

  "POST /v1/safety/lost-reports": async () => {
    const owner = fresh("inj-owner");
    return {
      send: (body) => post("/v1/safety/lost-reports", owner, body),
      read: (res) => ok(get(`/v1/safety/lost-reports/${res.json().id}/private`, owner)),
    };
  },
  "POST /v1/safety/found-reports": async () => ({
    send: (body) => post("/v1/safety/found-reports", fresh("inj-finder"), body),
    read: (res) => ok(get(`/v1/safety/found-reports/${res.json().id}`, null)),
  }),
  "POST /v1/safety/lost-reports/{id}/flag": async () => {
    const owner = fresh("inj-owner");
    const id = await openReport(owner);
    return {
      send: (body) => post(`/v1/safety/lost-reports/${id}/flag`, fresh("inj-flagger"), body),
      read: () => ok(get(`/v1/safety/lost-reports/${id}/private`, owner)),
    };
  },
  "POST /v1/safety/lost-reports/{id}/relay-message": async () => {
    const id = await openReport(fresh("inj-owner"));
    return {
      send: (body) => post(`/v1/safety/lost-reports/${id}/relay-message`, null, body),
      // No API route reads a contact message back (its owner gets it as a notification): the stored row is compared.
      read: async (res) =>
        (await h.pool.query(`select message, from_contact as "fromContact" from safety_relay_message where id = $1::uuid`, [res.json().id])).rows[0],
    };
  },
  "POST /v1/safety/found-reports/{id}/relay-message": async () => {
    const id = await openFoundReport(fresh("inj-finder"));
    return {
      send: (body) => post(`/v1/safety/found-reports/${id}/relay-message`, null, body),
      read: async (res) =>
        (await h.pool.query(`select message, from_contact as "fromContact" from safety_relay_message where id = $1::uuid`, [res.json().id])).rows[0],
    };
  },
  "PATCH /v1/safety/lost-reports/{id}": async () => {
    const owner = fresh("inj-owner");
    const id = await openReport(owner);
    return {
      // A correction stays near the report (the example's point is thousands of km away, which PATCH refuses).
      send: (body) => h.call({ method: "PATCH", url: `/v1/safety/lost-reports/${id}`, headers: as(owner), payload: { ...body, location: { lat: 48.86, lon: 2.35 } } }),
      read: () => ok(get(`/v1/safety/lost-reports/${id}/private`, owner)),
    };
  },
  "PATCH /v1/safety/found-reports/{id}": async () => {
    const owner = fresh("inj-finder");
    const id = await openFoundReport(owner);
    return {
      send: (body) => h.call({ method: "PATCH", url: `/v1/safety/found-reports/${id}`, headers: as(owner), payload: { ...body, location: { lat: 48.86, lon: 2.35 } } }),
      read: () => ok(get(`/v1/safety/found-reports/${id}`, null)),
    };
  },
  "POST /v1/animals/{id}/lost": async () => {
    const owner = fresh("inj-owner");
    const animalId = String((await ok(post("/v1/animals", owner, { name: "Rex", species: "dog" }))).id);
    return {
      send: (body) => post(`/v1/animals/${animalId}/lost`, owner, body),
      read: (res) => ok(get(`/v1/safety/lost-reports/${res.json().id}/private`, owner)),
    };
  },
  "POST /v1/safety/sightings": async () => {
    const owner = fresh("inj-owner");
    const id = await openReport(owner);
    return {
      send: (body) => post("/v1/safety/sightings", fresh("inj-spotter"), { ...body, lostReportId: id }),
      // A stranger's note is public only once the owner has seen it: the owner reads it back.
      read: () => ok(get(`/v1/safety/lost-reports/${id}/sightings`, owner)),
    };
  },
  "POST /v1/admin/accounts/{userId}/suspend": async () => {
    const userId = fresh("inj-user");
    return {
      send: (body) => asAdmin(`/v1/admin/accounts/${userId}/suspend`, body),
      read: () => readAsAdmin(`/v1/admin/accounts/${userId}`),
    };
  },
  "POST /v1/admin/accounts/{userId}/restore": async () => {
    const userId = fresh("inj-user");
    await ok(asAdmin(`/v1/admin/accounts/${userId}/suspend`, { reasonCode: "spam", reasonDetail: "x" }));
    return {
      send: (body) => asAdmin(`/v1/admin/accounts/${userId}/restore`, body),
      read: () => readAsAdmin(`/v1/admin/accounts/${userId}`),
    };
  },
  "POST /v1/admin/animals/{animalId}/emergency-profile/revoke": async () => {
    const { animalId } = await animalWithProfile(fresh("inj-owner"));
    return {
      send: (body) => asAdmin(`/v1/admin/animals/${animalId}/emergency-profile/revoke`, body),
      read: () => auditMetadata(animalId, "admin.emergency_profile.revoked"),
    };
  },
  "POST /v1/admin/animals/{animalId}/emergency-profile/lift-revocation": async () => {
    const { animalId } = await animalWithProfile(fresh("inj-owner"));
    await ok(asAdmin(`/v1/admin/animals/${animalId}/emergency-profile/revoke`, { reason: "token posted on a scam page" }));
    return {
      send: (body) => asAdmin(`/v1/admin/animals/${animalId}/emergency-profile/lift-revocation`, body),
      read: () => auditMetadata(animalId, "admin.emergency_profile.revocation_lifted"),
    };
  },
  // A graphile-worker job due tomorrow (scheduled): both actions take it; the reason is read back from the audit event.
  "POST /v1/admin/jobs/{id}/retry": async () => {
    const id = await scheduledJob();
    return { send: (body) => asAdmin(`/v1/admin/jobs/${id}/retry`, body), read: () => auditMetadata(id, "admin.job.retried") };
  },
  "POST /v1/admin/jobs/{id}/fail": async () => {
    const id = await scheduledJob();
    return { send: (body) => asAdmin(`/v1/admin/jobs/${id}/fail`, body), read: () => auditMetadata(id, "admin.job.failed") };
  },
  "POST /v1/admin/moderation/{id}/action": async () => {
    const target = await openReport(fresh("inj-owner"));
    const { id } = await ok(post("/v1/moderation/reports", fresh("inj-reporter"), { targetType: "lost_report", targetId: target, reason: "spam" }));
    await ok(asAdmin(`/v1/admin/moderation/${id}/claim`));
    return {
      send: (body) => asAdmin(`/v1/admin/moderation/${id}/action`, { ...body, action: "dismiss" }),
      read: () => auditMetadata(String(id), "admin.moderation.actioned"),
    };
  },
  "POST /v1/animals": async () => {
    const owner = fresh("inj-owner");
    return {
      send: (body) => post("/v1/animals", owner, body),
      read: (res) => ok(get(`/v1/animals/${res.json().id}`, owner)),
    };
  },
  "PUT /v1/animals/{id}/emergency-profile": async () => {
    const owner = fresh("inj-owner");
    const animalId = String((await ok(post("/v1/animals", owner, { name: "Rex", species: "dog" }))).id);
    return {
      send: (body) => put(`/v1/animals/${animalId}/emergency-profile`, owner, body),
      read: (res) => ok(get(`/emergency/${res.json().token}`, null)),
    };
  },
  "POST /v1/moderation/reports": async () => {
    const target = await openReport(fresh("inj-owner"));
    return {
      send: (body) => post("/v1/moderation/reports", fresh("inj-reporter"), { ...body, targetType: "lost_report", targetId: target }),
      read: async (res) => {
        const queue = await readAsAdmin("/v1/admin/moderation/queue?status=open&limit=200");
        return (queue.items as { id: string }[]).find((item) => item.id === res.json().id);
      },
    };
  },
};

/** Free text: a string with no enum, format or pattern (those are refused by their own rules, tested by the fuzzer). */
function freeTextPaths(schema: JsonSchema): { path: string[]; array: boolean }[] {
  return propertyPaths(schema).flatMap(({ path, schema: s }) => {
    const field = nonNull(s);
    const leaf = field.type === "array" ? nonNull(field.items ?? {}) : field;
    if (leaf.type !== "string" || leaf.enum || leaf.format || leaf.pattern) return [];
    return [{ path, array: field.type === "array" }];
  });
}

const bodyOps = () => operations.filter((op) => op.body && freeTextPaths(op.body).length > 0);

/** A body whose every free-text field holds `value`, prefixed with the field's name so each is found on its own. */
function bodyWith(op: Operation, value: (field: string) => string): { body: Record<string, unknown>; sent: string[] } {
  let body = exampleFor(op.body!) as Record<string, unknown>;
  const sent: string[] = [];
  for (const { path, array } of freeTextPaths(op.body!)) {
    const text = value(path.at(-1)!);
    sent.push(text);
    body = withProperty(body, path, array ? [text] : text) as Record<string, unknown>;
  }
  return { body, sent };
}

/** Every string anywhere in a JSON value. */
function stringsIn(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (value && typeof value === "object") return Object.values(value).flatMap(stringsIn);
  return [];
}

describe("SQL metacharacters and Unicode edge cases in every free-text field are stored and returned verbatim", () => {
  it("has a read-back for every create operation that takes free text", () => {
    expect(bodyOps().length).toBeGreaterThan(8);
    expect(bodyOps().map((op) => `${op.method} ${op.path}`).filter((key) => !cases[key])).toEqual([]);
  });

  it("returns each payload exactly as sent, through the API's own read routes", async () => {
    const mismatches: string[] = [];
    let stored = 0;
    for (const op of bodyOps()) {
      for (const [label, payload] of PAYLOADS) {
        // Colours are at most 40 characters: tags stay short.
        const { body, sent } = bodyWith(op, (field) => `${field.slice(0, 3)}|${payload}`.slice(0, 40));
        const prepared = await cases[`${op.method} ${op.path}`]!();
        const res = await prepared.send(body);
        if (res.statusCode >= 300) {
          mismatches.push(`${op.method} ${op.path} [${label}]: ${res.statusCode} ${res.body.slice(0, 200)}`);
          continue;
        }
        const shown = stringsIn(await prepared.read(res));
        for (const value of sent) {
          stored++;
          if (!shown.includes(value)) mismatches.push(`${op.method} ${op.path} [${label}]: ${JSON.stringify(value)} not returned verbatim`);
        }
      }
    }
    console.log(`injection: ${bodyOps().length} create operations × ${PAYLOADS.length} payloads; ${stored} field values read back`);
    expect(mismatches).toEqual([]);
  });

  it("matches audit filters exactly: LIKE wildcards and quotes in a filter match only themselves", async () => {
    await ok(asAdmin(`/v1/admin/accounts/${fresh("inj-user")}/suspend`, { reasonCode: "spam", reasonDetail: "x" }));
    const byActor = async (actorId: string) =>
      (await readAsAdmin(`/v1/admin/audit-events?actorId=${encodeURIComponent(actorId)}`)).items as unknown[];
    expect((await byActor("inj-admin")).length).toBeGreaterThan(0);
    // Each of these would match "inj-admin" under LIKE or string-built SQL.
    for (const filter of ["%", "_%", "inj-admin%", "inj_admin", "' or '1'='1", "inj-admin' --", "inj-admin\\"]) {
      expect(await byActor(filter), filter).toEqual([]);
    }
  });
});

describe("NUL (\\u0000), which Postgres text cannot hold, is refused with a clean 400 and nothing is written", () => {
  it("answers 400 validation-failed for a NUL in any free-text field of any create operation", async () => {
    const failures: string[] = [];
    let sent = 0;
    for (const op of bodyOps()) {
      for (const { path, array } of freeTextPaths(op.body!)) {
        const { body } = bodyWith(op, () => "fine text");
        const prepared = await cases[`${op.method} ${op.path}`]!();
        await writes.takeNew();
        const res = await prepared.send(withProperty(body, path, array ? ["a\u0000b"] : "a\u0000b") as Record<string, unknown>);
        const written = await writes.takeNew();
        sent++;
        const where = `${op.method} ${op.path} ${path.join(".")}`;
        if (res.statusCode !== 400 || slugOf(res) !== "validation-failed") failures.push(`${where}: ${res.statusCode} ${res.body.slice(0, 200)}`);
        if (written.length > 0) failures.push(`${where} wrote ${written.join(", ")}`);
      }
    }
    console.log(`injection: ${sent} requests with a NUL in one field`);
    expect(failures).toEqual([]);
  });

  it("refuses a NUL that would reach only a jsonb column (the reason of a second revoke goes only to the audit log)", async () => {
    const { animalId } = await animalWithProfile(fresh("inj-owner"));
    const url = `/v1/admin/animals/${animalId}/emergency-profile/revoke`;
    expect((await asAdmin(url, { reason: "lost tag" })).statusCode).toBe(204);
    await writes.takeNew();
    const res = await asAdmin(url, { reason: "again\u0000" });
    expect(res.statusCode, res.body).toBe(400);
    expect(slugOf(res)).toBe("validation-failed");
    expect(await writes.takeNew()).toEqual([]);
  });
});
