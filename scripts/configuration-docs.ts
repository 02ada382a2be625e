/**
 * Renders docs/configuration.md from the zod schemas and rules in lib/config.ts
 * (settingsByProcess): `npm run docs:config` writes it, and
 * tests/foundation/configuration-docs.test.ts fails when the file and the
 * schemas differ.
 */
import { realpathSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { DEFAULT_LISTEN_HOSTS, settingsByProcess, type ProcessSettings } from "../lib/config.js";

export const configurationDocsPath = fileURLToPath(new URL("../docs/configuration.md", import.meta.url));

type Schema = z.core.$ZodType;

const defOf = (schema: Schema) => (schema as z.core.$ZodTypes)._zod.def;

/** The schema that parses what an operator writes: past defaults, optionals, and to the input of a pipe (the output of a preprocess step). */
function inner(schema: Schema): Schema | undefined {
  const def = defOf(schema);
  switch (def.type) {
    case "default":
    case "optional":
    case "nullable":
    case "prefault":
      return def.innerType;
    case "pipe":
      return defOf(def.in).type === "transform" ? def.out : def.in;
    default:
      return undefined;
  }
}

const code = (value: string) => `\`${value}\``;

function describeBase(schema: Schema, setting: string): string {
  const def = defOf(schema);
  const checks = ((def as { checks?: z.core.$ZodCheck[] }).checks ?? []).map((check) => check._zod.def as z.core.$ZodChecks["_zod"]["def"]);
  switch (def.type) {
    case "string": {
      const parts: string[] = [];
      for (const check of checks) {
        if (check.check === "string_format" && check.format === "url") parts.push("URL");
        else if (check.check === "string_format" && check.format === "regex") parts.push(`string matching ${code((check as { pattern?: RegExp }).pattern!.source)}`);
        else if (check.check === "min_length") parts.push(check.minimum === 1 ? "non-empty string" : `string of at least ${check.minimum} characters`);
      }
      return parts.length > 0 ? parts.join(", ") : "string";
    }
    case "number": {
      const integer = checks.some((check) => check.check === "number_format" && /int/.test(check.format));
      const bound = (kind: "greater_than" | "less_than") => {
        const check = checks.find(
          (each): each is z.core.$ZodCheckGreaterThanDef | z.core.$ZodCheckLessThanDef => each.check === kind,
        );
        return check ? { value: String(check.value), inclusive: check.inclusive } : undefined;
      };
      const [low, high] = [bound("greater_than"), bound("less_than")];
      const kind = integer ? "integer" : "number";
      if (low?.inclusive && high?.inclusive) return `${kind} ${low.value}–${high.value}`;
      const limits = [
        ...(low ? [`${low.inclusive ? "≥" : ">"} ${low.value}`] : []),
        ...(high ? [`${high.inclusive ? "≤" : "<"} ${high.value}`] : []),
      ];
      return [kind, ...limits].join(" ");
    }
    case "enum":
      return Object.values(def.entries)
        .map((value) => (value === "" ? "empty" : code(String(value))))
        .join(" | ");
    case "boolean":
      return "boolean";
    default:
      throw new Error(`${setting}: scripts/configuration-docs.ts cannot describe a ${def.type} schema; give it a valueType in lib/config.ts`);
  }
}

/** A `valueType` in the metadata names the type; else the innermost schema's own type does. */
export function settingType(schema: Schema, setting: string): string {
  for (let at: Schema | undefined = schema; at; at = inner(at)) {
    const valueType = z.globalRegistry.get(at)?.valueType;
    if (typeof valueType === "string") return valueType;
    if (inner(at) === undefined) return describeBase(at, setting);
  }
  throw new Error(`${setting}: no schema`);
}

function schemaDefault(schema: Schema): { value: unknown } | undefined {
  for (let at: Schema | undefined = schema; at; at = inner(at)) {
    const def = defOf(at);
    if (def.type === "default" || def.type === "prefault") return { value: def.defaultValue };
  }
  return undefined;
}

function defaultCell(process: ProcessSettings, setting: string, schema: Schema): string {
  const port = process.listenDefaults[setting];
  if (port !== undefined) {
    return `${code(`${DEFAULT_LISTEN_HOSTS.development}:${port}`)} in development, ${code(`${DEFAULT_LISTEN_HOSTS.otherwise}:${port}`)} otherwise`;
  }
  const fallback = process.developmentFallbacks[setting];
  const found = schemaDefault(schema);
  const value =
    found !== undefined ? (found.value === "" ? "empty" : code(String(found.value))) : (schema as z.ZodType).safeParse(undefined).success ? "unset" : "none";
  return fallback === undefined ? value : `${value}; in development ${code(fallback)}`;
}

function requiredCell(process: ProcessSettings, setting: string, schema: Schema): string {
  if (process.requiredOutsideDevelopment.includes(setting)) return "yes";
  if (process.listenDefaults[setting] === undefined && !(schema as z.ZodType).safeParse(undefined).success) return "always";
  if (process.developmentOnly.includes(setting)) return `no; ${code("true")} is refused`;
  return "no";
}

const cell = (text: string) => text.replace(/\s+/g, " ").trim().replace(/\|/g, "\\|");

function renderProcess(process: ProcessSettings): string[] {
  const rows = Object.entries(process.shape).map(([setting, schema]) => {
    const description = z.globalRegistry.get(schema)?.description;
    if (!description) throw new Error(`${setting} (${process.title}): no description; give it .describe() in lib/config.ts`);
    return [
      code(setting),
      settingType(schema, setting),
      defaultCell(process, setting, schema),
      requiredCell(process, setting, schema),
      description,
    ].map(cell);
  });
  const notes = process.allOrNone.map((group) => {
    const names = group.map(code);
    return `Set all of ${names.slice(0, -1).join(", ")} and ${names.at(-1)}, or none of them: some but not all is refused at start.`;
  });
  return [
    `## ${process.title}`,
    "",
    process.runs,
    "",
    "| setting | type | default | required in production | description |",
    "|---|---|---|---|---|",
    ...rows.map((row) => `| ${row.join(" | ")} |`),
    ...(notes.length > 0 ? ["", ...notes] : []),
    "",
  ];
}

export function renderConfigurationDocs(): string {
  const environments = Object.values(settingsByProcess).flatMap((process: ProcessSettings) => (process.environment ? [code(process.environment)] : []));
  return [
    "# Configuration",
    "",
    "<!-- Generated by `npm run docs:config` (scripts/configuration-docs.ts) from lib/config.ts. Do not edit by hand. -->",
    "",
    "This file is generated by `npm run docs:config` from the zod schemas in `lib/config.ts`, and must not be edited by hand:",
    "change the schemas (each setting's `.describe()`) and run the script again.",
    "`tests/foundation/configuration-docs.test.ts` fails when this file and the schemas differ.",
    "",
    "Every process reads its settings from the environment once, at start, and refuses to start on a missing or",
    "malformed one, naming it. A blank value of an optional setting counts as unset.",
    "",
    "The *required in production* column: **always**, no default, so every environment needs it; **yes**, needed",
    `whenever the process's environment (${environments.join(", ")}) is not \`development\` (so in \`test\` as well),`,
    "where an empty list counts as unset; **no**, optional or defaulted. A setting several processes read appears in",
    "each process's table.",
    "",
    ...Object.values(settingsByProcess).flatMap((process) => renderProcess(process as ProcessSettings)),
  ].join("\n");
}

function runAsScript(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (runAsScript()) {
  writeFileSync(configurationDocsPath, renderConfigurationDocs());
  console.log(`wrote ${configurationDocsPath}`);
}
