import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { beforeAll, describe, expect, it } from "vitest";
import { PLATFORM_ADMIN } from "../../api/plugins/auth.js";
import { as } from "../helpers/app.js";
import { fillPath, findLeak, OWNER, problemShapeError, seedWorld, useAbuseHarness, WriteLog, type World } from "./harness.js";
import { exampleFor, mutationsFor, operationsOf, propertyPaths, withProperty, type Operation } from "./openapi.js";

const h = useAbuseHarness();
let world: World;
let writes: WriteLog;
let operations: Operation[];

beforeAll(async () => {
  world = await seedWorld(h);
  writes = await WriteLog.install(h.pool);
  const res = await h.call({ url: "/openapi.json" });
  operations = operationsOf(res.json());
});

interface FuzzRequest {
  label: string;
  method: string;
  url: string;
  /** A raw string is sent as is; anything else as JSON. */
  payload?: unknown;
  contentType?: string | null;
}

const PATH_VALUES: [string, string][] = [
  ["not a uuid", "not-a-uuid"],
  ["10 kB", "x".repeat(10_240)],
  ["unicode", encodeURIComponent("😀🐕‍🦺\u202e")],
  ["traversal", "..%2F..%2Fetc%2Fpasswd"],
  ["encoded dots", "%2e%2e%2f%2e%2e"],
  ["NUL", "%00"],
  ["NUL after uuid", `${crypto.randomUUID()}%00`],
  ["SQL", encodeURIComponent("' or 1=1 --")],
  ["broken percent-encoding", "%E0%A4%A"],
  ["nil uuid", "00000000-0000-0000-0000-000000000000"],
  ["upper-case unknown uuid", crypto.randomUUID().toUpperCase()],
  ["uuid with braces", `{${crypto.randomUUID()}}`],
];

const QUERY_VALUES: [string, string][] = [
  ["letters", "abc"],
  ["negative", "-1"],
  ["zero", "0"],
  ["1e308", "1e308"],
  ["NaN", "NaN"],
  ["Infinity", "Infinity"],
  ["hex", "0x10"],
  ["empty", ""],
  ["NUL", "\u0000"],
  ["10 kB", "q".repeat(10_240)],
  ["emoji", "😀"],
  ["SQL", "' or 1=1; --"],
  ["JSON", '{"$gt":""}'],
  ["date garbage", "2025-02-30T25:61:00Z"],
  ["year 0000", "0000-01-01T00:00:00Z"],
  ["40 digits", "9".repeat(40)],
  ["huge duration", "9999999d"],
  ["negative duration", "-5m"],
  ["ISO 8601 duration", "PT5M"],
];

const cursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
/** Well-formed cursors (base64url JSON) holding keys the server never issued. */
const CURSORS: [string, string][] = [
  ["cursor of an empty object", cursor({})],
  ["cursor with an infinite time", cursor({ at: "infinity", id: crypto.randomUUID() })],
  ["cursor in year 0000", cursor({ at: "0000-01-01T00:00:00Z", id: crypto.randomUUID() })],
  ["cursor in year 294277", cursor({ at: "294277-01-01T00:00:00Z", id: crypto.randomUUID() })],
  ["cursor with a garbage time", cursor({ at: "yesterday'--", id: crypto.randomUUID() })],
  ["cursor with a non-uuid id", cursor({ at: "2025-01-01T00:00:00Z", d: 1, id: "1 or 1=1" })],
  ["cursor with a huge distance", cursor({ d: 1e308, id: crypto.randomUUID() })],
  ["cursor with a negative distance", cursor({ d: -1, id: crypto.randomUUID() })],
  ["cursor with a string distance", cursor({ d: "1; drop table x", id: crypto.randomUUID() })],
  ["cursor that is an array", cursor([1, 2, 3])],
  ["cursor with __proto__", Buffer.from('{"__proto__":{"at":"x"},"id":"y"}').toString("base64url")],
  ["cursor of invalid JSON", Buffer.from("{not json").toString("base64url")],
];

const RAW_BODIES: [string, string, string | null][] = [
  ["invalid JSON: open brace", "{", "application/json"],
  ["invalid JSON: missing value", '{"a":}', "application/json"],
  ["invalid JSON: single quotes", "{'a':1}", "application/json"],
  ["invalid JSON: NaN", "NaN", "application/json"],
  ["invalid JSON: trailing garbage", '{"a":1} trailing', "application/json"],
  ["invalid JSON: NUL byte", "\u0000", "application/json"],
  ["invalid JSON: BOM", '\ufeff{"a":1}', "application/json"],
  ["empty body", "", "application/json"],
  ["JSON null", "null", "application/json"],
  ["JSON array", "[]", "application/json"],
  ["JSON string", '"a string"', "application/json"],
  ["JSON number", "12345", "application/json"],
  ["JSON true", "true", "application/json"],
  ["__proto__ key", '{"__proto__":{"polluted":true}}', "application/json"],
  ["constructor.prototype key", '{"constructor":{"prototype":{"polluted":true}}}', "application/json"],
  ["deep nesting (20,000 arrays)", `${"[".repeat(20_000)}${"]".repeat(20_000)}`, "application/json"],
  ["deep nesting in an object with __proto__", `{"__proto__":${"[".repeat(20_000)}${"]".repeat(20_000)}}`, "application/json"],
  ["text/plain", '{"a":1}', "text/plain"],
  ["form-urlencoded", "a=1&b=2", "application/x-www-form-urlencoded"],
  ["multipart", "--x\r\ncontent-disposition: form-data; name=a\r\n\r\n1\r\n--x--", "multipart/form-data; boundary=x"],
  ["xml", "<a>1</a>", "application/xml"],
  ["json with utf-16 charset", '{"a":1}', "application/json; charset=utf-16"],
  ["json-patch media type", "[]", "application/json-patch+json"],
  ["garbage media type", '{"a":1}', "application/;;;"],
  ["no content type", '{"a":1}', null],
];

