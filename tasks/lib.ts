import { parseArgs, type ParseArgsConfig } from "node:util";
import pg from "pg";
import { loadDatabaseToolConfig, type DatabaseToolConfig } from "../lib/config.js";

/**
 * Shared by the operator scripts: argument parsing, a dry run unless
 * --execute is given, and one client for one transaction.
 */
export function parseTaskArgs<T extends NonNullable<ParseArgsConfig["options"]>>(usage: string, options: T) {
  try {
    const { values } = parseArgs({ options: { ...options, execute: { type: "boolean", default: false } }, strict: true });
    return values;
  } catch (err) {
    console.error(`${(err as Error).message}\nusage: ${usage}`);
    process.exit(2);
  }
}

export function required(value: unknown, name: string, usage: string): string {
  if (typeof value !== "string" || value.trim() === "") {
    console.error(`--${name} is required\nusage: ${usage}`);
    process.exit(2);
  }
  return value;
}

/** The script's settings, parsed through lib/config.ts; a missing DATABASE_URL is a usage error (exit 2). */
export function loadTaskConfig(env: NodeJS.ProcessEnv = process.env): DatabaseToolConfig {
  try {
    return loadDatabaseToolConfig(env);
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
}

export async function withTaskClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const { DATABASE_URL } = loadTaskConfig();
  const client = new pg.Client({ connectionString: DATABASE_URL, application_name: "operator-task" });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export function print(result: Record<string, unknown>): void {
  console.log(JSON.stringify(result, null, 2));
}
