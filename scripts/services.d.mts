// Types of scripts/services.mjs for the TypeScript that imports it (tests/setup/global-setup.ts).

export declare const DEFAULT_NATS_URL: string;
export declare function defaultDatabaseUrl(database: string): string;

/** Nothing to use and nothing to start: the message is the one line to show. */
export declare class ServicesError extends Error {}

export interface BringUpOptions {
  /** Log prefix: "dev" or "test". */
  who: string;
  /** The Postgres wanted; its database name is kept whichever step provides the server. */
  databaseUrl: string;
  /** The NATS wanted, or null when none is needed. */
  natsUrl: string | null;
  /** Where a private cluster and nats-server keep their data. */
  stateDir: string;
  /** Keep that data after stop() (dev), or remove it (tests). */
  keepState: boolean;
  log: (line: string) => void;
  /** PG_BIN, NATS_SERVER_BIN, DOCKER_BIN and PATH are read from here; process.env by default. */
  env?: Record<string, string | undefined>;
}

export interface Services {
  databaseUrl: string;
  natsUrl: string | null;
  /** Which step provided them. */
  how: "reachable" | "compose" | "local";
  /** Stops what this call started (only a private cluster and nats-server are ever stopped). */
  stop(): Promise<void>;
}

export declare function bringUp(options: BringUpOptions): Promise<Services>;