function withQuery(url: string, query: [string, string][]): string {
  if (query.length === 0) return url;
  return `${url}?${query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")}`;
}

/** The required query parameters with valid values. */
const validQueryOf = (op: Operation): [string, string][] =>
  op.parameters.filter((p) => p.in === "query" && p.required).map((p) => [p.name, String(exampleFor(p.schema, p.name))]);

/** The operation's URL: seeded ids in the path (or overrides), and the given (by default valid) query. */
const urlFor = (op: Operation, override?: (param: string) => string | undefined, query = validQueryOf(op)) =>
  withQuery(fillPath(world, op.path, override), query);

/** Every hostile request for one operation: path, query and body variants around a valid baseline. */
function requestsFor(op: Operation): FuzzRequest[] {
  const pathParams = op.parameters.filter((p) => p.in === "path");
  const queryParams = op.parameters.filter((p) => p.in === "query");
  const validQuery = validQueryOf(op);
  const url = (override?: (param: string) => string | undefined, query = validQuery) => urlFor(op, override, query);
  const out: FuzzRequest[] = [];
  const body = op.body ? exampleFor(op.body) : undefined;

  for (const param of pathParams) {
    for (const [label, value] of PATH_VALUES) {
      out.push({ label: `path ${param.name}: ${label}`, method: op.method, url: url((p) => (p === param.name ? value : undefined)), payload: body });
    }
  }
  for (const param of queryParams) {
    const rest = validQuery.filter(([k]) => k !== param.name);
    for (const [label, value] of param.name === "cursor" ? [...QUERY_VALUES, ...CURSORS] : QUERY_VALUES) {
      out.push({ label: `query ${param.name}: ${label}`, method: op.method, url: url(undefined, [...rest, [param.name, value]]) });
    }
    const { minimum, maximum } = param.schema;
    if (minimum !== undefined) out.push({ label: `query ${param.name}: below minimum`, method: op.method, url: url(undefined, [...rest, [param.name, String(minimum - 1)]]) });
    if (maximum !== undefined) out.push({ label: `query ${param.name}: above maximum`, method: op.method, url: url(undefined, [...rest, [param.name, String(maximum + 1)]]) });
    out.push({ label: `query ${param.name}: repeated`, method: op.method, url: url(undefined, [...rest, [param.name, "1"], [param.name, "2"]]) });
    if (param.required) out.push({ label: `query ${param.name}: missing`, method: op.method, url: url(undefined, rest) });
  }
  if (queryParams.length > 0) {
    out.push({ label: "query: unknown and prototype keys", method: op.method, url: url(undefined, [...validQuery, ["__proto__", "x"], ["constructor", "y"], ["zzz", "1"]]) });
  }

  if (op.body && body !== undefined) {
    for (const { path, schema, required } of propertyPaths(op.body)) {
      for (const [label, value] of mutationsFor(schema, required)) {
        out.push({ label: `body ${path.join(".")}: ${label}`, method: op.method, url: url(), payload: withProperty(body, path, value) });
      }
    }
    out.push({ label: "body: extra properties", method: op.method, url: url(), payload: { ...(body as object), extra: "x", isAdmin: true, reporterId: "someone-else" } });
  }
  // Every operation gets the malformed bodies, those without a body schema included.
  for (const [label, raw, contentType] of RAW_BODIES) {
    out.push({ label: `raw body: ${label}`, method: op.method, url: url(), payload: raw, contentType });
  }
  return out;
}

let creators = 0;
/**
 * The admin caller acts as the owner of the seeded rows, so owner-only routes
 * run past their ownership check; report creation, throttled per actor, gets a
 * fresh admin each time so valid variants reach the database.
 */
function callerHeaders(caller: "admin" | "anonymous", op: Operation): Record<string, string> {
  if (caller === "anonymous") return {};
  if (/^\/v1\/safety\/(lost|found)-reports$/.test(op.path)) return as(`fuzz-creator-${++creators}`, [PLATFORM_ADMIN]);
  return as(OWNER, [PLATFORM_ADMIN]);
}

