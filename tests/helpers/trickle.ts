import type http from "node:http";
import type { Socket } from "node:net";

/**
 * A peer that answers one byte every few seconds: the attack a total deadline
 * exists for (contract part 4, "Nothing stalls the service"). An idle timeout
 * never fires on it, since a byte always arrives before the connection has
 * been quiet for long.
 */

/** How far apart the bytes go out: the contract's attacker sends one every 3 s. */
export const TRICKLE_EVERY_MS = 3_000;

/** Writes `bytes` one byte every `everyMs`, the first at once, until they run out or the socket closes. */
function drip(socket: Socket, bytes: Buffer, everyMs: number, write: (byte: Buffer) => void): void {
  let at = 0;
  const next = () => {
    if (socket.destroyed || at >= bytes.length) return clearInterval(timer);
    write(bytes.subarray(at, ++at));
  };
  const timer = setInterval(next, everyMs);
  socket.once("close", () => clearInterval(timer));
  next();
}

/**
 * Answers with `status` and its headers at once, then a body of a byte every
 * `everyMs` that never ends (chunked): the answer's head is there, and a
 * caller that waits for the body waits for ever.
 */
export function trickleBody(response: http.ServerResponse, status = 200, everyMs = TRICKLE_EVERY_MS): void {
  response.writeHead(status, { "content-type": "application/octet-stream" });
  response.flushHeaders();
  drip(response.socket!, Buffer.alloc(100_000, "x"), everyMs, (byte) => response.write(byte));
}

/**
 * Makes every write to `socket` after its first `passWrites` go out a byte
 * every `everyMs`: a server (smtp-server) that writes whole answers then
 * answers as slowly as the attacker likes.
 */
export function trickleWrites(socket: Socket, everyMs = TRICKLE_EVERY_MS, passWrites = 1): void {
  const original = socket.write.bind(socket) as (chunk: string | Uint8Array, ...rest: unknown[]) => boolean;
  let passed = 0;
  const queue: Buffer[] = [];
  const timer = setInterval(() => {
    if (socket.destroyed) return clearInterval(timer);
    const next = queue[0];
    if (!next) return;
    original(next.subarray(0, 1));
    if (next.length > 1) queue[0] = next.subarray(1);
    else queue.shift();
  }, everyMs);
  socket.once("close", () => clearInterval(timer));
  socket.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    if (passed++ < passWrites) return original(chunk, ...rest);
    queue.push(Buffer.from(chunk));
    return true;
  }) as Socket["write"];
}
