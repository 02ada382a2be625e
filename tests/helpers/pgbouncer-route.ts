import pg from "pg";
import { inject } from "vitest";
import type { Env } from "../../lib/config.js";
import { roleSettingsStatements } from "../../lib/db.js";

/** Set by the `pgbouncer` project (vitest.config.ts): the API's pool goes through the project's pgbouncer. */
export const viaPgBouncer = () => process.env.TEST_VIA_PGBOUNCER === "1";

const given = new Map<string, Promise<void>>();

/**
 * ROLE_SETTINGS for the connecting role in the URL's database, once per
 * database: API processes of a file built at once would otherwise update the
 * same pg_db_role_setting row together ("tuple concurrently updated").
 */
function giveRoleSettings(url: string): Promise<void> {
  let done = given.get(url);
  if (!done) {
    done = (async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query<{ role: string; database: string }>(`select current_user as role, current_database() as database`);
        for (const statement of roleSettingsStatements(rows[0]!.role, rows[0]!.database)) await client.query(statement);
      } finally {
        await client.end();
      }
    })();
    given.set(url, done);
  }
  return done;
}

/**
 * The API's settings behind the project's pgbouncer, as an operator runs it:
 * DATABASE_URL on pgbouncer's port, no named statements, and statement_timeout
 * and jit from the role (in this file's database only: the server is shared).
 * Unchanged outside the `pgbouncer` project.
 */
export async function apiEnvThroughPgBouncer(env: Env): Promise<Env> {
  if (!viaPgBouncer()) return env;
  const port = inject("pgbouncerPort");
  if (!port) throw new Error("TEST_VIA_PGBOUNCER=1 but no pgbouncer was started (tests/setup/pgbouncer.ts): is pgbouncer installed (apt-get install pgbouncer)?");
  const direct = env.DATABASE_URL;
  if (!direct) return env;
  await giveRoleSettings(direct);
  const url = new URL(direct);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return { ...env, DATABASE_URL: url.toString(), DATABASE_NAMED_STATEMENTS: "false", DATABASE_SESSION_SETTINGS: "role" };
}
