import type { FastifyInstance } from "fastify";

/**
 * Once close() starts (SIGTERM), responses close their connection and idle
 * keep-alive sockets are reaped until the server has closed, so close()
 * finishes in-flight requests without waiting out a client's keep-alive.
 */
export function registerGracefulClose(app: FastifyInstance): void {
  let closing = false;
  let reaper: NodeJS.Timeout | undefined;
  app.addHook("preClose", (done) => {
    closing = true;
    reaper = setInterval(() => app.server.closeIdleConnections(), 50);
    done();
  });
  app.addHook("onClose", (_instance, done) => {
    clearInterval(reaper);
    done();
  });
  app.addHook("onSend", async (_request, reply) => {
    if (closing) reply.header("connection", "close");
  });
}
