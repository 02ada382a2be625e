import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

export interface StreamMessage {
  seq: number;
  subject: string;
  msgId: string | undefined;
  body: { id: string; type: string; occurredAt: string; data: Record<string, unknown> };
}

/** Every message currently on the stream, in order, read with an ordered consumer. */
export async function readStream(nc: NatsConnection, stream: string): Promise<StreamMessage[]> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(stream);
  const total = info.state.messages;
  if (total === 0) return [];
  const consumer = await jetstream(nc).consumers.get(stream);
  const messages: StreamMessage[] = [];
  const iter = await consumer.consume({ max_messages: 1000 });
  for await (const m of iter) {
    messages.push({ seq: m.seq, subject: m.subject, msgId: m.headers?.get("Nats-Msg-Id"), body: m.json() });
    if (m.info.pending === 0) break;
  }
  await iter.close();
  return messages;
}

/** Polls until check() returns a value other than undefined, or times out. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ""}`);
}
