import { connect, type Socket } from "node:net";

/** What the server wrote before it closed the connection, and when (ms since the client connected). */
export interface RawAnswer {
  /** 0 when the connection closed without an answer. */
  status: number;
  headers: Record<string, string>;
  body: string;
  /** When the whole answer had arrived (or the connection closed without one). */
  answeredAtMs: number;
}

export interface SlowClient {
  /** Writes bytes as they are, whenever the test says. */
  send(bytes: string | Buffer): void;
  /** Writes `bytes` one byte every `everyMs` until the connection closes or they run out. */
  trickle(bytes: string, everyMs: number): void;
  /** Writes `bytes` in `pieces` equal pieces, `everyMs` apart; resolves once the last is written. */
  sendInPieces(bytes: Buffer, pieces: number, everyMs: number): Promise<void>;
  answer: Promise<RawAnswer>;
  /** When the server closed the connection (ms since the client connected). */
  closed: Promise<number>;
  /** Closes the client's side, as a client going away would. */
  destroy(): void;
}

/**
 * A client on a plain TCP socket (node:net), so the test decides every byte
 * and every pause: no HTTP client library buffers, retries or times out.
 */
export async function openSlowClient(port: number): Promise<SlowClient> {
  const socket: Socket = connect({ host: "127.0.0.1", port });
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  const started = performance.now();
  const since = () => Math.round(performance.now() - started);
  let received = Buffer.alloc(0);
  let timer: NodeJS.Timeout | undefined;
  let settleAnswer: (a: RawAnswer) => void = () => undefined;
  const answer = new Promise<RawAnswer>((resolve) => (settleAnswer = resolve));
  const closed = new Promise<number>((resolve) =>
    socket.once("close", () => {
      clearInterval(timer);
      settleAnswer(parse(received, since()) ?? { status: 0, headers: {}, body: "", answeredAtMs: since() });
      resolve(since());
    }),
  );
  // A reset after the answer (the server closing with our bytes unread) is how such a connection may end.
  socket.on("error", () => undefined);
  socket.on("data", (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    const whole = parse(received, since());
    if (whole) settleAnswer(whole);
  });
  const send = (bytes: string | Buffer) => void (socket.writable && socket.write(bytes));
  return {
    send,
    async sendInPieces(bytes, pieces, everyMs) {
      const size = Math.ceil(bytes.length / pieces);
      for (let i = 0; i < pieces; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, everyMs));
        send(bytes.subarray(i * size, (i + 1) * size));
      }
    },
    trickle(bytes, everyMs) {
      let next = 0;
      timer = setInterval(() => {
        if (next >= bytes.length || !socket.writable) return clearInterval(timer);
        socket.write(bytes[next++]!);
      }, everyMs);
    },
    answer,
    closed,
    destroy: () => {
      clearInterval(timer);
      socket.destroy();
    },
  };
}

/** The answer, once its head and Content-Length body have all arrived. */
function parse(received: Buffer, atMs: number): RawAnswer | null {
  const end = received.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const [statusLine, ...lines] = received.subarray(0, end).toString("latin1").split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers["content-length"] ?? 0);
  const body = received.subarray(end + 4);
  if (body.length < length) return null;
  return { status: Number(statusLine!.split(" ")[1]), headers, body: body.subarray(0, length).toString("utf8"), answeredAtMs: atMs };
}

/** A request's head as a client writes it. */
export function requestHead(method: string, path: string, headers: Record<string, string>): string {
  const lines = Object.entries({ host: "127.0.0.1", ...headers }).map(([name, value]) => `${name}: ${value}`);
  return `${method} ${path} HTTP/1.1\r\n${lines.join("\r\n")}\r\n\r\n`;
}
