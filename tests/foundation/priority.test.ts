import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadNotifierConfig, loadRelayConfig } from "../../lib/config.js";
import { devEnv } from "../helpers/app.js";
import { useTestStack } from "../helpers/harness.js";
import { freePort } from "../helpers/nats.js";
import { ServiceProcess } from "../helpers/processes.js";
import { startNotifier } from "../notifier/support.js";

const h = useTestStack();

/** The nice value of a process's main thread, from /proc/<pid>/stat (field 19). */
function niceOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[19 - 3]);
}

/**
 * A niced process is the last to get a core while the suite runs four files
 * at once: its start (tsx compiling it included) took over 15 s on a 2-core
 * machine during `npm test`, and 4 s alone.
 */
const NICED_START_TIMEOUT_MS = 60_000;

describe("the relay and the notifier can yield the cores to the API", () => {
  it("runs the relay at RELAY_NICE and the notifier at NOTIFIER_NICE, and leaves them at 0 by default", async () => {
    const port = await freePort();
    const niced = ServiceProcess.start("relay", devEnv(h.db.url, h.bus.url, { RELAY_HEALTH_ADDR: `127.0.0.1:${port}`, RELAY_NICE: "10", LOG_LEVEL: "info" }));
    const notifier = await startNotifier(h.db.url, h.bus.url, { NOTIFIER_NICE: "7" }, NICED_START_TIMEOUT_MS);
    try {
      await niced.waitForLog((l) => l.msg === "relay: started", NICED_START_TIMEOUT_MS);
      expect(niceOf(niced.child.pid!)).toBe(10);
      expect(niceOf(notifier.child.pid!)).toBe(7);
      expect(niced.lines.some((l) => l.msg === "process priority lowered" && l.nice === 10)).toBe(true);
    } finally {
      await niced.stop();
      await notifier.stop();
    }
    const plain = ServiceProcess.start("relay", devEnv(h.db.url, h.bus.url, { RELAY_HEALTH_ADDR: `127.0.0.1:${await freePort()}`, LOG_LEVEL: "info" }));
    try {
      await plain.waitForLog((l) => l.msg === "relay: started");
      expect(niceOf(plain.child.pid!)).toBe(0);
    } finally {
      await plain.stop();
    }
  });

  it("refuses a nice value outside 0–19 by naming the setting", () => {
    const base = { DATABASE_URL: "postgres://x/y", NATS_URL: "nats://127.0.0.1:4222", ALERT_UNSUBSCRIBE_SECRET: "a-secret-of-at-least-thirty-two-characters" };
    expect(() => loadRelayConfig({ ...base, RELAY_NICE: "20" })).toThrow(/RELAY_NICE/);
    expect(() => loadNotifierConfig({ ...base, NOTIFIER_NICE: "-1" })).toThrow(/NOTIFIER_NICE/);
    expect(loadRelayConfig(base).RELAY_NICE).toBe(0);
  });
});
