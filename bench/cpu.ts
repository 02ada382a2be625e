import { readdirSync, readFileSync } from "node:fs";
import { round } from "./stats.js";

/** CPU use of the bench's processes, from /proc (Linux). */

const TICK_MS = 10; // /proc CPU times are in clock ticks of 1/100 s on Linux

/**
 * A process's CPU time (utime + stime) and minor page faults, from /proc;
 * with `reaped`, those of its children it has waited for too (cutime,
 * cstime, cminflt), so a Postgres backend that exits mid-run keeps counting
 * through the postmaster that reaped it. Zero for a process gone or unknown.
 */
export function procUsage(pid: number | undefined, reaped = false): { cpuMs: number; faults: number } {
  if (!pid) return { cpuMs: 0, faults: 0 };
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ").map(Number);
    const ticks = f[11]! + f[12]! + (reaped ? f[13]! + f[14]! : 0);
    return { cpuMs: ticks * TICK_MS, faults: f[7]! + (reaped ? f[8]! : 0) };
  } catch {
    return { cpuMs: 0, faults: 0 };
  }
}

/** Backends of this database: their command line names it (`postgres: user db addr state`). */
export function postgresBackends(database: string): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/cmdline`, "utf8").includes(` ${database} `);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** CPU seconds per second used by each named process group while `run` runs. */
export async function withCpu<T>(groups: () => Record<string, number[]>, run: () => Promise<T>): Promise<{ result: T; cpu: Record<string, number> }> {
  const before = new Map<number, number>();
  for (const pids of Object.values(groups())) for (const pid of pids) before.set(pid, procUsage(pid).cpuMs);
  const started = performance.now();
  const result = await run();
  const seconds = (performance.now() - started) / 1000;
  const cpu: Record<string, number> = {};
  for (const [name, pids] of Object.entries(groups())) {
    const spentMs = pids.reduce((t, pid) => {
      const now = procUsage(pid).cpuMs;
      return t + now - (before.get(pid) ?? now);
    }, 0);
    cpu[name] = round(spentMs / 1000 / seconds, 2);
  }
  return { result, cpu };
}