/** Hostile credentials and headers, each sent once to every operation with an otherwise valid request. */
const HEADER_VARIANTS: [string, Record<string, string>][] = [
  ["over-long X-Debug-Actor", { "x-debug-actor": "a".repeat(300) }],
  ["X-Debug-Actor with SQL", { "x-debug-actor": "' or 1=1 --" }],
  ["X-Debug-Actor with spaces and slashes", { "x-debug-actor": "../admin user" }],
  ["X-Debug-Roles of 20 kB", { "x-debug-actor": "roles-user", "x-debug-roles": "platform_admin_not,".repeat(1000) }],
  ["bearer token of 10 kB", { authorization: `Bearer ${"a".repeat(10_240)}` }],
  ["bearer token of three empty parts", { authorization: "Bearer .." }],
  ["bare Bearer", { authorization: "Bearer" }],
  ["spoofed X-Forwarded-For", { "x-forwarded-for": "127.0.0.1, ::1", "x-real-ip": "127.0.0.1" }],
  ["Accept of XML only", { accept: "application/xml", "x-debug-actor": OWNER }],
];

/** Checks one response: every rule the fuzzer enforces. Returns what broke. */
function judge(res: LightMyRequestResponse, written: string[], where: string): string[] {
  const failures: string[] = [];
  if (res.statusCode >= 500) failures.push(`${where} ${res.body.slice(0, 300)}`);
  const leak = findLeak(res.body);
  if (leak) failures.push(`${where} leaks ${leak}: ${res.body.slice(0, 300)}`);
  if (res.statusCode >= 400) {
    const shape = problemShapeError(res);
    if (shape) failures.push(`${where} not problem+json (${shape})`);
    if (written.length > 0) failures.push(`${where} wrote ${written.join(", ")}`);
  }
  return failures;
}

describe("the fuzzer's own detectors", () => {
  it("recognise a stack trace, SQL, Postgres error text and a module path, and pass a plain problem body", () => {
    expect(findLeak('{"detail":"TypeError: x\n    at Object.<anonymous> (/srv/api/app.ts:10:5)"}')).not.toBeNull();
    expect(findLeak('{"detail":"select id from account where user_id = $1"}')).toBe("SQL text");
    expect(findLeak('{"detail":"duplicate key value violates unique constraint \"x\""}')).toBe("Postgres error text");
    expect(findLeak('{"detail":"/work/main/node_modules/pg/lib/client.js"}')).not.toBeNull();
    expect(findLeak('{"type":"https://problems.example/validation-failed","title":"Validation failed","status":400,"detail":"body.animal: Invalid input"}')).toBeNull();
  });
});

describe("schema-driven fuzzing of every operation in /openapi.json", () => {
  it("documents every route the app serves, so the fuzzer sees all of them", () => {
    const documented = new Set(operations.map((op) => `${op.method} ${op.path}`));
    const served = h.routes
      .filter((r) => !r.hidden && r.method !== "HEAD")
      .map((r) => `${r.method} ${r.url.replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`);
    expect(served.length).toBeGreaterThan(25);
    expect(served.filter((r) => !documented.has(r))).toEqual([]);
  });

  it("never answers 5xx, never leaks internals, answers every 4xx with problem+json, and a rejected request writes no row", async () => {
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let sent = 0;
    let acceptedWrites = 0;
    // Rows the seeding wrote are not the fuzzer's.
    await writes.takeNew();
    for (const op of operations) {
      for (const request of requestsFor(op)) {
        for (const caller of ["admin", "anonymous"] as const) {
          const options: InjectOptions = { method: request.method as InjectOptions["method"], url: request.url, headers: callerHeaders(caller, op) };
          if (request.payload !== undefined) {
            options.payload = typeof request.payload === "string" ? request.payload : JSON.stringify(request.payload);
            if (request.contentType !== null) options.headers!["content-type"] = request.contentType ?? "application/json";
          }
          const res = await h.call(options);
          sent++;
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          const written = await writes.takeNew();
          if (res.statusCode < 300) acceptedWrites += written.length;
          failures.push(...judge(res, written, `${request.method} ${op.path} [${request.label}] as ${caller}: ${res.statusCode}`));
        }
      }
      for (const [label, headers] of HEADER_VARIANTS) {
        const res = await h.call({ method: op.method as InjectOptions["method"], url: urlFor(op), headers });
        sent++;
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        failures.push(...judge(res, await writes.takeNew(), `${op.method} ${op.path} [header: ${label}]: ${res.statusCode}`));
      }
    }
    console.log(
      `fuzz: ${operations.length} operations, ${sent} requests as admin and anonymous; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}; ${failures.length} failures`,
    );
    expect(sent).toBeGreaterThan(4000);
    // The write log saw the accepted requests' rows: it would have seen a rejected one's.
    expect(acceptedWrites).toBeGreaterThan(0);
    expect(failures.slice(0, 40)).toEqual([]);
    // Thousands of requests over every operation: on two shared cores this is minutes, not the default 2.
  }, 360_000);
});
