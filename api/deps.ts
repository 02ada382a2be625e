import type { JetStreamClient } from "../lib/bus.js";
import type { ApiConfig } from "../lib/config.js";
import type { Pool } from "../lib/db.js";
import type { PublicReads } from "../lib/read-replica.js";
import type { ObjectStorage } from "../lib/storage/index.js";

/** What every route module is given (api/app.ts builds it; routes import only this type). */
export interface AppDeps {
  config: ApiConfig;
  pool: Pool;
  /**
   * The public reads only (docs/scaling.md lists them): the read replica while it is within
   * DATABASE_REPLICA_MAX_LAG_MS, else the primary. Anything that writes, or reads then writes, uses pool.
   */
  reads: PublicReads;
  /** The bus, for admin requeue (it publishes through the relay's code path). */
  js: JetStreamClient;
  /** Called after a request that may have written outbox rows (lib/bus.ts relayWaker). */
  wakeRelay: () => void;
  /** Photo bytes: the S3 bucket, or the local directory in development. */
  storage: ObjectStorage;
}
