import { inject } from "vitest";
import { canStartNatsServer, TestNatsServer } from "./nats-server.js";

export { canStartNatsServer, freePort, probePort, TestNatsServer, waitForPort } from "./nats-server.js";

export interface TestBus {
  url: string;
  /** Present when the bus is this file's own server. */
  server: TestNatsServer | null;
  dispose(): Promise<void>;
}

/** This file's own nats-server when the binary exists, else the shared NATS_URL. */
export async function startTestBus(): Promise<TestBus> {
  if (canStartNatsServer()) {
    const server = await TestNatsServer.start();
    return { url: server.url, server, dispose: () => server.dispose() };
  }
  const shared = inject("sharedNatsUrl");
  if (!shared) throw new Error("tests need nats-server (NATS_SERVER_BIN) or NATS_URL");
  return { url: shared, server: null, dispose: async () => {} };
}
