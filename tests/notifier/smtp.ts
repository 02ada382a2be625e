import { SMTPServer } from "smtp-server";
import { freePort } from "../helpers/nats.js";
import { trickleWrites } from "../helpers/trickle.js";

export interface ReceivedMail {
  to: string[];
  raw: string;
}

export interface TestSmtpServer {
  url: string;
  received: ReceivedMail[];
  /** Recipients offered so far (accepted or not), one per delivery attempt. */
  rcptAttempts: string[];
  close(): Promise<void>;
}

export class SmtpReply extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A real SMTP server (smtp-server) on a free port. onRcpt decides each
 * RCPT TO: resolve to accept, throw SmtpReply to answer with that code; it may
 * also wait, which holds the delivery attempt open. With `trickleEveryMs`,
 * everything it writes after its greeting goes out one byte that often
 * (tests/helpers/trickle.ts), on its first `trickleConnections` connections
 * (all when left out).
 */
export async function startSmtpServer(
  onRcpt: (address: string, attempt: number) => Promise<void> = async () => {},
  { trickleEveryMs, trickleConnections = Infinity }: { trickleEveryMs?: number; trickleConnections?: number } = {},
): Promise<TestSmtpServer> {
  const port = await freePort();
  const received: ReceivedMail[] = [];
  const rcptAttempts: string[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onRcptTo(address, _session, callback) {
      rcptAttempts.push(address.address);
      onRcpt(address.address, rcptAttempts.length).then(
        () => callback(),
        (err: Error) => callback(err),
      );
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString("utf8") });
        callback();
      });
    },
  });
  // Before smtp-server's own listener, so even its first answer after the greeting trickles.
  let connections = 0;
  if (trickleEveryMs !== undefined) {
    server.server.prependListener("connection", (socket) => {
      if (connections++ < trickleConnections) trickleWrites(socket, trickleEveryMs, 1);
    });
  }
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", () => resolve()));
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    rcptAttempts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
