/**
 * The live heap of a process started with --inspect: a full garbage collection
 * through the DevTools protocol, then the heap in use. Unlike heap-used from
 * /metrics, which rises and falls with when V8 last collected, this is what
 * survives a collection, so a rise between two readings is retained memory.
 */
export async function liveHeapMiB(inspectPort: number): Promise<number> {
  const [target] = (await (await fetch(`http://127.0.0.1:${inspectPort}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>;
  if (!target) throw new Error(`no inspector target on port ${inspectPort}`);
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener("open", () => resolve(), { once: true });
    ws.addEventListener("error", () => reject(new Error(`inspector on port ${inspectPort} refused the connection`)), { once: true });
  });
  let nextId = 0;
  const call = (method: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = ++nextId;
      const onMessage = (event: MessageEvent) => {
        const reply = JSON.parse(String(event.data)) as { id?: number; result?: Record<string, unknown>; error?: { message: string } };
        if (reply.id !== id) return;
        ws.removeEventListener("message", onMessage);
        if (reply.error) reject(new Error(`${method}: ${reply.error.message}`));
        else resolve(reply.result ?? {});
      };
      ws.addEventListener("message", onMessage);
      ws.send(JSON.stringify({ id, method }));
    });
  try {
    await call("HeapProfiler.collectGarbage");
    const { usedSize } = (await call("Runtime.getHeapUsage")) as { usedSize: number };
    return Math.round((usedSize / 2 ** 20) * 10) / 10;
  } finally {
    ws.close();
  }
}
