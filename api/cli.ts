import { ConfigError } from "../lib/config.js";
import { createLogger, exitFatal } from "../lib/logger.js";
import { migrateUp, migrationStatus } from "../lib/migrate.js";

/**
 * The API binary: `api` (or `api serve`) runs the server; `api migrate up`
 * applies migrations; `api migrate status` lists applied and pending ones.
 */
const [command = "serve", sub] = process.argv.slice(2);
const logger = createLogger({ name: "api", level: "info", pretty: false });

if (command === "serve") {
  await import("./main.js");
} else if (command === "migrate" && (sub === "up" || sub === "status")) {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) exitFatal(logger, "fatal", new ConfigError("DATABASE_URL", "is required"), { setting: "DATABASE_URL" });
  try {
    if (sub === "up") {
      await migrateUp(databaseUrl);
      logger.info("migrate: up to date");
    } else {
      const { applied, pending } = await migrationStatus(databaseUrl);
      console.log(JSON.stringify({ applied, pending }, null, 2));
    }
  } catch (err) {
    exitFatal(logger, `migrate: ${(err as Error).message}`, err);
  }
} else {
  console.error("usage: api [serve] | api migrate up | api migrate status");
  process.exit(2);
}
