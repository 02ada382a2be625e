import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";

export interface TestS3Server {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Stops the server process (only the one this helper started) and removes its directory. */
  stop(): Promise<void>;
}

const s3rverBin = createRequire(import.meta.url).resolve("s3rver/bin/s3rver.js");
const STARTUP_TIMEOUT_MS = 20_000;

/**
 * A real S3-compatible server (s3rver) in a child process of its own, on a
 * free port picked by the OS, storing into a fresh temp directory, with one
 * bucket created at start-up. s3rver accepts the fixed key pair S3RVER/S3RVER.
 */
export async function startS3Server(bucket = "test-photos"): Promise<TestS3Server> {
  const directory = mkdtempSync(path.join(tmpdir(), "ass-s3rver-"));
  const child = spawn(
    process.execPath,
    [s3rverBin, "--directory", directory, "--address", "127.0.0.1", "--port", "0", "--silent", "--configure-bucket", bucket],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));

  let port: number;
  try {
    // -p 0 lets the OS choose; the CLI prints the port it got.
    port = await new Promise<number>((resolve, reject) => {
      let stdout = "";
      const timer = setTimeout(() => reject(new Error(`s3rver did not start within ${STARTUP_TIMEOUT_MS} ms: ${stderr}`)), STARTUP_TIMEOUT_MS);
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        stdout += chunk;
        const match = /listening on [^\s:]+:(\d+)/.exec(stdout);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`s3rver exited with ${code} before listening: ${stderr}`));
      });
    });
  } catch (error) {
    child.kill("SIGKILL");
    await exited;
    rmSync(directory, { recursive: true, force: true });
    throw error;
  }

  let stopped: Promise<void> | null = null;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    stop() {
      stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
        await exited;
        rmSync(directory, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}
