/**
 * Reads the app's own /openapi.json and turns each operation into valid
 * examples and hostile variants. Only the subset of JSON Schema our zod
 * schemas produce is understood; anything else is treated as "any value".
 */

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  default?: unknown;
  $ref?: string;
}

export interface Parameter {
  in: "path" | "query" | "header";
  name: string;
  required?: boolean;
  schema: JsonSchema;
}

export interface Operation {
  method: string;
  /** OpenAPI form: /v1/x/{id}. */
  path: string;
  parameters: Parameter[];
  body: JsonSchema | null;
}

/** Every `$ref` replaced by the schema it points at (the document has no recursive schemas). */
export function resolveRefs<T>(node: T, root: unknown, depth = 0): T {
  if (depth > 50) throw new Error("$ref nesting too deep");
  if (Array.isArray(node)) return node.map((n) => resolveRefs(n, root, depth + 1)) as T;
  if (node === null || typeof node !== "object") return node;
  const ref = (node as { $ref?: unknown }).$ref;
  if (typeof ref === "string") {
    const target = ref
      .replace(/^#\//, "")
      .split("/")
      .reduce<unknown>((at, key) => (at as Record<string, unknown>)[key], root);
    if (target === undefined) throw new Error(`unresolved ${ref}`);
    return resolveRefs(target as T, root, depth + 1);
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, resolveRefs(v, root, depth + 1)])) as T;
}

/** The operations of an OpenAPI document, $refs resolved. */
export function operationsOf(document: { paths: Record<string, Record<string, unknown>> }): Operation[] {
  const resolved = resolveRefs(document, document);
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(resolved.paths)) {
    for (const [method, raw] of Object.entries(methods)) {
      const op = raw as { parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema: JsonSchema }> } };
      operations.push({
        method: method.toUpperCase(),
        path,
        parameters: op.parameters ?? [],
        body: op.requestBody?.content?.["application/json"]?.schema ?? null,
      });
    }
  }
  return operations;
}

const typeOf = (schema: JsonSchema): string | undefined => {
  if (Array.isArray(schema.type)) return schema.type.find((t) => t !== "null");
  if (schema.type) return schema.type;
  if (schema.properties) return "object";
  if (schema.enum) return typeof schema.enum[0];
  return undefined;
};

/** A schema's non-null alternative, for anyOf [X, null]. */
export function nonNull(schema: JsonSchema): JsonSchema {
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (!alternatives) return schema;
  return alternatives.find((s) => s.type !== "null") ?? alternatives[0]!;
}

// Strings tried, in order, against a pattern that has no format to go by.
const PATTERN_CANDIDATES = ["abcde", "CHIP-12345", "fuzz_reason", "fuzz-user-1", "someone@example.com", "5m", "1h", "2025-01-01", "123456"];

/** A string the schema accepts. */
function exampleString(schema: JsonSchema, name: string): string {
  if (schema.enum) return String(schema.enum[0]);
  switch (schema.format) {
    case "date-time":
      // "When did it happen" fields must be past, expiries future.
      return /expire/i.test(name) ? "2099-01-01T00:00:00Z" : "2025-01-01T00:00:00Z";
    case "uuid":
      return crypto.randomUUID();
    case "email":
      return "someone@example.com";
  }
  if (schema.pattern) {
    const pattern = new RegExp(schema.pattern);
    const found = PATTERN_CANDIDATES.find((c) => pattern.test(c));
    if (!found) throw new Error(`no example for ${name} /${schema.pattern}/`);
    return found;
  }
  const base = `fuzz ${name}`;
  return base.slice(0, schema.maxLength ?? base.length).padEnd(schema.minLength ?? 1, "x");
}

/** A value the schema accepts, with every optional property present so each can be mutated. */
export function exampleFor(schema: JsonSchema, name = "value"): unknown {
  const s = nonNull(schema);
  if (s.default !== undefined) return s.default;
  switch (typeOf(s)) {
    case "object":
      return Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, exampleFor(v, k)]));
    case "array":
      return Array.from({ length: Math.max(1, s.minItems ?? 0) }, () => exampleFor(s.items ?? {}, name));
    case "string":
      return exampleString(s, name);
    case "integer":
      return Math.max(s.minimum ?? 1, Math.min(1, s.maximum ?? 1));
    case "number":
      return Math.max(s.minimum ?? 1, Math.min(1, s.maximum ?? 1));
    case "boolean":
      return true;
    default:
      return "fuzz";
  }
}

