import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

const NATS_SERVER_BIN = process.env.NATS_SERVER_BIN ?? "/usr/sbin/nats-server";

export function canStartNatsServer(): boolean {
  return existsSync(NATS_SERVER_BIN);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** One TCP connect to 127.0.0.1:port: true if something accepts it. */
export function probePort(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.connect(port, "127.0.0.1");
  });
}

export async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probePort(port)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`port ${port} did not open within ${timeoutMs} ms`);
}

/**
 * A nats-server of the test's own, with JetStream on a temp dir, so stream
 * state never leaks between files and a fault test can stop its bus.
 * stop() and start() keep the port and the store, like a real restart.
 */
export class TestNatsServer {
  private child: ChildProcess | null = null;
  private readonly storeDir = mkdtempSync(path.join(tmpdir(), "ass-nats-"));

  private constructor(readonly port: number) {}

  /** The server's process id while it runs (the bench kills it if it crashes). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  static async start(): Promise<TestNatsServer> {
    const server = new TestNatsServer(await freePort());
    await server.start();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.child) return;
    this.child = spawn(NATS_SERVER_BIN, ["-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", this.storeDir], {
      stdio: "ignore",
    });
    await waitForPort(this.port);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}
