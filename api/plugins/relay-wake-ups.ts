import type { FastifyInstance } from "fastify";

declare module "fastify" {
  interface FastifyContextConfig {
    /** A GET that can write an event (the tag page records a scan) wakes the relay too; its HEAD records nothing. */
    wakesRelay?: boolean;
  }
}

const READS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Wakes the relay after every request that may have committed outbox rows:
 * a write that succeeded, or a GET of a route marked `wakesRelay`. It is the
 * only wake-up the API's commits get: nothing in Postgres notifies the relay
 * (lib/bus.ts relayWaker). A refusal wrote nothing, so it wakes nobody: a
 * flood of 429s costs the relay no claims. A write that woke the relay for
 * nothing costs it one empty claim, and one whose wake-up is lost waits for
 * the relay's 1 s poll.
 */
export function registerRelayWakeUps(app: FastifyInstance, wakeRelay: () => void): void {
  app.addHook("onResponse", (request, reply, done) => {
    const mayHaveWritten = !READS.has(request.method) || (request.method === "GET" && request.routeOptions.config.wakesRelay);
    if (reply.statusCode < 400 && mayHaveWritten) wakeRelay();
    done();
  });
}