/** The body mutations of one property: [label, value | DELETE]. */
export const DELETE = Symbol("delete");
type Mutation = [string, unknown];

const WRONG_TYPES: Record<string, unknown> = {
  number: 12345,
  string: "a string",
  boolean: true,
  null: null,
  array: ["x"],
  object: { nested: "x" },
};

function nested(depth: number): unknown {
  let value: unknown = [];
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/** Hostile and boundary values for one property of the given schema. */
export function mutationsFor(schema: JsonSchema, required: boolean): Mutation[] {
  const s = nonNull(schema);
  const type = typeOf(s);
  const out: Mutation[] = [];
  for (const [label, value] of Object.entries(WRONG_TYPES)) {
    const jsType = label === "integer" ? "number" : label;
    if (jsType !== (type === "integer" ? "number" : type)) out.push([`wrong type ${label}`, value]);
  }
  if (required) out.push(["missing", DELETE]);
  out.push(["deeply nested", nested(2000)]);
  switch (type) {
    case "string":
      out.push(
        ["empty", ""],
        ["blank", "   "],
        ["over maxLength", "x".repeat((s.maxLength ?? 5000) + 1)],
        ["huge (60 kB)", "y".repeat(60_000)],
        ["NUL", "a\u0000b"],
        ["lone surrogate", "a\ud800b"],
        ["RTL override", "\u202egnp.exe"],
        ["SQL", "'; drop table account; --"],
        ["number-like", "1e308"],
        ["not in enum or pattern", "%not valid%"],
      );
      if (s.format === "date-time" || s.pattern?.includes("T(?:")) {
        out.push(
          ["date without time", "2025-01-01"],
          ["impossible date", "2025-02-30T00:00:00Z"],
          ["year 0000", "0000-01-01T00:00:00Z"],
          ["far future", "9999-12-31T23:59:59Z"],
          ["offset overflow", "2025-01-01T00:00:00+24:00"],
        );
      }
      if (s.format === "uuid") out.push(["not a uuid", "1234"], ["nil uuid", "00000000-0000-0000-0000-000000000000"]);
      break;
    case "integer":
    case "number":
      out.push(
        ["negative zero", -0],
        ["1e308", 1e308],
        ["-1e308", -1e308],
        ["below minimum", (s.minimum ?? s.exclusiveMinimum ?? 0) - 1],
        ["above maximum", (s.maximum ?? s.exclusiveMaximum ?? 1e9) + 1],
        ["fraction", 1.5],
        ["beyond 2^53", 2 ** 53 + 1],
        ["NaN as string", "NaN"],
        ["Infinity as string", "Infinity"],
        ["numeric string", "1"],
      );
      break;
    case "array":
      out.push(
        ["huge array", Array.from({ length: 5000 }, () => "a")],
        ["array of nulls", [null, null]],
        ["array of objects", [{ a: 1 }]],
        ["over maxItems", Array.from({ length: (s.maxItems ?? 100) + 1 }, () => "b")],
      );
      break;
    case "object":
      out.push(["empty object", {}], ["prototype pollution", JSON.parse('{"__proto__": {"polluted": true}}')]);
      break;
    case "boolean":
      out.push(["string true", "true"], ["number 1", 1]);
      break;
  }
  return out;
}

/** Every property path of a body schema with its schema and whether it is required. */
export function propertyPaths(schema: JsonSchema, prefix: string[] = []): { path: string[]; schema: JsonSchema; required: boolean }[] {
  const s = nonNull(schema);
  const out: { path: string[]; schema: JsonSchema; required: boolean }[] = [];
  for (const [key, child] of Object.entries(s.properties ?? {})) {
    const path = [...prefix, key];
    out.push({ path, schema: child, required: (s.required ?? []).includes(key) });
    if (typeOf(nonNull(child)) === "object") out.push(...propertyPaths(child, path));
  }
  return out;
}

/** A copy of value with the property at path set (or deleted). */
export function withProperty(value: unknown, path: string[], replacement: unknown): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  let at = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string, unknown>;
  const last = path.at(-1)!;
  if (replacement === DELETE) delete at[last];
  else Object.defineProperty(at, last, { value: replacement, enumerable: true, writable: true, configurable: true });
  return copy;
}
