import { loadConfigOrExit } from "../lib/boot.js";
import { loadDatabaseToolConfig } from "../lib/config.js";
import { exitFatal } from "../lib/logger.js";
import { migrateUp, migrationStatus } from "../lib/migrate.js";

/**
 * The API binary: `api` (or `api serve`) runs the server; `api migrate up`
 * applies migrations; `api migrate status` lists applied and pending ones.
 */
const [command = "serve", sub] = process.argv.slice(2);

if (command === "serve") {
  await import("./main.js");
} else if (command === "migrate" && (sub === "up" || sub === "status")) {
  // A missing DATABASE_URL logs `fatal` naming the setting and exits 1, as for the servers.
  const { config, logger } = loadConfigOrExit("api", loadDatabaseToolConfig);
  try {
    if (sub === "up") {
      const { applied } = await migrateUp(config.DATABASE_URL);
      logger.info({ applied }, applied.length > 0 ? `migrate: applied ${applied.join(", ")}` : "migrate: up to date");
    } else {
      const { applied, pending } = await migrationStatus(config.DATABASE_URL);
      console.log(JSON.stringify({ applied, pending }, null, 2));
    }
  } catch (err) {
    exitFatal(logger, `migrate: ${(err as Error).message}`, err);
  }
} else {
  console.error("usage: api [serve] | api migrate up | api migrate status");
  process.exit(2);
}
