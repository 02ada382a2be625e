import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Env } from "../../lib/config.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export type ProcessName = "api" | "relay" | "notifier";

/**
 * One of our processes, started the way `npm run dev` starts it (its
 * main.ts through tsx) or from compiled code, with its JSON log lines
 * collected for assertions.
 */
export class ServiceProcess {
  readonly lines: Record<string, unknown>[] = [];
  readonly exited: Promise<number | null>;

  private constructor(
    readonly name: ProcessName,
    readonly child: ChildProcess,
  ) {
    // A buffer per stream: a stderr chunk arriving in the middle of a stdout line must not split it.
    const collector = () => {
      let output = "";
      return (chunk: Buffer) => {
        output += chunk.toString();
        let newline: number;
        while ((newline = output.indexOf("\n")) >= 0) {
          const line = output.slice(0, newline);
          output = output.slice(newline + 1);
          try {
            this.lines.push(JSON.parse(line));
          } catch {
            this.lines.push({ msg: line });
          }
        }
      };
    };
    child.stdout!.on("data", collector());
    child.stderr!.on("data", collector());
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  }

  /** With `compiledIn`, the compiled main.js under that directory (what `npm run build` ships) instead. */
  static start(name: ProcessName, env: Env, { compiledIn }: { compiledIn?: string } = {}): ServiceProcess {
    const args = compiledIn ? [path.join(compiledIn, name, "main.js")] : ["--import", "tsx", path.join(root, name, "main.ts")];
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: { PATH: process.env.PATH, LOG_LEVEL: "info", ...env } as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new ServiceProcess(name, child);
  }

  /** Resolves with the first log line matching, or rejects on exit or timeout. */
  async waitForLog(match: (line: Record<string, unknown>) => boolean, timeoutMs = 15_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    let exitCode: number | null | undefined;
    void this.exited.then((code) => (exitCode = code));
    while (Date.now() < deadline) {
      const found = this.lines.find(match);
      if (found) return found;
      if (exitCode !== undefined) throw new Error(`${this.name} exited with ${exitCode}: ${JSON.stringify(this.lines.slice(-5))}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`${this.name}: no matching log line within ${timeoutMs} ms: ${JSON.stringify(this.lines.slice(-5))}`);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null) this.child.kill(signal);
  }

  async stop(): Promise<number | null> {
    this.signal("SIGTERM");
    return this.exited;
  }
}
